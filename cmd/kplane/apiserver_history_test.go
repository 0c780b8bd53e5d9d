package main

import (
	"strings"
	"testing"
	"time"

	"github.com/kplane/kplane/pkg/storage/etcd"
	"github.com/kplane/kplane/pkg/storage/memory"
)

func TestHistoryFlags(t *testing.T) {
	cmd := newAPIServerCommand()
	if err := cmd.ParseFlags([]string{"--etcd-compaction-interval=90s", "--memory-history-revisions=50", "--memory-history-duration=1m"}); err != nil {
		t.Fatal(err)
	}
	var o historyOptions
	f := cmd.Flags()
	o.compactionInterval, _ = f.GetDuration("etcd-compaction-interval")
	o.memoryRevisions, _ = f.GetInt("memory-history-revisions")
	o.memoryDuration, _ = f.GetDuration("memory-history-duration")
	if err := o.validate(); err != nil {
		t.Fatal(err)
	}
	var ec etcd.Config
	o.etcd(&ec)
	var mc memory.Config
	o.memory(&mc)
	if ec.CompactionInterval != 90*time.Second || mc.HistoryRevisions != 50 || mc.HistoryDuration != time.Minute {
		t.Errorf("etcd %v, memory %d %v", ec.CompactionInterval, mc.HistoryRevisions, mc.HistoryDuration)
	}
	// 0 is kube-apiserver's "never compact": the backend's negative value.
	o.compactionInterval = 0
	o.etcd(&ec)
	if ec.CompactionInterval >= 0 {
		t.Errorf("--etcd-compaction-interval=0 gave the backend %v, want never", ec.CompactionInterval)
	}
}

func TestHistoryFlagsInvalid(t *testing.T) {
	for _, tc := range []struct {
		o    historyOptions
		want string
	}{
		{historyOptions{compactionInterval: -time.Second, memoryRevisions: 1, memoryDuration: time.Second}, "--etcd-compaction-interval"},
		{historyOptions{memoryRevisions: 0, memoryDuration: time.Second}, "--memory-history-revisions"},
		{historyOptions{memoryRevisions: 1}, "--memory-history-duration"},
	} {
		err := tc.o.validate()
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.o, err, tc.want)
		}
	}
}
