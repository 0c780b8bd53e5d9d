package testenv

import (
	"os"

	"github.com/kplane/kplane/internal/procstatus"
)

// PeakRSS returns the test process's peak resident set size in bytes
// (VmHWM of /proc/self/status), and false where the system does not tell
// it. Every Env serves from the test's own process, so a benchmark
// reports it as what the API server and the controllers it ran needed
// together at their peak.
func PeakRSS() (uint64, bool) {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, false
	}
	n, err := procstatus.Bytes(data, "VmHWM")
	return uint64(n), err == nil
}
