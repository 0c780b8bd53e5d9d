// Package etcd stores kplane's objects in etcd, and runs etcd inside the
// kplane process when no external cluster is given.
//
// Backend implements storage.Backend over go.etcd.io/etcd/client/v3:
//
//   - The object at key "/pods/default/nginx" lives at etcd key
//     Prefix+"/pods/default/nginx" (Prefix defaults to "/registry"), encoded by
//     the resource's Codec without its resourceVersion.
//   - An object's resourceVersion is the etcd revision that last modified its
//     key, so every write gets a new, strictly increasing revision shared by
//     all resources, and several Backends (in several API servers) on one
//     cluster agree on it.
//   - Create, GuaranteedUpdate and Delete are etcd transactions that compare
//     the key's create or mod revision with what was read, so concurrent
//     writers never lose an update; GuaranteedUpdate and Delete retry from
//     the fresh state a losing transaction returns.
//   - GetList reads one etcd snapshot: a continue token carries the revision
//     of the first page, and later pages read at that revision, so paging
//     never skips or repeats an object. A revision etcd has compacted
//     answers storage.ErrCodeExpired (410 Gone).
//   - Watch is an etcd watch with previous values; a change that makes an
//     object stop matching the watch's predicate arrives as Deleted, one that
//     makes it start matching as Added. Progress notifications from etcd
//     become Bookmark events when asked for. Each watch buffers at most
//     Config.WatchBufferSize events; a reader that leaves that buffer full
//     for Config.SlowWatcherTimeout gets an Expired error event and the watch
//     closes. Each Watch costs one etcd watch: put pkg/storage/cacher in
//     front to serve many watchers from one.
//   - Run compacts etcd's history every Config.CompactionInterval, keeping
//     about one interval of past revisions, and coordinates with every other
//     kplane on the cluster so that the cluster is compacted once per interval.
//     Compact compacts on demand; RequestWatchProgress asks every watch for a
//     Bookmark now (the watch cache uses it for consistent reads).
//   - Config.TLS (see TLSFiles.ClientConfig) secures the connection to an
//     external cluster.
//
// StartEmbedded runs an etcd member in-process on loopback ports, with its
// data in a directory that survives restarts (a process killed with SIGKILL
// loses no acknowledged write), and hands back a ready client. It can serve
// https with client certificates (EmbeddedConfig.ServerTLS) and join its
// members into a cluster (EmbeddedConfig.InitialCluster).
package etcd
