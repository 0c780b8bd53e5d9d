package serviceaccount

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/admission"
)

const (
	// DefaultServiceAccountName is the ServiceAccount of pods that name none.
	DefaultServiceAccountName = "default"
	// EnforceMountableSecretsAnnotation, "true" on a ServiceAccount, limits
	// the secrets its pods may refer to to the ServiceAccount's.
	EnforceMountableSecretsAnnotation = "kubernetes.io/enforce-mountable-secrets"
	// VolumeNamePrefix starts the name of the token volume, followed by a
	// dash and five random characters.
	VolumeNamePrefix = "kube-api-access"
	// MountPath is where the token volume is mounted.
	MountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// TokenExpirationSeconds is the lifetime asked for the projected token:
	// one hour and seven seconds, the value by which Kubernetes' token
	// issuer knows an automounted token (whose lifetime it may extend).
	TokenExpirationSeconds int64 = 60*60 + 7
	// RootCAConfigMap is the ConfigMap holding the cluster's CA, published in
	// every namespace.
	RootCAConfigMap = "kube-root-ca.crt"

	defaultAttempts = 10
	minRetry        = 100 * time.Millisecond
)

var (
	podsResource = schema.GroupResource{Resource: "pods"}
	// serviceAccounts is the resource the plugin reads.
	serviceAccounts = corev1.SchemeGroupVersion.WithResource("serviceaccounts")
)

// plugin defaults pods' ServiceAccount and mounts its token.
type plugin struct {
	source admission.Source
	clock  clock.Clock
	// volumeName returns a new token volume name; replaced in tests.
	volumeName func() string
	// retryInterval returns the wait between two lookups of "default";
	// replaced in tests.
	retryInterval func() time.Duration
}

var (
	_ admission.MutationInterface   = (*plugin)(nil)
	_ admission.ValidationInterface = (*plugin)(nil)
)

// New builds the plugin: cfg.Source is required, cfg.Clock defaults to the
// real clock. It is an admission.Factory.
func New(cfg *admission.Config) (admission.Interface, error) {
	if cfg == nil || cfg.Source == nil {
		return nil, errors.New("ServiceAccount needs a Source")
	}
	p := &plugin{
		source: cfg.Source,
		clock:  cfg.Clock,
		volumeName: func() string {
			return VolumeNamePrefix + "-" + utilrand.String(5)
		},
		retryInterval: func() time.Duration {
			return minRetry + rand.N(minRetry)
		},
	}
	if p.clock == nil {
		p.clock = clock.RealClock{}
	}
	return p, nil
}

// Handles reports true for CREATE and UPDATE (of the ephemeralcontainers
// subresource).
func (p *plugin) Handles(op admission.Operation) bool {
	return op == admission.Create || op == admission.Update
}

// ignored reports whether a is not a request about a pod the plugin looks
// at, and returns the pod otherwise.
func ignored(a *admission.Attributes) (*corev1.Pod, bool) {
	if a.Resource.GroupResource() != podsResource || (a.Subresource != "" && a.Subresource != "ephemeralcontainers") {
		return nil, true
	}
	pod, ok := a.Object.(*corev1.Pod)
	return pod, !ok || pod == nil
}

func isMirror(pod *corev1.Pod) bool {
	_, ok := pod.Annotations[corev1.MirrorPodAnnotationKey]
	return ok
}

// Admit defaults and mounts the ServiceAccount of a pod being created, then
// validates it.
func (p *plugin) Admit(ctx context.Context, a *admission.Attributes) error {
	pod, skip := ignored(a)
	if skip || a.Operation != admission.Create {
		return nil
	}
	if isMirror(pod) {
		return p.Validate(ctx, a)
	}
	// spec.serviceAccount is the deprecated alias of serviceAccountName:
	// Kubernetes reads it when the name is not given, and always writes
	// both.
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = pod.Spec.DeprecatedServiceAccount
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccountName
	}
	pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	sa, err := p.serviceAccount(ctx, a.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.Namespace, pod.Spec.ServiceAccountName, err))
	}
	if automount(sa, pod) {
		p.mountToken(pod)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		pod.Spec.ImagePullSecrets = make([]corev1.LocalObjectReference, len(sa.ImagePullSecrets))
		for i, s := range sa.ImagePullSecrets {
			pod.Spec.ImagePullSecrets[i].Name = s.Name
		}
	}
	return p.Validate(ctx, a)
}

// Validate checks what a pod being created, or the ephemeral containers
// added to one, may refer to.
func (p *plugin) Validate(ctx context.Context, a *admission.Attributes) error {
	pod, skip := ignored(a)
	if skip {
		return nil
	}
	if a.Operation == admission.Update && a.Subresource == "ephemeralcontainers" {
		return p.validateEphemeral(ctx, a, pod)
	}
	if a.Operation != admission.Create {
		return nil
	}
	if isMirror(pod) {
		return validateMirror(a, pod)
	}
	if pod.Spec.ServiceAccountName == "" {
		return admission.NewForbidden(a, fmt.Errorf("no service account specified for pod %s/%s", a.Namespace, pod.Name))
	}
	sa, err := p.serviceAccount(ctx, a.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.Namespace, pod.Spec.ServiceAccountName, err))
	}
	if enforcesMountableSecrets(sa) {
		if err := limitSecretReferences(sa, pod); err != nil {
			return admission.NewForbidden(a, err)
		}
	}
	return nil
}

func validateMirror(a *admission.Attributes, pod *corev1.Pod) error {
	if pod.Spec.ServiceAccountName != "" || pod.Spec.DeprecatedServiceAccount != "" {
		return admission.NewForbidden(a, errors.New("a mirror pod may not reference service accounts"))
	}
	if refersToSecrets(pod) {
		return admission.NewForbidden(a, errors.New("a mirror pod may not reference secrets"))
	}
	for _, v := range pod.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, s := range v.Projected.Sources {
			if s.ServiceAccountToken != nil {
				return admission.NewForbidden(a, errors.New("a mirror pod may not use ServiceAccountToken volume projections"))
			}
		}
	}
	return nil
}

func (p *plugin) validateEphemeral(ctx context.Context, a *admission.Attributes, pod *corev1.Pod) error {
	if pod.Spec.ServiceAccountName == "" {
		return admission.NewForbidden(a, fmt.Errorf("no service account specified for pod %s/%s", a.Namespace, pod.Name))
	}
	sa, err := p.serviceAccount(ctx, a.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		return admission.NewForbidden(a, fmt.Errorf("error looking up service account %s/%s: %w", a.Namespace, pod.Spec.ServiceAccountName, err))
	}
	if !enforcesMountableSecrets(sa) {
		return nil
	}
	mountable := secretNames(sa)
	for _, c := range pod.Spec.EphemeralContainers {
		if err := checkEnv("ephemeral container", c.Name, c.Env, c.EnvFrom, mountable, sa.Name); err != nil {
			return admission.NewForbidden(a, err)
		}
	}
	return nil
}

// serviceAccount returns the ServiceAccount namespace/name, from the cache
// or else the store, or a NotFound error.
func (p *plugin) serviceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	o, err := p.source.Get(ctx, serviceAccounts, namespace, name)
	if err == nil {
		return asServiceAccount(o)
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	attempts := 1
	if name == DefaultServiceAccountName {
		attempts = defaultAttempts
	}
	interval := p.retryInterval()
	for i := 0; i < attempts; i++ {
		if i > 0 {
			t := p.clock.NewTimer(interval)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, ctx.Err()
			case <-t.C():
			}
		}
		o, err := p.source.Fetch(ctx, serviceAccounts, namespace, name)
		if err == nil {
			return asServiceAccount(o)
		}
		if !apierrors.IsNotFound(err) {
			return nil, err
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccount"}, name)
}

func asServiceAccount(o runtime.Object) (*corev1.ServiceAccount, error) {
	switch sa := o.(type) {
	case *corev1.ServiceAccount:
		return sa, nil
	case runtime.Unstructured:
		out := &corev1.ServiceAccount{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(sa.UnstructuredContent(), out); err != nil {
			return nil, fmt.Errorf("decode service account: %w", err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("service account of unexpected type %T", o)
	}
}

// automount reports whether the token is mounted: the pod's choice, else
// the ServiceAccount's, else yes.
func automount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

func enforcesMountableSecrets(sa *corev1.ServiceAccount) bool {
	v, ok := sa.Annotations[EnforceMountableSecretsAnnotation]
	if !ok {
		return false
	}
	enforce, _ := strconv.ParseBool(v)
	return enforce
}

// mountToken mounts the token volume in every init container and container
// without a mount at MountPath, adding the volume if one needs it.
func (p *plugin) mountToken(pod *corev1.Pod) {
	name, hasVolume := "", false
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, VolumeNamePrefix+"-") {
			name, hasVolume = v.Name, true
			break
		}
	}
	if name == "" {
		name = p.volumeName()
	}
	mount := corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: MountPath}
	needed := false
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range containers {
			if !hasMountAt(containers[i].VolumeMounts, MountPath) {
				containers[i].VolumeMounts = append(containers[i].VolumeMounts, mount)
				needed = true
			}
		}
	}
	if needed && !hasVolume {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{
			Name:         name,
			VolumeSource: corev1.VolumeSource{Projected: tokenVolumeSource()},
		})
	}
}

func hasMountAt(mounts []corev1.VolumeMount, path string) bool {
	for _, m := range mounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// tokenVolumeSource returns the projected volume the plugin mounts: a
// bound ServiceAccount token, the cluster's CA and the pod's namespace.
func tokenVolumeSource() *corev1.ProjectedVolumeSource {
	mode := corev1.ProjectedVolumeSourceDefaultMode
	expiration := TokenExpirationSeconds
	return &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiration}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: RootCAConfigMap},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{
				Items: []corev1.DownwardAPIVolumeFile{{
					Path:     "namespace",
					FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"},
				}},
			}},
		},
	}
}
