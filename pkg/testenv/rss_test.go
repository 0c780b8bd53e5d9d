package testenv

import (
	"runtime"
	"testing"
)

func TestPeakRSS(t *testing.T) {
	rss, ok := PeakRSS()
	if runtime.GOOS != "linux" {
		t.Logf("PeakRSS on %s: %d, %v", runtime.GOOS, rss, ok)
		return
	}
	// A Go test binary holds more than a megabyte resident, and far less
	// than a terabyte: either bound failing means the parse is wrong.
	if !ok || rss < 1<<20 || rss > 1<<40 {
		t.Fatalf("PeakRSS() = %d, %v; want a few MB, true", rss, ok)
	}
}
