package rootcacertpublisher

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/cache"
)

// The ConfigMap the publisher writes, as Kubernetes names and describes it.
const (
	ConfigMapName         = "kube-root-ca.crt"
	DataKey               = "ca.crt"
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// configMapWriter writes ConfigMaps.
type configMapWriter interface {
	Create(ctx context.Context, cm *corev1.ConfigMap) error
	Update(ctx context.Context, cm *corev1.ConfigMap) error
}

// syncer holds what the reconcile logic reads and writes; it keeps no
// per-sync state and is safe for concurrent use by the workers.
type syncer struct {
	configMaps *cache.Lister[*corev1.ConfigMap]
	writer     configMapWriter
	rootCA     string
}

// sync makes the ConfigMap of the namespace named key hold the bundle.
func (s *syncer) sync(ctx context.Context, key string) error {
	want := map[string]string{DataKey: s.rootCA}
	cm, err := s.configMaps.Namespace(key).Get(ConfigMapName)
	switch {
	case apierrors.IsNotFound(err):
		err := s.writer.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: key, Name: ConfigMapName,
				Annotations: map[string]string{DescriptionAnnotation: Description},
			},
			Data: want,
		})
		if err == nil || apierrors.IsNotFound(err) || apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		return fmt.Errorf("create configmap %s/%s: %w", key, ConfigMapName, err)
	case err != nil:
		return err
	}
	if equality.Semantic.DeepEqual(cm.Data, want) && cm.Annotations[DescriptionAnnotation] != "" {
		return nil
	}
	out := cm.DeepCopy()
	out.Data = want
	if out.Annotations == nil {
		out.Annotations = map[string]string{}
	}
	out.Annotations[DescriptionAnnotation] = Description
	if err := s.writer.Update(ctx, out); err != nil {
		return fmt.Errorf("update configmap %s/%s: %w", key, ConfigMapName, err)
	}
	return nil
}
