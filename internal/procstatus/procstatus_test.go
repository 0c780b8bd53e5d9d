package procstatus

import "testing"

func TestBytes(t *testing.T) {
	status := []byte("Name:\tkplane\nVmPeak:\t 900000 kB\nVmHWM:\t  409600 kB\nVmRSS:\t  204800 kB\nThreads:\t12\nVmBad:\tx kB\n")
	for key, want := range map[string]int64{"VmHWM": 400 << 20, "VmRSS": 200 << 20} {
		if got, err := Bytes(status, key); err != nil || got != want {
			t.Errorf("%s = %d, %v; want %d", key, got, err, want)
		}
	}
	for _, key := range []string{"VmSwap", "VmBad", "Vm"} {
		if _, err := Bytes(status, key); err == nil {
			t.Errorf("%s: no error", key)
		}
	}
}
