package etcd

import (
	"context"
	"errors"
	"fmt"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// compactRevKey coordinates compaction among every API server sharing an
// etcd cluster: its version counts compactions, so that in each interval
// only the server that bumps it compacts. It lives outside any prefix
// because compaction is global to the cluster.
const compactRevKey = "compact_rev_key"

// Run compacts etcd's history every CompactionInterval until ctx ends,
// keeping the revisions written during the last interval: each tick
// compacts up to the revision seen at the previous tick. Several Backends
// on one cluster compact it once per interval between them. Run returns
// nil when ctx ends; with compaction disabled it just waits for ctx.
func (b *Backend) Run(ctx context.Context) error {
	if b.cfg.CompactionInterval < 0 {
		<-ctx.Done()
		return nil
	}
	ticker := b.cfg.Clock.NewTicker(b.cfg.CompactionInterval)
	defer ticker.Stop()
	var version, rev int64
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-b.ctx.Done():
			return nil
		case <-ticker.C():
		}
		v, r, err := b.compactStep(ctx, version, rev)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			b.logger.Warn("etcd compaction failed", "error", err)
			continue
		}
		version, rev = v, r
	}
}

// compactStep claims this interval's compaction by bumping compactRevKey
// from version. Whoever wins compacts to rev, the revision seen one
// interval ago. It returns the key's version and the current revision for
// the next step.
func (b *Backend) compactStep(ctx context.Context, version, rev int64) (int64, int64, error) {
	resp, err := b.client.Txn(ctx).
		If(clientv3.Compare(clientv3.Version(compactRevKey), "=", version)).
		Then(clientv3.OpPut(compactRevKey, "")).
		Else(clientv3.OpGet(compactRevKey)).
		Commit()
	if err != nil {
		return version, rev, fmt.Errorf("claim compaction: %w", err)
	}
	current := resp.Header.Revision
	if !resp.Succeeded {
		// Another server compacted in this interval; follow its count.
		kvs := resp.Responses[0].GetResponseRange().Kvs
		if len(kvs) == 0 {
			return 0, current, nil
		}
		return kvs[0].Version, current, nil
	}
	if rev > 0 {
		if _, err := b.client.Compact(ctx, rev); err != nil && !errors.Is(err, rpctypes.ErrCompacted) {
			return version + 1, current, fmt.Errorf("compact to revision %d: %w", rev, err)
		}
		b.logger.Debug("etcd compacted", "revision", rev)
	}
	return version + 1, current, nil
}
