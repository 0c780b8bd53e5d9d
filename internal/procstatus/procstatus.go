// Package procstatus reads the memory figures of Linux's /proc/<pid>/status.
package procstatus

import (
	"fmt"
	"strconv"
	"strings"
)

// Bytes returns, in bytes, the value of the "key:  N kB" line of status,
// the content of a /proc/<pid>/status file (key such as "VmHWM", the peak
// resident set, or "VmRSS").
func Bytes(status []byte, key string) (int64, error) {
	for line := range strings.Lines(string(status)) {
		k, v, ok := strings.Cut(line, ":")
		if !ok || k != key {
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
		if err != nil {
			return 0, fmt.Errorf("/proc status %s: %w", key, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("/proc status lacks %s", key)
}
