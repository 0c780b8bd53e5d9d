package priority

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/admission/admissiontest"
)

func i32(v int32) *int32 { return &v }

func policy(p corev1.PreemptionPolicy) *corev1.PreemptionPolicy { return &p }

func pc(name string, value int32, def bool, p corev1.PreemptionPolicy) *schedulingv1.PriorityClass {
	return &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: name}, Value: value, GlobalDefault: def, PreemptionPolicy: policy(p)}
}

var (
	systemNodeCritical    = pc("system-node-critical", 2000001000, false, corev1.PreemptLowerPriority)
	systemClusterCritical = pc("system-cluster-critical", 2000000000, false, corev1.PreemptLowerPriority)
	high                  = pc("high", 1000, false, corev1.PreemptLowerPriority)
	batch                 = pc("batch", 10, false, corev1.PreemptNever)
	defaultLow            = pc("default-low", 5, true, corev1.PreemptLowerPriority)
	defaultLower          = pc("default-lower", 3, true, corev1.PreemptNever)
)

func podAttrs(op admission.Operation, pod, old *corev1.Pod) *admission.Attributes {
	a := &admission.Attributes{Operation: op, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: corev1.SchemeGroupVersion.WithKind("Pod"), Namespace: "ns", Name: "p", Object: pod}
	if old != nil {
		a.OldObject = old
	}
	return a
}

func newPlugin(t *testing.T, src admission.Source) *plugin {
	t.Helper()
	p, err := New(&admission.Config{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	return p.(*plugin)
}

func TestAdmitPodCreate(t *testing.T) {
	tests := []struct {
		name    string
		classes []runtime.Object
		store   []runtime.Object
		spec    corev1.PodSpec
		want    corev1.PodSpec
		wantErr string
	}{
		{
			name:    "a named class sets priority and preemption policy",
			classes: []runtime.Object{high, batch},
			spec:    corev1.PodSpec{PriorityClassName: "batch"},
			want:    corev1.PodSpec{PriorityClassName: "batch", Priority: i32(10), PreemptionPolicy: policy(corev1.PreemptNever)},
		},
		{
			name:    "no class and no default is priority 0 and PreemptLowerPriority",
			classes: []runtime.Object{high},
			want:    corev1.PodSpec{Priority: i32(0), PreemptionPolicy: policy(corev1.PreemptLowerPriority)},
		},
		{
			name:    "no class takes the globalDefault class and its name",
			classes: []runtime.Object{high, defaultLow},
			want:    corev1.PodSpec{PriorityClassName: "default-low", Priority: i32(5), PreemptionPolicy: policy(corev1.PreemptLowerPriority)},
		},
		{
			name:    "of several globalDefault classes the lowest value wins",
			classes: []runtime.Object{defaultLow, defaultLower},
			want:    corev1.PodSpec{PriorityClassName: "default-lower", Priority: i32(3), PreemptionPolicy: policy(corev1.PreemptNever)},
		},
		{
			name:    "system classes are allowed outside kube-system",
			classes: []runtime.Object{systemNodeCritical, systemClusterCritical},
			spec:    corev1.PodSpec{PriorityClassName: "system-node-critical"},
			want:    corev1.PodSpec{PriorityClassName: "system-node-critical", Priority: i32(2000001000), PreemptionPolicy: policy(corev1.PreemptLowerPriority)},
		},
		{
			name:  "a class the cache lacks is fetched from the store",
			store: []runtime.Object{high},
			spec:  corev1.PodSpec{PriorityClassName: "high"},
			want:  corev1.PodSpec{PriorityClassName: "high", Priority: i32(1000), PreemptionPolicy: policy(corev1.PreemptLowerPriority)},
		},
		{
			name:    "a priority equal to the computed one is accepted",
			classes: []runtime.Object{high},
			spec:    corev1.PodSpec{PriorityClassName: "high", Priority: i32(1000), PreemptionPolicy: policy(corev1.PreemptLowerPriority)},
			want:    corev1.PodSpec{PriorityClassName: "high", Priority: i32(1000), PreemptionPolicy: policy(corev1.PreemptLowerPriority)},
		},
		{
			name:    "a missing class is forbidden",
			classes: []runtime.Object{high},
			spec:    corev1.PodSpec{PriorityClassName: "nope"},
			wantErr: `pods "p" is forbidden: no PriorityClass with name nope was found`,
		},
		{
			name:    "a priority other than the class's is forbidden",
			classes: []runtime.Object{high},
			spec:    corev1.PodSpec{PriorityClassName: "high", Priority: i32(7)},
			wantErr: `pods "p" is forbidden: the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 1000 from the given PriorityClass name`,
		},
		{
			name:    "a priority without a class other than 0 is forbidden",
			spec:    corev1.PodSpec{Priority: i32(7)},
			wantErr: `pods "p" is forbidden: the integer value of priority (7) must not be provided in pod spec; priority admission controller computed 0 from the given PriorityClass name`,
		},
		{
			name:    "a preemption policy other than the class's is forbidden",
			classes: []runtime.Object{batch},
			spec:    corev1.PodSpec{PriorityClassName: "batch", PreemptionPolicy: policy(corev1.PreemptLowerPriority)},
			wantErr: `pods "p" is forbidden: the string value of PreemptionPolicy (PreemptLowerPriority) must not be provided in pod spec; priority admission controller computed Never from the given PriorityClass name`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := &admissiontest.Source{}
			src.Add(priorityClasses, tt.classes...)
			src.AddUncached(priorityClasses, tt.store...)
			p := newPlugin(t, src)
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: tt.spec}
			err := p.Admit(context.Background(), podAttrs(admission.Create, pod, nil))
			if tt.wantErr != "" {
				if !apierrors.IsForbidden(err) || err.Error() != tt.wantErr {
					t.Fatalf("got %v, want Forbidden %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, pod.Spec); diff != "" {
				t.Errorf("spec (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAdmitPodUpdateKeepsStoredPriority(t *testing.T) {
	p := newPlugin(t, cached(high))
	old := &corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "high", Priority: i32(1000), PreemptionPolicy: policy(corev1.PreemptLowerPriority)}}
	pod := &corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "high"}}
	if err := p.Admit(context.Background(), podAttrs(admission.Update, pod, old)); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(old.Spec, pod.Spec); diff != "" {
		t.Errorf("spec (-want +got):\n%s", diff)
	}
	// A changed priority is left for validation to refuse, not rewritten.
	pod = &corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "high", Priority: i32(3)}}
	if err := p.Admit(context.Background(), podAttrs(admission.Update, pod, old)); err != nil {
		t.Fatal(err)
	}
	if *pod.Spec.Priority != 3 {
		t.Errorf("update priority = %d, want the request's 3", *pod.Spec.Priority)
	}
}

func TestAdmitIgnoresSubresourcesAndOtherResources(t *testing.T) {
	p := newPlugin(t, &admissiontest.Source{})
	pod := &corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "nope"}}
	a := podAttrs(admission.Create, pod, nil)
	a.Subresource = "binding"
	if err := p.Admit(context.Background(), a); err != nil {
		t.Fatalf("subresource: %v", err)
	}
	a = podAttrs(admission.Create, pod, nil)
	a.Resource = schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "pods"}
	if err := p.Admit(context.Background(), a); err != nil {
		t.Fatalf("other group: %v", err)
	}
	if pod.Spec.Priority != nil {
		t.Error("priority set on an ignored request")
	}
	if p.Handles(admission.Delete) || p.Handles(admission.Connect) {
		t.Error("Handles DELETE or CONNECT")
	}
}

func TestValidatePriorityClass(t *testing.T) {
	tests := []struct {
		name    string
		op      admission.Operation
		classes []runtime.Object
		obj     *schedulingv1.PriorityClass
		wantErr string
	}{
		{name: "a first default is allowed", op: admission.Create, classes: []runtime.Object{high}, obj: pc("d", 1, true, corev1.PreemptLowerPriority)},
		{name: "a class that is not the default is allowed beside one", op: admission.Create, classes: []runtime.Object{defaultLow}, obj: pc("x", 1, false, corev1.PreemptLowerPriority)},
		{
			name: "a second default is forbidden", op: admission.Create, classes: []runtime.Object{defaultLow}, obj: pc("d", 1, true, corev1.PreemptLowerPriority),
			wantErr: `priorityclasses.scheduling.k8s.io "d" is forbidden: PriorityClass default-low is already marked as default. Only one default can exist`,
		},
		{
			name: "marking another class the default is forbidden", op: admission.Update, classes: []runtime.Object{defaultLow, high}, obj: pc("high", 1000, true, corev1.PreemptLowerPriority),
			wantErr: `priorityclasses.scheduling.k8s.io "high" is forbidden: PriorityClass default-low is already marked as default. Only one default can exist`,
		},
		{name: "updating the default class itself is allowed", op: admission.Update, classes: []runtime.Object{defaultLow}, obj: pc("default-low", 5, true, corev1.PreemptLowerPriority)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newPlugin(t, cached(tt.classes...))
			a := &admission.Attributes{Operation: tt.op, Resource: priorityClasses, Name: tt.obj.Name, Object: tt.obj}
			err := p.Validate(context.Background(), a)
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

// The chain runs mutating plugins again when a webhook asks for
// reinvocation: a second run must accept what the first set.
func TestAdmitTwiceIsAdmitOnce(t *testing.T) {
	for _, name := range []string{"", "batch"} {
		p := newPlugin(t, cached(batch, defaultLower))
		pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{PriorityClassName: name}}
		if err := p.Admit(context.Background(), podAttrs(admission.Create, pod, nil)); err != nil {
			t.Fatal(err)
		}
		once := pod.DeepCopy()
		if err := p.Admit(context.Background(), podAttrs(admission.Create, pod, nil)); err != nil {
			t.Fatalf("class %q: second Admit: %v", name, err)
		}
		if diff := cmp.Diff(once, pod); diff != "" {
			t.Errorf("class %q: second Admit changed the pod (-once +twice):\n%s", name, diff)
		}
	}
}
