package deployment

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	"github.com/davecgh/go-spew/spew"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/rand"
)

// ComputeHash returns the pod-template-hash of template: FNV-32a over the
// template printed by go-spew (%#v, sorted map keys, no Stringer methods),
// followed by collisionCount as 8 little-endian bytes when it is set, the
// decimal sum encoded with rand.SafeEncodeString. This is the algorithm
// Kubernetes uses, so the same template (with the same defaults filled in
// and the same k8s.io/api types) hashes to the same name on both.
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	printer := spew.ConfigState{Indent: " ", SortKeys: true, DisableMethods: true, SpewKeys: true}
	printer.Fprintf(h, "%#v", *template)
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		_, _ = h.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(h.Sum32()))
}

// equalIgnoreHash reports whether two pod templates are semantically equal
// once the pod-template-hash label is removed from both.
func equalIgnoreHash(a, b *corev1.PodTemplateSpec) bool {
	a1, b1 := a.DeepCopy(), b.DeepCopy()
	delete(a1.Labels, PodTemplateHashLabel)
	delete(b1.Labels, PodTemplateHashLabel)
	if len(a1.Labels) == 0 {
		a1.Labels = nil
	}
	if len(b1.Labels) == 0 {
		b1.Labels = nil
	}
	return apiequality.Semantic.DeepEqual(a1, b1)
}
