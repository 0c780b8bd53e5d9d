package configmapmirror

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controller/record"
)

const (
	// EnabledAnnotation on a ConfigMap, set to "true", asks for a mirror.
	EnabledAnnotation = "configmap-mirror.kplane.io/enabled"
	// SourceLabel on a Secret names the ConfigMap it mirrors; an orphaned
	// Secret with it is adopted.
	SourceLabel = "configmap-mirror.kplane.io/source"
)

// Event reasons.
const (
	ReasonCreated         = "MirrorCreated"
	ReasonUpdated         = "MirrorUpdated"
	ReasonReleased        = "MirrorReleased"
	ReasonResourceExists  = "ErrResourceExists"
	messageResourceExists = "Secret %q already exists and is not managed by this ConfigMap"
)

var configMapKind = corev1.SchemeGroupVersion.WithKind("ConfigMap")

// secretWriter is the part of the API the sync writes through.
type secretWriter interface {
	Create(ctx context.Context, secret *corev1.Secret) (*corev1.Secret, error)
	Update(ctx context.Context, secret *corev1.Secret) (*corev1.Secret, error)
	// Delete deletes namespace/name only if its uid is still uid.
	Delete(ctx context.Context, namespace, name string, uid types.UID) error
	controller.Patcher
}

// eventRecorder is the part of record.Recorder the sync uses.
type eventRecorder interface {
	Event(obj record.Object, eventType, reason, message string)
	Eventf(obj record.Object, eventType, reason, format string, args ...any)
}

// syncer holds what the reconcile logic reads and writes.
type syncer struct {
	configMaps *cache.Lister[*corev1.ConfigMap]
	secrets    *cache.Lister[*corev1.Secret]
	writer     secretWriter
	// getConfigMap reads a ConfigMap from the API server, bypassing the
	// cache, to confirm an owner before adopting.
	getConfigMap func(ctx context.Context, namespace, name string) (*corev1.ConfigMap, error)
	recorder     eventRecorder
	// expectations holds back a ConfigMap whose Secret was created and not
	// yet seen by the informer.
	expectations *controller.Expectations
}

// sync makes the Secret of the ConfigMap named by key match it.
func (s *syncer) sync(ctx context.Context, key string) error {
	namespace, name, err := cache.SplitObjectKey(key)
	if err != nil {
		// A key we did not make: retrying cannot help.
		return controller.Terminal(err)
	}
	cm, err := s.configMaps.Namespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		s.expectations.DeleteExpectations(key)
		return s.cleanUp(ctx, namespace, name)
	}
	if err != nil {
		return err
	}
	if !s.expectations.SatisfiedExpectations(key) {
		controller.LoggerFrom(ctx).Debug("waiting for the informer to see the created secret")
		return nil
	}

	secret, err := s.secrets.Namespace(namespace).Get(name)
	switch {
	case apierrors.IsNotFound(err):
		if !wanted(cm) {
			return nil
		}
		return s.create(ctx, key, cm)
	case err != nil:
		return err
	}

	ref := metav1.GetControllerOf(secret)
	if wanted(cm) {
		foreign := ref != nil && ref.UID != cm.UID
		unlabelledOrphan := ref == nil && secret.Labels[SourceLabel] != cm.Name
		if foreign || unlabelledOrphan {
			// Someone else's Secret: never overwrite it. Retrying will not
			// help; a change to the ConfigMap or the Secret brings the key
			// back.
			s.recorder.Eventf(cm, corev1.EventTypeWarning, ReasonResourceExists, messageResourceExists, secret.Name)
			return controller.Terminal(fmt.Errorf("secret %q exists and is not managed by this configmap", secret.Name))
		}
	}

	refs, err := controller.NewRefManager(controller.RefManagerConfig[*corev1.Secret]{
		Owner:     cm,
		OwnerKind: configMapKind,
		Selector:  labels.SelectorFromSet(labels.Set{SourceLabel: cm.Name}),
		Patcher:   s.writer,
		GetOwner: func(ctx context.Context) (metav1.Object, error) {
			return s.getConfigMap(ctx, namespace, name)
		},
		Logger: controller.LoggerFrom(ctx),
	})
	if err != nil {
		return err
	}
	wasOurs := ref != nil && ref.UID == cm.UID
	claimed, err := refs.ClaimObject(ctx, secret, func(*corev1.Secret) bool { return wanted(cm) })
	if err != nil {
		return err
	}
	if !claimed {
		if wasOurs && !wanted(cm) {
			s.recorder.Eventf(cm, corev1.EventTypeNormal, ReasonReleased, "Released Secret %q", secret.Name)
		}
		return nil
	}
	// Adopting patched the live object; a fresh copy arrives through the
	// informer, so compare against what we have and let the update's
	// resourceVersion check catch a race.
	if maps.EqualFunc(secret.Data, desiredData(cm), bytesEqual) {
		return nil
	}
	updated := secret.DeepCopy()
	updated.Data = desiredData(cm)
	if _, err := s.writer.Update(ctx, updated); err != nil {
		return err
	}
	s.recorder.Eventf(cm, corev1.EventTypeNormal, ReasonUpdated, "Updated Secret %q", secret.Name)
	return nil
}

// create creates the mirror of cm.
func (s *syncer) create(ctx context.Context, key string, cm *corev1.ConfigMap) error {
	s.expectations.ExpectCreations(key, 1)
	_, err := s.writer.Create(ctx, newSecret(cm))
	if err != nil {
		// No creation event will come for a create that failed.
		s.expectations.CreationObserved(key)
		if apierrors.IsAlreadyExists(err) {
			// Our cache is behind: the informer will bring the Secret.
			return nil
		}
		return err
	}
	s.recorder.Eventf(cm, corev1.EventTypeNormal, ReasonCreated, "Created Secret %q", cm.Name)
	return nil
}

// cleanUp deletes the Secret a deleted ConfigMap controlled. Any ConfigMap
// UID will do: the ConfigMap of that name is gone.
func (s *syncer) cleanUp(ctx context.Context, namespace, name string) error {
	secret, err := s.secrets.Namespace(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	ref := metav1.GetControllerOf(secret)
	if ref == nil || ref.Kind != configMapKind.Kind || ref.APIVersion != "v1" || ref.Name != name {
		return nil
	}
	err = s.writer.Delete(ctx, namespace, name, secret.UID)
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone already, or replaced by another Secret since our cache saw it.
		return nil
	}
	return err
}

func wanted(cm *corev1.ConfigMap) bool {
	return cm.Annotations[EnabledAnnotation] == "true" && cm.DeletionTimestamp == nil
}

// desiredData is the Secret data mirroring cm: Data and BinaryData merged.
func desiredData(cm *corev1.ConfigMap) map[string][]byte {
	out := make(map[string][]byte, len(cm.Data)+len(cm.BinaryData))
	for k, v := range cm.Data {
		out[k] = []byte(v)
	}
	for k, v := range cm.BinaryData {
		out[k] = v
	}
	return out
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// newSecret is the mirror of cm, controlled by it.
func newSecret(cm *corev1.ConfigMap) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       cm.Namespace,
			Name:            cm.Name,
			Labels:          map[string]string{SourceLabel: cm.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cm, configMapKind)},
		},
		Type: corev1.SecretTypeOpaque,
		Data: desiredData(cm),
	}
}
