//go:build linux

package main

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/kplane/kplane/internal/procstatus"
)

// readProcStats reads the figures of process pid from /proc.
func readProcStats(pid int) (*procStats, error) {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return nil, err
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, err
	}
	return parseProcStats(status, stat, clockTicks())
}

// parseProcStats reads VmHWM and VmRSS from /proc/<pid>/status and utime
// and stime (fields 14 and 15) from /proc/<pid>/stat, in ticks of
// 1/ticks s.
func parseProcStats(status, stat []byte, ticks int64) (*procStats, error) {
	var ps procStats
	var err error
	if ps.PeakRSSBytes, err = procstatus.Bytes(status, "VmHWM"); err != nil {
		return nil, err
	}
	if ps.RSSBytes, err = procstatus.Bytes(status, "VmRSS"); err != nil {
		return nil, err
	}
	// The command name (field 2) is in parentheses and may hold spaces or
	// parentheses: the fields that follow start after the last ')'.
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return nil, fmt.Errorf("/proc stat: no command name")
	}
	fields := strings.Fields(string(stat[i+1:]))
	// fields[0] is field 3 (state), so utime (14) and stime (15) are 11 and 12.
	if len(fields) < 13 {
		return nil, fmt.Errorf("/proc stat: %d fields", len(fields)+2)
	}
	var cpu int64
	for _, f := range fields[11:13] {
		n, err := strconv.ParseInt(f, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("/proc stat: %w", err)
		}
		cpu += n
	}
	ps.CPUSeconds = float64(cpu) / float64(ticks)
	return &ps, nil
}

// clockTicks is the kernel's USER_HZ (sysconf(_SC_CLK_TCK)), which the
// kernel passes every process in its auxiliary vector as AT_CLKTCK.
func clockTicks() int64 {
	const atClkTck = 17
	auxv, err := os.ReadFile("/proc/self/auxv")
	if err == nil {
		word := 8
		if strconv.IntSize == 32 {
			word = 4
		}
		for i := 0; i+2*word <= len(auxv); i += 2 * word {
			var key, val uint64
			if word == 8 {
				key, val = binary.NativeEndian.Uint64(auxv[i:]), binary.NativeEndian.Uint64(auxv[i+8:])
			} else {
				key, val = uint64(binary.NativeEndian.Uint32(auxv[i:])), uint64(binary.NativeEndian.Uint32(auxv[i+4:]))
			}
			if key == atClkTck && val > 0 {
				return int64(val)
			}
		}
	}
	// USER_HZ is 100 on every architecture Go supports on Linux.
	return 100
}

// benchChildAttr makes the kernel stop the child if the bench dies
// without cleaning up.
func benchChildAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
