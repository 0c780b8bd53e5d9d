package website

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/client"
)

// GroupVersion is the API group and version of Website, as
// config/crd/websites.yaml serves it.
var GroupVersion = schema.GroupVersion{Group: "examples.kplane.dev", Version: "v1alpha1"}

// websiteKind is the kind of Website, for ownerReferences and events.
var websiteKind = GroupVersion.WithKind("Website")

// Websites describes the websites resource for kplane's typed clients
// and informers.
var Websites = client.Resource[*Website]{
	GroupVersionResource: GroupVersion.WithResource("websites"),
	Kind:                 "Website",
	Namespaced:           true,
}

// Website is a container image served by a Deployment of the same name.
type Website struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   WebsiteSpec   `json:"spec"`
	Status WebsiteStatus `json:"status,omitempty"`
}

// WebsiteSpec is what the user asks for. The API server fills in the
// defaults and checks the bounds the CRD's schema declares, so a
// Website read from the server has Replicas and Port set.
type WebsiteSpec struct {
	// Image is the container image, with a tag. Required.
	Image string `json:"image"`
	// Replicas is the number of pods, 0 to 10. Default 1.
	Replicas *int32 `json:"replicas,omitempty"`
	// Port is the port the container listens on. Default 8080.
	Port *int32 `json:"port,omitempty"`
}

// WebsiteStatus is what the operator last saw of the site's Deployment.
type WebsiteStatus struct {
	// ObservedGeneration is the generation of the spec this status
	// describes.
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ReadyReplicas is the Deployment's count of ready pods.
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Conditions are Ready and Progressing, in Kubernetes' condition
	// conventions.
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// WebsiteList is a list of Websites.
type WebsiteList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Website `json:"items"`
}

// DeepCopy returns a copy of w that shares no memory with it.
func (w *Website) DeepCopy() *Website {
	if w == nil {
		return nil
	}
	out := &Website{TypeMeta: w.TypeMeta, ObjectMeta: *w.ObjectMeta.DeepCopy()}
	out.Spec = WebsiteSpec{Image: w.Spec.Image, Replicas: copyInt32(w.Spec.Replicas), Port: copyInt32(w.Spec.Port)}
	out.Status = w.Status
	if w.Status.Conditions != nil {
		out.Status.Conditions = make([]metav1.Condition, len(w.Status.Conditions))
		for i := range w.Status.Conditions {
			w.Status.Conditions[i].DeepCopyInto(&out.Status.Conditions[i])
		}
	}
	return out
}

// DeepCopyObject implements runtime.Object.
func (w *Website) DeepCopyObject() runtime.Object {
	if w == nil {
		return nil
	}
	return w.DeepCopy()
}

// DeepCopyObject implements runtime.Object.
func (l *WebsiteList) DeepCopyObject() runtime.Object {
	if l == nil {
		return nil
	}
	out := &WebsiteList{TypeMeta: l.TypeMeta, ListMeta: *l.ListMeta.DeepCopy()}
	if l.Items != nil {
		out.Items = make([]Website, len(l.Items))
		for i := range l.Items {
			out.Items[i] = *l.Items[i].DeepCopy()
		}
	}
	return out
}

// AddToScheme registers Website and WebsiteList in s, for the event
// recorder to find the kind of a Website whose TypeMeta is empty.
func AddToScheme(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, &Website{}, &WebsiteList{})
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}

// replicasOf is the spec's replica count, with the schema's default.
func replicasOf(w *Website) int32 {
	if w.Spec.Replicas == nil {
		return 1
	}
	return *w.Spec.Replicas
}

// portOf is the spec's port, with the schema's default.
func portOf(w *Website) int32 {
	if w.Spec.Port == nil {
		return 8080
	}
	return *w.Spec.Port
}

func copyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
