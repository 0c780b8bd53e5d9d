// Package cronjob is the CronJob controller: it starts a CronJob's Jobs on
// its schedule and keeps its status and history, with the semantics of
// the Kubernetes controller of the same name (its second version).
//
// Guarantees:
//   - Schedules are parsed as the API server validates them (the standard
//     five fields, @yearly, @annually, @monthly, @weekly, @daily,
//     @midnight, @hourly and @every <duration>) and evaluated in
//     spec.timeZone (the local zone of the injected clock without one); an
//     unknown zone gets an UnknownTimeZone warning and starts nothing.
//   - At most one Job per start time: the Job for the start time t is
//     named <cronjob>-<t in minutes since the epoch> and carries the
//     batch.kubernetes.io/cronjob-scheduled-timestamp annotation, so a
//     controller restarted between creating it and recording it finds it
//     (AlreadyExists) and tracks it instead of starting another.
//   - Missed start times: only the most recent unmet one runs; more than
//     100 missed get a TooManyMissedTimes warning; start times earlier than
//     startingDeadlineSeconds before now are not considered.
//   - concurrencyPolicy: Allow starts the Job regardless, Forbid skips the
//     start time while a Job is active (JobAlreadyActive), Replace deletes
//     the active Jobs first. spec.suspend starts nothing.
//   - Status: active lists the unfinished Jobs (finished ones leave it with
//     a SawCompletedJob event; vanished ones once the server confirms),
//     lastScheduleTime the latest start time acted on, lastSuccessfulTime
//     the latest completion of a Complete Job. An unfinished Job it owns
//     but the cached CronJob does not list (the Job cache ahead of the
//     CronJob cache after a start) makes it read the CronJob from the
//     server before acting, so that its own Job is neither reported
//     UnexpectedJob nor started again.
//   - History: finished Jobs beyond successfulJobsHistoryLimit and
//     failedJobsHistoryLimit are deleted, oldest start first, with
//     background propagation.
//   - After each sync the CronJob is looked at again just after its next
//     start time, on the injected clock.
//
// The controller reads CronJobs and Jobs from a shared informers.Factory
// and does not start it.
package cronjob
