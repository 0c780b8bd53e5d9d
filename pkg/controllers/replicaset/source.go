package replicaset

import (
	"context"
	"errors"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/cache"
)

// Source makes the controller manage objects of another kind that have
// the ReplicaSet's shape, ReplicationControllers, as kube's replication
// manager does: it sees them through an informer that presents them as
// ReplicaSets and writes their status through StatusWriter, which converts
// back. Everything else (expectations, adoption, the order of deletions,
// status) is the ReplicaSet controller's.
type Source struct {
	// Name is the controller's name in logs, metrics and events. Required.
	Name string
	// QueueName is the name Config.NewQueue is given. Required.
	QueueName string
	// Kind is the kind written into the controller references of the pods
	// created, and the kind of the references resolved. Required.
	Kind schema.GroupVersionKind
	// Informer holds the managed objects as ReplicaSets. Required. The
	// controller does not start it.
	Informer *cache.SharedIndexInformer[*appsv1.ReplicaSet]
	// Status reads the managed objects past the cache and writes their
	// status. Required.
	Status StatusWriter
}

// StatusWriter reads ReplicaSets past the cache and writes their status.
// Errors are *apierrors.StatusError values as the API server returns
// them. Implementations must be safe for concurrent use.
type StatusWriter interface {
	GetReplicaSet(ctx context.Context, namespace, name string) (*appsv1.ReplicaSet, error)
	UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error)
}

func (s *Source) validate() error {
	switch {
	case s.Name == "" || s.QueueName == "":
		return errors.New("replicaset: source needs a name and a queue name")
	case s.Kind.Empty():
		return errors.New("replicaset: source needs a kind")
	case s.Informer == nil || s.Status == nil:
		return errors.New("replicaset: source needs an informer and a status writer")
	}
	return nil
}

// ownerKind is the kind of the objects s manages.
func (s *syncer) ownerKind() schema.GroupVersionKind {
	if s.kind.Empty() {
		return replicaSetKind
	}
	return s.kind
}
