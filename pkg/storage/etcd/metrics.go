package etcd

import (
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Gatherer gathers the embedded member's own metrics (etcd_disk_*,
// etcd_mvcc_*, etcd_server_*, etcd_network_*, ... as etcd names them), to
// be served beside the process's other metrics, for example with
// prometheus.Gatherers{registry, e.Gatherer()}.
//
// etcd registers its collectors on prometheus.DefaultRegisterer when its
// packages are loaded, and that registry also holds the Go runtime and
// process collectors; the Gatherer passes on only the families whose name
// starts with "etcd_", so that serving it next to a registry that has its
// own Go and process collectors names no metric twice. The figures are
// per process: several members embedded in one process share them. It is
// safe for concurrent use.
func (e *Embedded) Gatherer() prometheus.Gatherer { return etcdGatherer{} }

// etcdGatherer is the "etcd_" part of prometheus.DefaultGatherer.
type etcdGatherer struct{}

func (etcdGatherer) Gather() ([]*dto.MetricFamily, error) {
	all, err := prometheus.DefaultGatherer.Gather()
	kept := all[:0]
	for _, mf := range all {
		if strings.HasPrefix(mf.GetName(), "etcd_") {
			kept = append(kept, mf)
		}
	}
	return kept, err
}
