package cronjob

import (
	"fmt"
	"time"

	"github.com/robfig/cron/v3"
	batchv1 "k8s.io/api/batch/v1"
)

// maxMissed is how many missed start times a CronJob may have before the
// controller warns about them.
const maxMissed = 100

// parseSchedule parses spec.schedule as the API server validates it:
// standard five fields or a descriptor (@yearly, @annually, @monthly,
// @weekly, @daily, @midnight, @hourly, @every <duration>).
func parseSchedule(s string) (cron.Schedule, error) {
	sched, err := cron.ParseStandard(s)
	if err != nil {
		return nil, fmt.Errorf("unparseable schedule %q: %w", s, err)
	}
	return sched, nil
}

// mostRecentScheduleTime returns the latest start time of sched at or
// before now that the CronJob has not met, if any, and how many start
// times were missed. Start times earlier than startingDeadlineSeconds
// before now are not considered.
func mostRecentScheduleTime(cj *batchv1.CronJob, now time.Time, sched cron.Schedule) (*time.Time, int) {
	earliest := cj.CreationTimestamp.Time
	if cj.Status.LastScheduleTime != nil {
		earliest = cj.Status.LastScheduleTime.Time
	}
	if sds := cj.Spec.StartingDeadlineSeconds; sds != nil {
		if deadline := now.Add(-time.Duration(*sds) * time.Second); deadline.After(earliest) {
			earliest = deadline
		}
	}
	earliest = earliest.In(now.Location())
	t1 := sched.Next(earliest)
	if t1.IsZero() || t1.After(now) {
		return nil, 0
	}
	t2 := sched.Next(t1)
	if t2.IsZero() || t2.After(now) {
		return &t1, 1
	}
	// Many start times passed. Walking them all costs one step each; past
	// a thousand, start two intervals (of the first two) before now,
	// falling back to the full walk should the schedule be so uneven that
	// no start time lies there.
	interval := t2.Sub(t1)
	missed := int(now.Sub(t1)/interval) + 1
	walk := func(from time.Time) (time.Time, bool) {
		var latest time.Time
		for t := sched.Next(from.Add(-time.Second)); !t.IsZero() && !t.After(now); t = sched.Next(t) {
			latest = t
		}
		return latest, !latest.IsZero()
	}
	if missed > 1000 {
		if latest, ok := walk(now.Add(-2 * interval)); ok && !latest.Before(t1) {
			return &latest, missed
		}
	}
	latest, _ := walk(t1)
	return &latest, missed
}

// nextScheduleTime is sched's first start time after now.
func nextScheduleTime(now time.Time, sched cron.Schedule) time.Time {
	return sched.Next(now)
}
