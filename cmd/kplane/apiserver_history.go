package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/kplane/kplane/pkg/storage/etcd"
	"github.com/kplane/kplane/pkg/storage/memory"
)

// historyOptions sets how much past the storage keeps: the watch window.
// A watch, an exact list or a continue token from a resourceVersion older
// than it is answered 410 Gone (reason Expired), and clients relist, as on
// kube-apiserver.
type historyOptions struct {
	compactionInterval time.Duration
	memoryRevisions    int
	memoryDuration     time.Duration
}

func (o *historyOptions) addFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.DurationVar(&o.compactionInterval, "etcd-compaction-interval", 5*time.Minute,
		"with --storage=etcd, how often etcd's history is compacted: a resourceVersion stays readable by watches and exact lists for one to two intervals, then gets 410 Gone; 0 never compacts (etcd's history then grows without bound)")
	f.IntVar(&o.memoryRevisions, "memory-history-revisions", memory.DefaultHistoryRevisions,
		"with --storage=memory, how many of the newest revisions stay readable by watches and exact lists")
	f.DurationVar(&o.memoryDuration, "memory-history-duration", memory.DefaultHistoryDuration,
		"with --storage=memory, how long a revision stays readable by watches and exact lists at most")
}

func (o *historyOptions) validate() error {
	switch {
	case o.compactionInterval < 0:
		return fmt.Errorf("--etcd-compaction-interval must not be negative, got %v", o.compactionInterval)
	case o.memoryRevisions < 1:
		return fmt.Errorf("--memory-history-revisions must be at least 1, got %d", o.memoryRevisions)
	case o.memoryDuration <= 0:
		return fmt.Errorf("--memory-history-duration must be positive, got %v", o.memoryDuration)
	}
	return nil
}

// etcd sets the compaction of an etcd backend's config.
func (o *historyOptions) etcd(cfg *etcd.Config) {
	cfg.CompactionInterval = o.compactionInterval
	if o.compactionInterval == 0 {
		cfg.CompactionInterval = -1 // never, as kube-apiserver's 0
	}
}

// memory sets the history of a memory backend's config.
func (o *historyOptions) memory(cfg *memory.Config) {
	cfg.HistoryRevisions, cfg.HistoryDuration = o.memoryRevisions, o.memoryDuration
}
