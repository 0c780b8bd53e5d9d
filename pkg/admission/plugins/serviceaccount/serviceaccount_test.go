package serviceaccount

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/admission"
)

const testVolume = "kube-api-access-abcde"

func sa(name string, mutate ...func(*corev1.ServiceAccount)) *corev1.ServiceAccount {
	s := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	for _, m := range mutate {
		m(s)
	}
	return s
}

func boolp(b bool) *bool { return &b }

func newPlugin(t *testing.T, src *fakeSource) *plugin {
	t.Helper()
	p, err := New(&admission.Config{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	pl := p.(*plugin)
	pl.volumeName = func() string { return testVolume }
	return pl
}

func attrs(op admission.Operation, pod *corev1.Pod) *admission.Attributes {
	return &admission.Attributes{Operation: op, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Namespace: "ns", Name: pod.Name, Object: pod}
}

// tokenVolume is the volume Kubernetes adds, spelled out.
func tokenVolume(name string) corev1.Volume {
	mode := int32(0644)
	exp := int64(3607)
	return corev1.Volume{Name: name, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &exp}},
			{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
		},
	}}}
}

func tokenMount(name string) corev1.VolumeMount {
	return corev1.VolumeMount{Name: name, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}
}

func TestAdmitMountsTheTokenAsKubernetes(t *testing.T) {
	other := corev1.VolumeMount{Name: "data", MountPath: "/data"}
	own := corev1.VolumeMount{Name: "mine", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"}
	tests := []struct {
		name string
		sa   *corev1.ServiceAccount
		in   corev1.PodSpec
		want corev1.PodSpec
	}{
		{
			name: "the default ServiceAccount is set and the token mounted in every container and init container",
			sa:   sa("default"),
			in: corev1.PodSpec{
				InitContainers:      []corev1.Container{{Name: "init"}},
				Containers:          []corev1.Container{{Name: "a", VolumeMounts: []corev1.VolumeMount{other}}, {Name: "b"}},
				EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}},
			},
			want: corev1.PodSpec{
				ServiceAccountName:  "default",
				InitContainers:      []corev1.Container{{Name: "init", VolumeMounts: []corev1.VolumeMount{tokenMount(testVolume)}}},
				Containers:          []corev1.Container{{Name: "a", VolumeMounts: []corev1.VolumeMount{other, tokenMount(testVolume)}}, {Name: "b", VolumeMounts: []corev1.VolumeMount{tokenMount(testVolume)}}},
				EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug"}}},
				Volumes:             []corev1.Volume{tokenVolume(testVolume)},
			},
		},
		{
			name: "automountServiceAccountToken false on the pod mounts nothing",
			sa:   sa("default"),
			in:   corev1.PodSpec{AutomountServiceAccountToken: boolp(false), Containers: []corev1.Container{{Name: "a"}}},
			want: corev1.PodSpec{ServiceAccountName: "default", AutomountServiceAccountToken: boolp(false), Containers: []corev1.Container{{Name: "a"}}},
		},
		{
			name: "automountServiceAccountToken false on the ServiceAccount mounts nothing",
			sa:   sa("default", func(s *corev1.ServiceAccount) { s.AutomountServiceAccountToken = boolp(false) }),
			in:   corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}},
			want: corev1.PodSpec{ServiceAccountName: "default", Containers: []corev1.Container{{Name: "a"}}},
		},
		{
			name: "the pod's automountServiceAccountToken true wins over the ServiceAccount's false",
			sa:   sa("default", func(s *corev1.ServiceAccount) { s.AutomountServiceAccountToken = boolp(false) }),
			in:   corev1.PodSpec{AutomountServiceAccountToken: boolp(true), Containers: []corev1.Container{{Name: "a"}}},
			want: corev1.PodSpec{ServiceAccountName: "default", AutomountServiceAccountToken: boolp(true), Containers: []corev1.Container{{Name: "a", VolumeMounts: []corev1.VolumeMount{tokenMount(testVolume)}}}, Volumes: []corev1.Volume{tokenVolume(testVolume)}},
		},
		{
			name: "a container with its own mount at the path is left alone",
			sa:   sa("default"),
			in:   corev1.PodSpec{Containers: []corev1.Container{{Name: "a", VolumeMounts: []corev1.VolumeMount{own}}, {Name: "b"}}},
			want: corev1.PodSpec{ServiceAccountName: "default", Containers: []corev1.Container{{Name: "a", VolumeMounts: []corev1.VolumeMount{own}}, {Name: "b", VolumeMounts: []corev1.VolumeMount{tokenMount(testVolume)}}}, Volumes: []corev1.Volume{tokenVolume(testVolume)}},
		},
		{
			name: "no volume is added when every container has its own mount",
			sa:   sa("default"),
			in:   corev1.PodSpec{Containers: []corev1.Container{{Name: "a", VolumeMounts: []corev1.VolumeMount{own}}}},
			want: corev1.PodSpec{ServiceAccountName: "default", Containers: []corev1.Container{{Name: "a", VolumeMounts: []corev1.VolumeMount{own}}}},
		},
		{
			name: "a kube-api-access volume the pod has is reused",
			sa:   sa("default"),
			in:   corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}, Volumes: []corev1.Volume{{Name: "kube-api-access-xyz12"}}},
			want: corev1.PodSpec{ServiceAccountName: "default", Containers: []corev1.Container{{Name: "a", VolumeMounts: []corev1.VolumeMount{tokenMount("kube-api-access-xyz12")}}}, Volumes: []corev1.Volume{{Name: "kube-api-access-xyz12"}}},
		},
		{
			name: "a named ServiceAccount is kept and its imagePullSecrets copied to a pod without any",
			sa: sa("builder", func(s *corev1.ServiceAccount) {
				s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
				s.AutomountServiceAccountToken = boolp(false)
			}),
			in:   corev1.PodSpec{ServiceAccountName: "builder", Containers: []corev1.Container{{Name: "a"}}},
			want: corev1.PodSpec{ServiceAccountName: "builder", Containers: []corev1.Container{{Name: "a"}}, ImagePullSecrets: []corev1.LocalObjectReference{{Name: "registry"}}},
		},
		{
			name: "the deprecated spec.serviceAccount names the ServiceAccount when serviceAccountName is empty",
			sa:   sa("builder", func(s *corev1.ServiceAccount) { s.AutomountServiceAccountToken = boolp(false) }),
			in:   corev1.PodSpec{DeprecatedServiceAccount: "builder", Containers: []corev1.Container{{Name: "a"}}},
			want: corev1.PodSpec{ServiceAccountName: "builder", Containers: []corev1.Container{{Name: "a"}}},
		},
		{
			name: "serviceAccountName wins over the deprecated spec.serviceAccount",
			sa:   sa("builder", func(s *corev1.ServiceAccount) { s.AutomountServiceAccountToken = boolp(false) }),
			in:   corev1.PodSpec{ServiceAccountName: "builder", DeprecatedServiceAccount: "other", Containers: []corev1.Container{{Name: "a"}}},
			want: corev1.PodSpec{ServiceAccountName: "builder", Containers: []corev1.Container{{Name: "a"}}},
		},
		{
			name: "a pod's own imagePullSecrets are kept",
			sa: sa("default", func(s *corev1.ServiceAccount) {
				s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
				s.AutomountServiceAccountToken = boolp(false)
			}),
			in:   corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "mine"}}, Containers: []corev1.Container{{Name: "a"}}},
			want: corev1.PodSpec{ServiceAccountName: "default", ImagePullSecrets: []corev1.LocalObjectReference{{Name: "mine"}}, Containers: []corev1.Container{{Name: "a"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPlugin(t, cached(tt.sa))
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: tt.in}
			if err := p.Admit(context.Background(), attrs(admission.Create, pod)); err != nil {
				t.Fatal(err)
			}
			// Kubernetes' v1 pods show the deprecated alias too.
			tt.want.DeprecatedServiceAccount = tt.want.ServiceAccountName
			if diff := cmp.Diff(tt.want, pod.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVolumeNameIsKubeAPIAccessAndFiveCharacters(t *testing.T) {
	p, err := New(&admission.Config{Source: cached(sa("default"))})
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}}
	if err := p.(admission.MutationInterface).Admit(context.Background(), attrs(admission.Create, pod)); err != nil {
		t.Fatal(err)
	}
	name := pod.Spec.Volumes[0].Name
	if len(name) != len("kube-api-access-")+5 || name[:len("kube-api-access-")] != "kube-api-access-" {
		t.Errorf("volume name %q, want kube-api-access-<5 characters>", name)
	}
	if pod.Spec.Containers[0].VolumeMounts[0].Name != name {
		t.Errorf("mount refers to %q, want %q", pod.Spec.Containers[0].VolumeMounts[0].Name, name)
	}
}

func TestAdmitRefusals(t *testing.T) {
	enforcing := func(s *corev1.ServiceAccount) {
		s.Annotations = map[string]string{EnforceMountableSecretsAnnotation: "true"}
		s.Secrets = []corev1.ObjectReference{{Name: "allowed"}}
		s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
		s.AutomountServiceAccountToken = boolp(false)
	}
	secretEnv := func(name string) []corev1.EnvVar {
		return []corev1.EnvVar{{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: name}, Key: "k"}}}}
	}
	mirror := map[string]string{corev1.MirrorPodAnnotationKey: "x"}
	tests := []struct {
		name    string
		sas     []runtime.Object
		meta    metav1.ObjectMeta
		spec    corev1.PodSpec
		wantErr string
	}{
		{
			name:    "a ServiceAccount that does not exist",
			spec:    corev1.PodSpec{ServiceAccountName: "builder"},
			wantErr: `pods "p" is forbidden: error looking up service account ns/builder: serviceaccount "builder" not found`,
		},
		{
			name:    "a ServiceAccount of another namespace does not count",
			sas:     []runtime.Object{&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "builder"}}},
			spec:    corev1.PodSpec{ServiceAccountName: "builder"},
			wantErr: `pods "p" is forbidden: error looking up service account ns/builder: serviceaccount "builder" not found`,
		},
		{
			name:    "a mirror pod naming a ServiceAccount",
			meta:    metav1.ObjectMeta{Annotations: mirror},
			spec:    corev1.PodSpec{ServiceAccountName: "default"},
			wantErr: `pods "p" is forbidden: a mirror pod may not reference service accounts`,
		},
		{
			name:    "a mirror pod naming a ServiceAccount by the deprecated field",
			meta:    metav1.ObjectMeta{Annotations: mirror},
			spec:    corev1.PodSpec{DeprecatedServiceAccount: "default"},
			wantErr: `pods "p" is forbidden: a mirror pod may not reference service accounts`,
		},
		{
			name:    "a mirror pod with a secret volume",
			meta:    metav1.ObjectMeta{Annotations: mirror},
			spec:    corev1.PodSpec{Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "x"}}}}},
			wantErr: `pods "p" is forbidden: a mirror pod may not reference secrets`,
		},
		{
			name:    "a mirror pod with a secret in an env",
			meta:    metav1.ObjectMeta{Annotations: mirror},
			spec:    corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Env: secretEnv("x")}}},
			wantErr: `pods "p" is forbidden: a mirror pod may not reference secrets`,
		},
		{
			name:    "a mirror pod with a ServiceAccountToken projection",
			meta:    metav1.ObjectMeta{Annotations: mirror},
			spec:    corev1.PodSpec{Volumes: []corev1.Volume{{Name: "t", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}}}}}}}},
			wantErr: `pods "p" is forbidden: a mirror pod may not use ServiceAccountToken volume projections`,
		},
		{
			name:    "enforced mountable secrets refuse another secret volume",
			sas:     []runtime.Object{sa("default", enforcing)},
			spec:    corev1.PodSpec{Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "other"}}}}},
			wantErr: `pods "p" is forbidden: volume with secret.secretName="other" is not allowed because service account default does not reference that secret`,
		},
		{
			name:    "enforced mountable secrets refuse another secret in a container's env",
			sas:     []runtime.Object{sa("default", enforcing)},
			spec:    corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Env: secretEnv("other")}}},
			wantErr: `pods "p" is forbidden: container a with envVar PASSWORD referencing secret.secretName="other" is not allowed because service account default does not reference that secret`,
		},
		{
			name:    "enforced mountable secrets refuse another secret in an init container's envFrom",
			sas:     []runtime.Object{sa("default", enforcing)},
			spec:    corev1.PodSpec{InitContainers: []corev1.Container{{Name: "i", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}}}}}}},
			wantErr: `pods "p" is forbidden: init container i with envFrom referencing secret.secretName="other" is not allowed because service account default does not reference that secret`,
		},
		{
			name:    "enforced mountable secrets refuse another imagePullSecret",
			sas:     []runtime.Object{sa("default", enforcing)},
			spec:    corev1.PodSpec{ImagePullSecrets: []corev1.LocalObjectReference{{Name: "pull"}, {Name: "nope"}}},
			wantErr: `pods "p" is forbidden: imagePullSecrets[1].name="nope" is not allowed because service account default does not reference that imagePullSecret`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPlugin(t, cached(tt.sas...))
			tt.meta.Namespace, tt.meta.Name = "ns", "p"
			pod := &corev1.Pod{ObjectMeta: tt.meta, Spec: tt.spec}
			err := p.Admit(context.Background(), attrs(admission.Create, pod))
			if !apierrors.IsForbidden(err) || err.Error() != tt.wantErr {
				t.Fatalf("got %v, want Forbidden %q", err, tt.wantErr)
			}
		})
	}
}

func TestAdmitAllowsWhatAnEnforcingServiceAccountLists(t *testing.T) {
	p := newPlugin(t, cached(sa("default", func(s *corev1.ServiceAccount) {
		s.Annotations = map[string]string{EnforceMountableSecretsAnnotation: "true"}
		s.Secrets = []corev1.ObjectReference{{Name: "allowed"}}
	})))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{
		Containers: []corev1.Container{{Name: "a", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "allowed"}}}}}},
		Volumes:    []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "allowed"}}}},
	}}
	if err := p.Admit(context.Background(), attrs(admission.Create, pod)); err != nil {
		t.Fatal(err)
	}
}

func TestMirrorPodIsNotChanged(t *testing.T) {
	p := newPlugin(t, cached(sa("default")))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Annotations: map[string]string{corev1.MirrorPodAnnotationKey: "x"}}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}}
	want := pod.DeepCopy()
	if err := p.Admit(context.Background(), attrs(admission.Create, pod)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, pod); diff != "" {
		t.Errorf("mirror pod changed (-want +got):\n%s", diff)
	}
}

func TestAServiceAccountTheCacheLacksIsFetched(t *testing.T) {
	src := &fakeSource{}
	src.AddUncached(serviceAccounts, sa("builder", func(s *corev1.ServiceAccount) { s.AutomountServiceAccountToken = boolp(false) }))
	p := newPlugin(t, src)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{ServiceAccountName: "builder"}}
	if err := p.Admit(context.Background(), attrs(admission.Create, pod)); err != nil {
		t.Fatal(err)
	}
}

func TestDefaultServiceAccountIsRetried(t *testing.T) {
	tests := []struct {
		name        string
		account     string
		appearAt    int
		wantFetches int
		wantErr     bool
		wantElapsed time.Duration
	}{
		{name: "default is looked up ten times before the pod is refused", account: "default", wantFetches: 10, wantErr: true, wantElapsed: 9 * 150 * time.Millisecond},
		{name: "default created while retrying admits the pod", account: "default", appearAt: 3, wantFetches: 3, wantElapsed: 2 * 150 * time.Millisecond},
		{name: "another ServiceAccount is looked up once", account: "builder", wantFetches: 1, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				src := &fakeSource{appearAt: tt.appearAt}
				if tt.appearAt > 0 {
					src.later = []runtime.Object{sa(tt.account)}
				}
				p := newPlugin(t, src)
				p.retryInterval = func() time.Duration { return 150 * time.Millisecond }
				pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{ServiceAccountName: tt.account}}
				start := time.Now()
				err := p.Admit(context.Background(), attrs(admission.Create, pod))
				if (err != nil) != tt.wantErr {
					t.Fatalf("err = %v, want error %v", err, tt.wantErr)
				}
				// Admit validates as well, which finds the account in the
				// cache no more than Admit did: count Admit's own lookups.
				if got := src.Fetches(); tt.wantErr && got != tt.wantFetches || !tt.wantErr && got < tt.wantFetches {
					t.Errorf("fetches = %d, want %d", got, tt.wantFetches)
				}
				if elapsed := time.Since(start); elapsed != tt.wantElapsed {
					t.Errorf("waited %v, want %v", elapsed, tt.wantElapsed)
				}
			})
		})
	}
}

func TestRetryStopsWithTheContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPlugin(t, &fakeSource{})
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
		err := p.Admit(ctx, attrs(admission.Create, pod))
		if !apierrors.IsForbidden(err) {
			t.Fatalf("got %v, want Forbidden", err)
		}
		if want := `pods "p" is forbidden: error looking up service account ns/default: context deadline exceeded`; err.Error() != want {
			t.Errorf("got %q, want %q", err, want)
		}
	})
}

func TestUpdates(t *testing.T) {
	enforcing := sa("default", func(s *corev1.ServiceAccount) {
		s.Annotations = map[string]string{EnforceMountableSecretsAnnotation: "true"}
		s.Secrets = []corev1.ObjectReference{{Name: "allowed"}}
	})
	p := newPlugin(t, cached(enforcing))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{
		ServiceAccountName: "default",
		Containers:         []corev1.Container{{Name: "a"}},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug",
			Env:  []corev1.EnvVar{{Name: "TOKEN", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "other"}}}}},
		}}},
	}}
	want := pod.DeepCopy()

	// A plain pod update is neither changed nor checked.
	a := attrs(admission.Update, pod)
	if err := p.Admit(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, pod); diff != "" {
		t.Errorf("update changed the pod (-want +got):\n%s", diff)
	}

	// Ephemeral containers added through their subresource are checked.
	a = attrs(admission.Update, pod)
	a.Subresource = "ephemeralcontainers"
	if err := p.Admit(context.Background(), a); err != nil {
		t.Fatalf("Admit of ephemeralcontainers: %v", err)
	}
	err := p.Validate(context.Background(), a)
	if want := `pods/ephemeralcontainers "p" is forbidden: ephemeral container debug with envVar TOKEN referencing secret.secretName="other" is not allowed because service account default does not reference that secret`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}

	pod.Spec.ServiceAccountName = ""
	err = p.Validate(context.Background(), a)
	if want := `pods/ephemeralcontainers "p" is forbidden: no service account specified for pod ns/p`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestValidateRequiresAServiceAccount(t *testing.T) {
	p := newPlugin(t, cached(sa("default")))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	err := p.Validate(context.Background(), attrs(admission.Create, pod))
	if want := `pods "p" is forbidden: no service account specified for pod ns/p`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestIgnoresOtherResourcesAndSubresources(t *testing.T) {
	p := newPlugin(t, &fakeSource{})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	for _, a := range []*admission.Attributes{
		{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Subresource: "binding", Object: &corev1.Binding{}},
		{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Subresource: "status", Object: pod},
		{Operation: admission.Create, Resource: schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "pods"}, Object: pod},
		{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("services"), Object: &corev1.Service{}},
	} {
		if err := p.Admit(context.Background(), a); err != nil {
			t.Errorf("%s/%s: %v", a.Resource, a.Subresource, err)
		}
		if err := p.Validate(context.Background(), a); err != nil {
			t.Errorf("%s/%s: %v", a.Resource, a.Subresource, err)
		}
	}
	if pod.Spec.ServiceAccountName != "" {
		t.Error("an ignored request was changed")
	}
}

// The chain runs mutating plugins again when a webhook asks for
// reinvocation: a second run must change nothing.
func TestAdmitTwiceIsAdmitOnce(t *testing.T) {
	p := newPlugin(t, cached(sa("default", func(s *corev1.ServiceAccount) {
		s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
	})))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}, InitContainers: []corev1.Container{{Name: "i"}}}}
	if err := p.Admit(context.Background(), attrs(admission.Create, pod)); err != nil {
		t.Fatal(err)
	}
	once := pod.DeepCopy()
	p.volumeName = func() string { return "kube-api-access-other" }
	if err := p.Admit(context.Background(), attrs(admission.Create, pod)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(once, pod); diff != "" {
		t.Errorf("second Admit changed the pod (-once +twice):\n%s", diff)
	}
}
