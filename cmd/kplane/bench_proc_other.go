//go:build !linux

package main

import (
	"errors"
	"syscall"
)

// readProcStats needs Linux's /proc.
func readProcStats(int) (*procStats, error) {
	return nil, errors.New("process figures need Linux /proc")
}

func benchChildAttr() *syscall.SysProcAttr { return nil }
