package serviceaccount

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kplane/kplane/pkg/cache"
)

// creator creates ServiceAccounts.
type creator interface {
	Create(ctx context.Context, sa *corev1.ServiceAccount) error
}

// syncer holds what the reconcile logic reads and writes; it keeps no
// per-sync state and is safe for concurrent use by the workers.
type syncer struct {
	namespaces *cache.Lister[*corev1.Namespace]
	accounts   *cache.Lister[*corev1.ServiceAccount]
	writer     creator
	// names are the ServiceAccounts every namespace gets.
	names []string
}

// sync creates the missing ServiceAccounts of the namespace named key, if
// it is active.
func (s *syncer) sync(ctx context.Context, key string) error {
	ns, err := s.namespaces.Get(key)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if ns.Status.Phase != corev1.NamespaceActive {
		return nil
	}
	var errs []error
	for _, name := range s.names {
		switch _, err := s.accounts.Namespace(key).Get(name); {
		case err == nil:
			continue
		case !apierrors.IsNotFound(err):
			errs = append(errs, err)
			continue
		}
		sa := &corev1.ServiceAccount{}
		sa.Namespace, sa.Name = key, name
		err := s.writer.Create(ctx, sa)
		switch {
		case err == nil, apierrors.IsAlreadyExists(err):
		case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
			return nil
		default:
			errs = append(errs, fmt.Errorf("create serviceaccount %s/%s: %w", key, name, err))
		}
	}
	return errors.Join(errs...)
}
