//go:build linux

package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseProcStats(t *testing.T) {
	status := []byte("Name:\tkplane\nVmPeak:\t 900000 kB\nVmHWM:\t  409600 kB\nVmRSS:\t  204800 kB\nThreads:\t12\n")
	// The command name may hold spaces and parentheses.
	stat := []byte("4242 (kp (x) y) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 12 0 100 0 0\n")
	got, err := parseProcStats(status, stat, 100)
	if err != nil {
		t.Fatal(err)
	}
	want := &procStats{PeakRSSBytes: 400 << 20, RSSBytes: 200 << 20, CPUSeconds: 4}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if _, err := parseProcStats([]byte("VmRSS: 1 kB\n"), stat, 100); err == nil {
		t.Error("no error without VmHWM")
	}
	if got := clockTicks(); got <= 0 {
		t.Errorf("clock ticks %d", got)
	}
}
