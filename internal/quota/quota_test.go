package quota

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func strs(l corev1.ResourceList) map[string]string {
	out := map[string]string{}
	for k, v := range l {
		out[string(k)] = v.String()
	}
	return out
}

func TestObjectCountName(t *testing.T) {
	if got := ObjectCountName(schema.GroupResource{Resource: "secrets"}); got != "count/secrets" {
		t.Errorf("core group: %s", got)
	}
	if got := ObjectCountName(schema.GroupResource{Group: "apps", Resource: "deployments"}); got != "count/deployments.apps" {
		t.Errorf("named group: %s", got)
	}
}

func TestIsPodName(t *testing.T) {
	for name, want := range map[corev1.ResourceName]bool{
		"pods": true, "count/pods": true, "cpu": true, "requests.memory": true, "limits.ephemeral-storage": true,
		"hugepages-2Mi": true, "requests.hugepages-1Gi": true, "requests.example.com/gpu": true,
		"limits.example.com/gpu": false, "requests.kubernetes.io/foo": false, "services": false, "requests.storage": false,
	} {
		if got := IsPodName(name); got != want {
			t.Errorf("IsPodName(%s) = %v, want %v", name, got, want)
		}
	}
}

func TestPodConstraints(t *testing.T) {
	c := func(name string, req, lim corev1.ResourceList) corev1.Container {
		return corev1.Container{Name: name, Resources: corev1.ResourceRequirements{Requests: req, Limits: lim}}
	}
	cpu := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	pod := &corev1.Pod{Spec: corev1.PodSpec{
		InitContainers: []corev1.Container{c("init", nil, nil)},
		Containers:     []corev1.Container{c("b", cpu, nil), c("a", nil, cpu)},
	}}
	tests := []struct {
		name    string
		tracked []corev1.ResourceName
		want    string
	}{
		{"untracked names ask nothing", []corev1.ResourceName{"pods", "requests.ephemeral-storage"}, ""},
		{"a limit stands for the request", []corev1.ResourceName{"requests.cpu"}, "must specify requests.cpu for: init"},
		{"each name lists its containers, sorted", []corev1.ResourceName{"limits.cpu", "memory"}, "must specify limits.cpu for: b,init; memory for: a,b,init"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := PodConstraints(tt.tracked, pod)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestPodChargedAndUsage(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Resources: corev1.ResourceRequirements{
		Requests: corev1.ResourceList{"cpu": resource.MustParse("250m"), "hugepages-2Mi": resource.MustParse("4Mi"), "example.com/gpu": resource.MustParse("1")},
		Limits:   corev1.ResourceList{"memory": resource.MustParse("1Gi")},
	}}}}}
	want := map[string]string{
		"pods": "1", "count/pods": "1",
		"cpu": "250m", "requests.cpu": "250m", "memory": "1Gi", "requests.memory": "1Gi", "limits.memory": "1Gi",
		"hugepages-2Mi": "4Mi", "requests.hugepages-2Mi": "4Mi",
		"requests.example.com/gpu": "1",
	}
	if diff := cmp.Diff(want, strs(PodUsage(pod))); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if !PodCharged(pod, now) {
		t.Error("a running pod is not charged")
	}
	done := pod.DeepCopy()
	done.Status.Phase = corev1.PodFailed
	if PodCharged(done, now) {
		t.Error("a failed pod is charged")
	}
	stuck := pod.DeepCopy()
	stuck.DeletionTimestamp = &metav1.Time{Time: now.Add(-time.Minute)}
	stuck.DeletionGracePeriodSeconds = ptr.To[int64](30)
	if PodCharged(stuck, now) {
		t.Error("a pod stuck terminating past its grace period is charged")
	}
}

func TestPriorityClassScope(t *testing.T) {
	withClass := &corev1.Pod{Spec: corev1.PodSpec{PriorityClassName: "high"}}
	without := &corev1.Pod{}
	req := func(op corev1.ScopeSelectorOperator, values ...string) corev1.ScopedResourceSelectorRequirement {
		return corev1.ScopedResourceSelectorRequirement{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: op, Values: values}
	}
	tests := []struct {
		name          string
		req           corev1.ScopedResourceSelectorRequirement
		class, noClss bool
	}{
		{"In", req(corev1.ScopeSelectorOpIn, "high"), true, false},
		{"NotIn", req(corev1.ScopeSelectorOpNotIn, "high"), false, true},
		{"Exists matches only pods naming a class", req(corev1.ScopeSelectorOpExists), true, false},
		{"DoesNotExist matches only pods naming none", req(corev1.ScopeSelectorOpDoesNotExist), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PodMatchesScope(withClass, tt.req); got != tt.class {
				t.Errorf("pod with a class: %v", got)
			}
			if got := PodMatchesScope(without, tt.req); got != tt.noClss {
				t.Errorf("pod without a class: %v", got)
			}
		})
	}
}

func TestServiceUsage(t *testing.T) {
	ports := []corev1.ServicePort{{Port: 1, NodePort: 30001}, {Port: 2}}
	tests := []struct {
		name string
		svc  corev1.ServiceSpec
		want map[string]string
	}{
		{"ClusterIP", corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: ports},
			map[string]string{"services": "1", "count/services": "1", "services.loadbalancers": "0", "services.nodeports": "0"}},
		{"NodePort uses a node port per port", corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Ports: ports},
			map[string]string{"services": "1", "count/services": "1", "services.loadbalancers": "0", "services.nodeports": "2"}},
		{"a LoadBalancer without node ports counts the explicit ones", corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: ports, AllocateLoadBalancerNodePorts: ptr.To(false)},
			map[string]string{"services": "1", "count/services": "1", "services.loadbalancers": "1", "services.nodeports": "1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, strs(ServiceUsage(&corev1.Service{Spec: tt.svc}))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestClaimUsage(t *testing.T) {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"volume.beta.kubernetes.io/storage-class": "gold"}},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To("silver"),
			Resources:        corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
		Status: corev1.PersistentVolumeClaimStatus{AllocatedResources: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("2Gi")}},
	}
	want := map[string]string{
		"persistentvolumeclaims": "1", "count/persistentvolumeclaims": "1",
		"gold.storageclass.storage.k8s.io/persistentvolumeclaims": "1",
		"requests.storage": "2Gi", "gold.storageclass.storage.k8s.io/requests.storage": "2Gi",
	}
	if diff := cmp.Diff(want, strs(ClaimUsage(pvc))); diff != "" {
		t.Errorf("the beta annotation names the class, allocated storage wins (-want +got):\n%s", diff)
	}
	for name, want := range map[corev1.ResourceName]bool{
		"persistentvolumeclaims": true, "requests.storage": true, "count/persistentvolumeclaims": true,
		"gold.storageclass.storage.k8s.io/requests.storage": true, "gold.storageclass.storage.k8s.io/persistentvolumeclaims": true,
		"storage": false, "gold.storageclass.storage.k8s.io/other": false,
	} {
		if got := IsClaimName(name); got != want {
			t.Errorf("IsClaimName(%s) = %v, want %v", name, got, want)
		}
	}
}
