package limitranger

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/admission/admissiontest"
)

func rl(kv ...string) corev1.ResourceList {
	out := corev1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[corev1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return out
}

func limitRange(name string, items ...corev1.LimitRangeItem) *corev1.LimitRange {
	return &corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.LimitRangeSpec{Limits: items}}
}

func newPlugin(t *testing.T, lrs ...runtime.Object) *plugin {
	t.Helper()
	src := &admissiontest.Source{}
	src.Add(limitRanges, lrs...)
	p, err := New(&admission.Config{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	return p.(*plugin)
}

func podAttrs(op admission.Operation, pod *corev1.Pod) *admission.Attributes {
	return &admission.Attributes{Operation: op, Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Resource: corev1.SchemeGroupVersion.WithResource("pods"), Namespace: "ns", Name: "p", Object: pod}
}

func container(name string, requests, limits corev1.ResourceList) corev1.Container {
	return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: requests, Limits: limits}}
}

// normalize compares quantities by value, not by how they were parsed.
var normalize = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })

func TestAdmitAppliesContainerDefaults(t *testing.T) {
	defaults := limitRange("defaults", corev1.LimitRangeItem{
		Type:           corev1.LimitTypeContainer,
		Default:        rl("cpu", "500m", "memory", "512Mi"),
		DefaultRequest: rl("cpu", "100m", "memory", "128Mi"),
	})
	tests := []struct {
		name           string
		lrs            []runtime.Object
		containers     []corev1.Container
		initContainers []corev1.Container
		wantContainers []corev1.Container
		wantInit       []corev1.Container
		wantAnnotation string
	}{
		{
			name:           "a container without resources gets the default requests and limits",
			lrs:            []runtime.Object{defaults},
			containers:     []corev1.Container{{Name: "app"}},
			wantContainers: []corev1.Container{container("app", rl("cpu", "100m", "memory", "128Mi"), rl("cpu", "500m", "memory", "512Mi"))},
			wantAnnotation: "LimitRanger plugin set: cpu, memory request for container app; cpu, memory limit for container app",
		},
		{
			name:           "what a container sets is kept and only the rest defaulted",
			lrs:            []runtime.Object{defaults},
			containers:     []corev1.Container{container("app", rl("cpu", "200m"), rl("memory", "1Gi"))},
			wantContainers: []corev1.Container{container("app", rl("cpu", "200m", "memory", "128Mi"), rl("cpu", "500m", "memory", "1Gi"))},
			wantAnnotation: "LimitRanger plugin set: memory request for container app; cpu limit for container app",
		},
		{
			name:           "init containers are defaulted after containers",
			lrs:            []runtime.Object{defaults},
			containers:     []corev1.Container{container("app", rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))},
			initContainers: []corev1.Container{{Name: "setup"}},
			wantContainers: []corev1.Container{container("app", rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))},
			wantInit:       []corev1.Container{container("setup", rl("cpu", "100m", "memory", "128Mi"), rl("cpu", "500m", "memory", "512Mi"))},
			wantAnnotation: "LimitRanger plugin set: cpu, memory request for init container setup; cpu, memory limit for init container setup",
		},
		{
			name:           "a container setting everything is not annotated",
			lrs:            []runtime.Object{defaults},
			containers:     []corev1.Container{container("app", rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))},
			wantContainers: []corev1.Container{container("app", rl("cpu", "1", "memory", "1Gi"), rl("cpu", "1", "memory", "1Gi"))},
		},
		{
			name:           "no LimitRange changes nothing",
			containers:     []corev1.Container{{Name: "app"}},
			wantContainers: []corev1.Container{{Name: "app"}},
		},
		{
			name:           "Pod and PersistentVolumeClaim items give no defaults",
			lrs:            []runtime.Object{limitRange("pod", corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "4")}, corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim, Min: rl("storage", "1Gi")})},
			containers:     []corev1.Container{{Name: "app"}},
			wantContainers: []corev1.Container{{Name: "app"}},
		},
		{
			name: "a later LimitRange defaults what the first left unset",
			lrs: []runtime.Object{
				limitRange("a", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, DefaultRequest: rl("cpu", "100m")}),
				limitRange("b", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, DefaultRequest: rl("cpu", "300m", "memory", "64Mi")}),
			},
			containers:     []corev1.Container{{Name: "app"}},
			wantContainers: []corev1.Container{container("app", rl("cpu", "100m", "memory", "64Mi"), nil)},
			wantAnnotation: "LimitRanger plugin set: memory request for container app",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPlugin(t, tt.lrs...)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{Containers: tt.containers, InitContainers: tt.initContainers}}
			if err := p.Admit(context.Background(), podAttrs(admission.Create, pod)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.wantContainers, pod.Spec.Containers, normalize); diff != "" {
				t.Errorf("containers (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantInit, pod.Spec.InitContainers, normalize); diff != "" {
				t.Errorf("init containers (-want +got):\n%s", diff)
			}
			if got := pod.Annotations[Annotation]; got != tt.wantAnnotation {
				t.Errorf("annotation %q, want %q", got, tt.wantAnnotation)
			}
		})
	}
}

func TestValidatePod(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	containerMinMax := limitRange("c", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: rl("cpu", "100m"), Max: rl("memory", "1Gi")})
	ratio := limitRange("r", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, MaxLimitRequestRatio: rl("cpu", "2")})
	podMax := limitRange("p", corev1.LimitRangeItem{Type: corev1.LimitTypePod, Max: rl("cpu", "2"), Min: rl("memory", "100Mi")})
	tests := []struct {
		name    string
		lr      runtime.Object
		spec    corev1.PodSpec
		wantErr string
	}{
		{
			name: "a container within min and max is admitted",
			lr:   containerMinMax,
			spec: corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "100m", "memory", "1Gi"), rl("memory", "1Gi"))}},
		},
		{
			name:    "a request below the minimum",
			lr:      containerMinMax,
			spec:    corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "50m"), rl("memory", "1Gi"))}},
			wantErr: `pods "p" is forbidden: minimum cpu usage per Container is 100m, but request is 50m`,
		},
		{
			name:    "no request for a minimum",
			lr:      containerMinMax,
			spec:    corev1.PodSpec{Containers: []corev1.Container{container("a", nil, rl("memory", "1Gi"))}},
			wantErr: `pods "p" is forbidden: minimum cpu usage per Container is 100m.  No request is specified`,
		},
		{
			name:    "a limit below the minimum",
			lr:      limitRange("m", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Min: rl("cpu", "100m")}),
			spec:    corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "100m"), rl("cpu", "50m"))}},
			wantErr: `pods "p" is forbidden: minimum cpu usage per Container is 100m, but limit is 50m`,
		},
		{
			name:    "no limit for a maximum",
			lr:      containerMinMax,
			spec:    corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "1"), nil)}},
			wantErr: `pods "p" is forbidden: maximum memory usage per Container is 1Gi.  No limit is specified`,
		},
		{
			name:    "a limit above the maximum",
			lr:      containerMinMax,
			spec:    corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "1"), rl("memory", "2Gi"))}},
			wantErr: `pods "p" is forbidden: maximum memory usage per Container is 1Gi, but limit is 2Gi`,
		},
		{
			name:    "several violations are listed together",
			lr:      containerMinMax,
			spec:    corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "10m"), rl("memory", "2Gi"))}},
			wantErr: `pods "p" is forbidden: [minimum cpu usage per Container is 100m, but request is 10m, maximum memory usage per Container is 1Gi, but limit is 2Gi]`,
		},
		{
			name:    "init containers are checked too",
			lr:      containerMinMax,
			spec:    corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "1"), rl("memory", "1Gi"))}, InitContainers: []corev1.Container{container("i", rl("cpu", "1m"), rl("memory", "1Gi"))}},
			wantErr: `pods "p" is forbidden: minimum cpu usage per Container is 100m, but request is 1m`,
		},
		{
			name:    "a limit to request ratio above the maximum",
			lr:      ratio,
			spec:    corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "100m"), rl("cpu", "300m"))}},
			wantErr: `pods "p" is forbidden: cpu max limit to request ratio per Container is 2, but provided ratio is 3.000000`,
		},
		{
			name: "a limit to request ratio at the maximum is admitted",
			lr:   ratio,
			spec: corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "100m"), rl("cpu", "200m"))}},
		},
		{
			name:    "a ratio without a request",
			lr:      ratio,
			spec:    corev1.PodSpec{Containers: []corev1.Container{container("a", nil, rl("cpu", "200m"))}},
			wantErr: `pods "p" is forbidden: cpu max limit to request ratio per Container is 2, but no request is specified or request is 0`,
		},
		{
			name:    "a ratio without a limit",
			lr:      ratio,
			spec:    corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "100m"), nil)}},
			wantErr: `pods "p" is forbidden: cpu max limit to request ratio per Container is 2, but no limit is specified or limit is 0`,
		},
		{
			name:    "the pod's containers are summed for a Pod item",
			lr:      podMax,
			spec:    corev1.PodSpec{Containers: []corev1.Container{container("a", rl("memory", "100Mi"), rl("cpu", "1500m")), container("b", nil, rl("cpu", "1"))}},
			wantErr: `pods "p" is forbidden: maximum cpu usage per Pod is 2, but limit is 2500m`,
		},
		{
			name:    "the largest init container counts when above the containers' sum",
			lr:      podMax,
			spec:    corev1.PodSpec{Containers: []corev1.Container{container("a", rl("memory", "100Mi"), rl("cpu", "1"))}, InitContainers: []corev1.Container{container("i", nil, rl("cpu", "3"))}},
			wantErr: `pods "p" is forbidden: maximum cpu usage per Pod is 2, but limit is 3`,
		},
		{
			name: "restartable init containers add to the containers",
			lr:   podMax,
			spec: corev1.PodSpec{
				Containers:     []corev1.Container{container("a", rl("memory", "100Mi"), rl("cpu", "1500m"))},
				InitContainers: []corev1.Container{{Name: "sidecar", RestartPolicy: &always, Resources: corev1.ResourceRequirements{Limits: rl("cpu", "1")}}},
			},
			wantErr: `pods "p" is forbidden: maximum cpu usage per Pod is 2, but limit is 2500m`,
		},
		{
			name: "pod-level resources replace the containers' sum",
			lr:   podMax,
			spec: corev1.PodSpec{
				Resources:  &corev1.ResourceRequirements{Requests: rl("memory", "200Mi"), Limits: rl("cpu", "2")},
				Containers: []corev1.Container{container("a", nil, rl("cpu", "1500m")), container("b", nil, rl("cpu", "500m"))},
			},
		},
		{
			name:    "the pod's requests below a Pod minimum",
			lr:      podMax,
			spec:    corev1.PodSpec{Containers: []corev1.Container{container("a", rl("memory", "50Mi"), rl("cpu", "1"))}},
			wantErr: `pods "p" is forbidden: minimum memory usage per Pod is 100Mi, but request is 50Mi`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPlugin(t, tt.lr)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: tt.spec}
			err := p.Validate(context.Background(), podAttrs(admission.Create, pod))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || err.Error() != tt.wantErr {
				t.Fatalf("got %v, want Forbidden %q", err, tt.wantErr)
			}
		})
	}
}

func claimAttrs(op admission.Operation, pvc, old *corev1.PersistentVolumeClaim) *admission.Attributes {
	a := &admission.Attributes{Operation: op, Kind: corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"), Resource: corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), Namespace: "ns", Name: "c", Object: pvc}
	if old != nil {
		a.OldObject = old
	}
	return a
}

func TestValidateClaim(t *testing.T) {
	lr := limitRange("storage", corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim, Min: rl("storage", "1Gi"), Max: rl("storage", "10Gi")})
	claim := func(size string) *corev1.PersistentVolumeClaim {
		c := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
		if size != "" {
			c.Spec.Resources.Requests = rl("storage", size)
		}
		return c
	}
	tests := []struct {
		name    string
		op      admission.Operation
		pvc     *corev1.PersistentVolumeClaim
		old     *corev1.PersistentVolumeClaim
		wantErr string
	}{
		{name: "a claim within bounds", op: admission.Create, pvc: claim("5Gi")},
		{name: "a claim below the minimum", op: admission.Create, pvc: claim("500Mi"), wantErr: `persistentvolumeclaims "c" is forbidden: minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi`},
		{name: "a claim above the maximum", op: admission.Create, pvc: claim("20Gi"), wantErr: `persistentvolumeclaims "c" is forbidden: maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi`},
		{name: "a claim without a request", op: admission.Create, pvc: claim(""), wantErr: `persistentvolumeclaims "c" is forbidden: [minimum storage usage per PersistentVolumeClaim is 1Gi.  No request is specified, maximum storage usage per PersistentVolumeClaim is 10Gi.  No request is specified]`},
		{name: "a claim grown above the maximum", op: admission.Update, pvc: claim("20Gi"), old: claim("5Gi"), wantErr: `persistentvolumeclaims "c" is forbidden: maximum storage usage per PersistentVolumeClaim is 10Gi, but request is 20Gi`},
		{name: "a claim being deleted is not checked", op: admission.Update, pvc: claim("20Gi"), old: func() *corev1.PersistentVolumeClaim {
			c := claim("20Gi")
			now := metav1.Now()
			c.DeletionTimestamp = &now
			return c
		}()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPlugin(t, lr)
			err := p.Validate(context.Background(), claimAttrs(tt.op, tt.pvc, tt.old))
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !apierrors.IsForbidden(err) || err.Error() != tt.wantErr {
				t.Fatalf("got %v, want Forbidden %q", err, tt.wantErr)
			}
		})
	}
}

func TestWhichRequestsAreLookedAt(t *testing.T) {
	defaults := limitRange("d", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, DefaultRequest: rl("cpu", "100m"), Min: rl("cpu", "100m")})
	p := newPlugin(t, defaults)
	bare := func() *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}}
	}

	// A plain pod update is neither defaulted nor checked.
	pod := bare()
	a := podAttrs(admission.Update, pod)
	a.OldObject = bare()
	if err := p.Admit(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if err := p.Validate(context.Background(), a); err != nil {
		t.Fatalf("pod update validated: %v", err)
	}
	if pod.Spec.Containers[0].Resources.Requests != nil {
		t.Error("pod update defaulted")
	}

	// The resize subresource is.
	a.Subresource = "resize"
	if err := p.Admit(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	if got := pod.Spec.Containers[0].Resources.Requests.Cpu().String(); got != "100m" {
		t.Errorf("resize: cpu request %s, want the default 100m", got)
	}
	pod.Spec.Containers[0].Resources.Requests = rl("cpu", "10m")
	if err := p.Validate(context.Background(), a); err == nil || err.Error() != `pods/resize "p" is forbidden: minimum cpu usage per Container is 100m, but request is 10m` {
		t.Errorf("resize: got %v", err)
	}

	// Other subresources are not.
	pod = bare()
	a = podAttrs(admission.Create, pod)
	a.Subresource = "status"
	if err := p.Admit(context.Background(), a); err != nil || pod.Spec.Containers[0].Resources.Requests != nil {
		t.Errorf("status subresource: err %v, requests %v", err, pod.Spec.Containers[0].Resources.Requests)
	}

	// Nor other kinds.
	svc := &admission.Attributes{Operation: admission.Create, Kind: corev1.SchemeGroupVersion.WithKind("Service"), Resource: corev1.SchemeGroupVersion.WithResource("services"), Namespace: "ns", Object: &corev1.Service{}}
	if err := p.Validate(context.Background(), svc); err != nil {
		t.Error(err)
	}
}

func TestListErrorIsForbidden(t *testing.T) {
	src := &admissiontest.Source{}
	src.SetListError(errors.New("down"))
	p, _ := New(&admission.Config{Source: src})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	err := p.(admission.MutationInterface).Admit(context.Background(), podAttrs(admission.Create, pod))
	if want := `pods "p" is forbidden: unable to CREATE /v1, Resource=pods at this time because there was an error enforcing limit ranges`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

func TestLargeQuantitiesCompareInUnits(t *testing.T) {
	// Values past what milli units hold are compared in units.
	lr := limitRange("big", corev1.LimitRangeItem{Type: corev1.LimitTypePersistentVolumeClaim, Max: rl("storage", "1000000Ti")})
	p := newPlugin(t, lr)
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c"}}
	pvc.Spec.Resources.Requests = rl("storage", "1000001Ti")
	err := p.Validate(context.Background(), claimAttrs(admission.Create, pvc, nil))
	if want := `persistentvolumeclaims "c" is forbidden: maximum storage usage per PersistentVolumeClaim is 1000000Ti, but request is 1000001Ti`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %q", err, want)
	}
}

// The chain runs mutating plugins again when a webhook asks for
// reinvocation: a second run must change nothing, annotation included.
func TestAdmitTwiceIsAdmitOnce(t *testing.T) {
	p := newPlugin(t, limitRange("d", corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: rl("cpu", "1"), DefaultRequest: rl("cpu", "100m")}))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}}
	if err := p.Admit(context.Background(), podAttrs(admission.Create, pod)); err != nil {
		t.Fatal(err)
	}
	once := pod.DeepCopy()
	if err := p.Admit(context.Background(), podAttrs(admission.Create, pod)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(once, pod, normalize); diff != "" {
		t.Errorf("second Admit changed the pod (-once +twice):\n%s", diff)
	}
}
