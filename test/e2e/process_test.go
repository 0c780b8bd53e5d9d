package e2e

import (
	"bufio"
	"io"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// process is a kplane binary started by a test. Its stdout lines are logged
// and watched for readiness, its stderr goes to the test log, and Cleanup
// kills it unless the test stopped it.
type process struct {
	name   string
	cmd    *exec.Cmd
	exited chan error
}

// startProcess runs the kplane binary with args and hands each line it
// prints on stdout to ready, on the reading goroutine, until ready reports
// that the process is ready; values ready records are safe to read once
// startProcess has returned. It fails the test if the process exits first
// or startupWait passes.
func startProcess(t *testing.T, name string, args []string, ready func(line string) bool) *process {
	t.Helper()
	cmd := exec.Command(kplaneBin, args...)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = &testWriter{t: t}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &process{name: name, cmd: cmd, exited: make(chan error, 1)}
	readyc := make(chan struct{})
	go func() {
		sc := bufio.NewScanner(stdout)
		isReady := false
		for sc.Scan() {
			t.Log("stdout: " + sc.Text())
			if !isReady && ready(sc.Text()) {
				isReady = true
				close(readyc)
			}
		}
		_, _ = io.Copy(io.Discard, stdout)
		p.exited <- cmd.Wait()
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		select {
		case <-p.exited:
		case <-time.After(startupWait):
		}
	})
	select {
	case <-readyc:
	case err := <-p.exited:
		t.Fatalf("%s exited before it was ready: %v", name, err)
	case <-time.After(startupWait):
		t.Fatalf("%s did not say it was ready", name)
	}
	return p
}

// stop sends SIGTERM and checks for a clean exit.
func (p *process) stop(t *testing.T) {
	t.Helper()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("%s exited with %v after SIGTERM", p.name, err)
		}
		p.exited <- nil // for Cleanup
	case <-time.After(startupWait):
		t.Fatalf("%s did not stop on SIGTERM", p.name)
	}
}
