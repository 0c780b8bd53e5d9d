package apiserver

import (
	"context"
	"fmt"

	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kplane/kplane/pkg/registry"
)

// ensureSystemPriorityClasses creates the priority classes every cluster
// has (system-cluster-critical and system-node-critical), as kube-apiserver
// does when it starts. One that exists already is left as it is.
func (s *Server) ensureSystemPriorityClasses(ctx context.Context) error {
	res := s.lookup(schedulingv1.SchemeGroupVersion.WithResource("priorityclasses"))
	if res == nil {
		return nil
	}
	for _, pc := range registry.SystemPriorityClasses() {
		if _, err := s.createObject(ctx, res, "", pc, false); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("apiserver: create priority class %s: %w", pc.Name, err)
		}
	}
	return nil
}
