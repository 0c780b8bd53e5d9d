package registry

import (
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The optional behaviours a Strategy may have beyond the Strategy
// interface. The API server tests for each with a type assertion.

// Pruner is a Strategy whose objects are decoded without a Go type
// (custom resources): the fields its schema does not know are found only
// after decoding.
type Pruner interface {
	// Prune removes from obj the fields its schema does not specify and
	// returns their paths ("spec.foo"), sorted, for field validation to
	// warn about or refuse.
	Prune(obj runtime.Object) []string
}

// TableConvertor is a Strategy with its own table columns (custom
// resources' additionalPrinterColumns).
type TableConvertor interface {
	// ConvertToTable returns the Table of obj, one object or a list of the
	// resource, with ages measured up to now.
	ConvertToTable(obj runtime.Object, now time.Time, opts metav1.TableOptions) (*metav1.Table, error)
}

// DeletePreparer is a Strategy whose objects change when a delete first
// marks them for deletion (a CustomResourceDefinition gets its cleanup
// finalizer and a Terminating condition).
type DeletePreparer interface {
	// PrepareForDelete changes obj, the stored state without a
	// deletionTimestamp, into the state a delete marks at now.
	PrepareForDelete(obj runtime.Object, now time.Time)
}

// Deprecated is a Strategy whose resource kube-apiserver serves with a
// deprecation warning on every request (core/v1 Endpoints).
type Deprecated interface {
	// DeprecationWarning returns the warning.
	DeprecationWarning() string
}

// Warner is a Strategy that warns about objects it accepts, as
// kube-apiserver's WarningsOnCreate and WarningsOnUpdate do.
type Warner interface {
	// Warnings returns the warnings for obj, as stored by a write.
	Warnings(obj runtime.Object) []string
}

// VersionConverter is a Strategy that serves a resource in a version other
// than the one its objects are stored in, as kube-apiserver serves
// autoscaling/v1 HorizontalPodAutoscalers from the autoscaling/v2 store.
// The server gives it the store of the Strategy whose Info().GVK is
// StorageGVK (which must be served too) and converts every object on its
// way in and out, so both versions read and write the same objects.
type VersionConverter interface {
	// StorageGVK is the kind of the Strategy whose store holds the objects.
	StorageGVK() schema.GroupVersionKind
	// ToStorage returns obj, of this Strategy's type, as an object of the
	// storage Strategy's type. It must not keep or change obj.
	ToStorage(obj runtime.Object) (runtime.Object, error)
	// FromStorage returns obj, of the storage Strategy's type, as an object
	// of this Strategy's type. It must not keep or change obj.
	FromStorage(obj runtime.Object) (runtime.Object, error)
}

// Subresourcer is a Strategy with subresources beyond status and scale
// through which a PUT or PATCH writes part of an object, as status does
// (certificatesigningrequests/approval). A GET of one answers the object.
type Subresourcer interface {
	// Subresources names the extra subresources.
	Subresources() []string
	// PrepareForSubresourceUpdate returns the state to store for a write of
	// obj through subresource, as PrepareForStatusUpdate does for status:
	// obj with what that subresource may not change reset to old's, and
	// old's generation. The caller then validates it with ValidateUpdate.
	PrepareForSubresourceUpdate(subresource string, obj, old runtime.Object) runtime.Object
}

// RequestorSetter is a Strategy whose new objects record who asked for
// them, as kube-apiserver records the authenticated user in a
// CertificateSigningRequest's spec.
type RequestorSetter interface {
	// SetRequestor replaces in obj, a new object, whatever the client said
	// about its requestor with user.
	SetRequestor(obj runtime.Object, user authenticationv1.UserInfo)
}

// DeleteGuard is a Strategy with objects a delete request may not remove
// (the system priority classes), which kube-apiserver refuses as Forbidden.
type DeleteGuard interface {
	// CheckDelete returns why the object name in namespace may not be
	// deleted, or nil.
	CheckDelete(namespace, name string) error
}
