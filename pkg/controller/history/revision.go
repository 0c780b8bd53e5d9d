package history

import (
	"bytes"
	"fmt"
	"hash/fnv"
	"maps"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// HashLabel is the label that holds the hash of a revision's data (and the
// collision count it was created with).
const HashLabel = "controller.kubernetes.io/hash"

// maxPrefixLength keeps a revision name, prefix + "-" + hash, within the
// 253 characters of a DNS subdomain.
const maxPrefixLength = 223

// Hash returns the hash of revision's data as Kubernetes computes it:
// FNV-32 over data.raw, or over the dumped data.object when that is set,
// followed by the decimal collisionCount when it is not nil, the decimal
// sum encoded with rand.SafeEncodeString.
func Hash(revision *appsv1.ControllerRevision, collisionCount *int32) string {
	h := fnv.New32()
	if len(revision.Data.Raw) > 0 {
		_, _ = h.Write(revision.Data.Raw)
	}
	if revision.Data.Object != nil {
		// As Kubernetes does: an object replaces the raw bytes in the hash.
		h.Reset()
		_, _ = fmt.Fprintf(h, "%v", dump.ForHash(revision.Data.Object))
	}
	if collisionCount != nil {
		_, _ = h.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// Name returns the name of the revision of prefix (the parent's name) with
// hash: prefix-hash, the prefix cut to 223 bytes.
func Name(prefix, hash string) string {
	if len(prefix) > maxPrefixLength {
		prefix = prefix[:maxPrefixLength]
	}
	return prefix + "-" + hash
}

// NewControllerRevision returns a revision of parent, of kind parentKind,
// holding data as revision number revision: labelled with templateLabels
// and the hash label, controlled by parent, in parent's namespace, named
// after parent and the hash of data and collisionCount. It is not created.
func NewControllerRevision(parent metav1.Object, parentKind schema.GroupVersionKind, templateLabels map[string]string, data runtime.RawExtension, revision int64, collisionCount *int32) *appsv1.ControllerRevision {
	labels := make(map[string]string, len(templateLabels)+1)
	maps.Copy(labels, templateLabels)
	cr := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       parent.GetNamespace(),
			Labels:          labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(parent, parentKind)},
		},
		Data:     data,
		Revision: revision,
	}
	hash := Hash(cr, collisionCount)
	cr.Name = Name(parent.GetName(), hash)
	cr.Labels[HashLabel] = hash
	return cr
}

// EqualRevision reports whether a and b are both nil, or both hold the same
// data.
func EqualRevision(a, b *appsv1.ControllerRevision) bool {
	if a == nil || b == nil {
		return a == b
	}
	return bytes.Equal(a.Data.Raw, b.Data.Raw) && apiequality.Semantic.DeepEqual(a.Data.Object, b.Data.Object)
}

// FindEqualRevisions returns the revisions of revisions that hold the same
// data as needle, in the order given.
func FindEqualRevisions(revisions []*appsv1.ControllerRevision, needle *appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	for _, r := range revisions {
		if EqualRevision(r, needle) {
			out = append(out, r)
		}
	}
	return out
}

// SortControllerRevisions sorts revisions in place by revision number,
// then creation time, then name.
func SortControllerRevisions(revisions []*appsv1.ControllerRevision) {
	sort.SliceStable(revisions, func(i, j int) bool {
		a, b := revisions[i], revisions[j]
		if a.Revision != b.Revision {
			return a.Revision < b.Revision
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

// NextRevision returns the revision number that follows the highest of
// revisions: 1 for none.
func NextRevision(revisions []*appsv1.ControllerRevision) int64 {
	var top int64
	for _, r := range revisions {
		top = max(top, r.Revision)
	}
	return top + 1
}
