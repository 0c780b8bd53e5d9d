package admission

import (
	"fmt"
	"sync"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kplane/kplane/pkg/authentication"
)

// Operation is what a request does to its object, in admission's words.
type Operation string

// The operations of admission.k8s.io.
const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// Attributes describe the request admission decides on. Mutating plugins
// change Object in place or replace it (the server stores what Object is
// when the chain returns); everything else is read-only. Attributes are
// used by one request at a time, but the warning and annotation methods
// are safe for concurrent use (webhooks of one chain run in parallel).
type Attributes struct {
	Operation Operation
	// Kind is the kind of Object and OldObject at the version the request
	// was made in: for the scale subresource autoscaling/v1 Scale, for
	// pods/binding v1 Binding.
	Kind schema.GroupVersionKind
	// Resource is the resource the request was made to, at its version.
	Resource    schema.GroupVersionResource
	Subresource string
	Namespace   string
	// Name is the object's name; on CREATE it may be empty (generateName).
	Name string
	// Object is the new state: the object to create, or the one an update
	// would store. It is nil for DELETE. Built-in resources are their Go
	// types (*corev1.Pod), custom resources *unstructured.Unstructured.
	Object runtime.Object
	// OldObject is the stored object an UPDATE or DELETE changes; nil for
	// CREATE.
	OldObject runtime.Object
	// Options are the request's options: *metav1.CreateOptions,
	// *metav1.UpdateOptions, *metav1.PatchOptions or *metav1.DeleteOptions.
	Options runtime.Object
	// DryRun is set when nothing will be stored: plugins must not have
	// side effects then (webhooks without sideEffects None|NoneOnDryRun
	// are not called; the request fails).
	DryRun bool
	// User is who sends the request.
	User *authentication.User
	// UID identifies the request, for webhooks and audit.
	UID types.UID
	// Objects converts and creates objects for the plugins.
	Objects ObjectInterfaces

	mu          sync.Mutex
	warnings    []string
	annotations map[string]string
	reinvoke    bool
	reinvoked   map[string]bool
	state       map[string]any
}

// AddWarning records a warning for the client (a Warning header, as
// Kubernetes sends).
func (a *Attributes) AddWarning(msg string) {
	a.mu.Lock()
	a.warnings = append(a.warnings, msg)
	a.mu.Unlock()
}

// Warnings returns the warnings recorded so far.
func (a *Attributes) Warnings() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.warnings...)
}

// AddAnnotation records an audit annotation. A key set once keeps its
// first value: setting it again to another value is an error, as in
// Kubernetes.
func (a *Attributes) AddAnnotation(key, value string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if old, ok := a.annotations[key]; ok && old != value {
		return fmt.Errorf("admission annotations are not allowed to be overwritten, key:%q, old value: %q, new value:%q", key, old, value)
	}
	if a.annotations == nil {
		a.annotations = map[string]string{}
	}
	a.annotations[key] = value
	return nil
}

// Annotations returns a copy of the audit annotations recorded so far.
func (a *Attributes) Annotations() map[string]string {
	a.mu.Lock()
	defer a.mu.Unlock()
	out := make(map[string]string, len(a.annotations))
	for k, v := range a.annotations {
		out[k] = v
	}
	return out
}

// SetReinvocationRequested asks the chain to run the mutating plugins
// that want reinvocation (reinvocationPolicy IfNeeded) once more: a later
// plugin changed the object after they saw it.
func (a *Attributes) SetReinvocationRequested() {
	a.mu.Lock()
	a.reinvoke = true
	a.mu.Unlock()
}

// IsReinvoke reports whether the chain is running its mutating plugins a
// second time.
func (a *Attributes) IsReinvoke() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reinvoked != nil
}

// MarkReinvoked remembers that key (a webhook's configuration and name)
// was reinvoked; it reports false if it already was.
func (a *Attributes) MarkReinvoked(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.reinvoked[key] {
		return false
	}
	if a.reinvoked == nil {
		a.reinvoked = map[string]bool{}
	}
	a.reinvoked[key] = true
	return true
}

// PluginState returns what a plugin stored under key for this request
// with SetPluginState (nil if nothing): state a plugin keeps from the
// first run of the mutating plugins to the reinvocation.
func (a *Attributes) PluginState(key string) any {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.state[key]
}

// SetPluginState stores v under key for the rest of the request.
func (a *Attributes) SetPluginState(key string, v any) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.state == nil {
		a.state = map[string]any{}
	}
	a.state[key] = v
}

// ObjectInterfaces is what the server offers plugins to handle objects of
// any resource it serves.
type ObjectInterfaces interface {
	// ConvertTo returns a copy of obj at gvk, another version of the same
	// group and kind (a webhook registered for another version).
	ConvertTo(obj runtime.Object, gvk schema.GroupVersionKind) (runtime.Object, error)
	// EquivalentResources returns the resources that serve the objects of
	// gvr and subresource at other versions or groups (the versions of a
	// CRD, v1 and v2 of horizontalpodautoscalers), each with the kind its
	// objects have there; gvr itself is not in the result.
	EquivalentResources(gvr schema.GroupVersionResource, subresource string) []Equivalent
}

// Equivalent is a resource and the kind of its objects.
type Equivalent struct {
	Resource schema.GroupVersionResource
	Kind     schema.GroupVersionKind
}
