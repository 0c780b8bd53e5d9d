// Package record records Kubernetes Events (core/v1) about objects, the
// way controllers tell users what they did and why.
//
// A [Recorder] is fed by any number of goroutines through Event and Eventf,
// which never block: events go into a bounded buffer, and when it is full
// the event is dropped and counted in Stats (a controller must never stall
// because the API server is slow to take its events). One goroutine, the
// caller of Run, drains the buffer and:
//
//   - aggregates repeats: an event with the same source, involved object,
//     type, reason and message as one already written updates that Event's
//     count and lastTimestamp by a patch instead of creating a new one;
//   - rate-limits per involved object with a token bucket (by default a
//     burst of 25, then one event every 5 minutes, as Kubernetes does), so a
//     hot loop cannot flood the API; repeats that are held back still count
//     towards the count written by the next patch that gets through;
//   - writes through a [Sink], retrying a failed write a few times.
//
// Stats reports how many events were written, dropped because the buffer
// was full, held back by the rate limit, or lost to write failures.
package record
