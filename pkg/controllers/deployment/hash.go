package deployment

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"io"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// ComputeHash returns the pod-template-hash of template: FNV-32a over
// dump.ForHash of the template (go-spew's %#v with sorted map keys and no
// Stringer methods), followed by collisionCount as 8 little-endian bytes
// when it is set, the decimal sum encoded with rand.SafeEncodeString.
// This is the algorithm Kubernetes uses, so a template hashes to the same
// value as on a cluster built with the same k8s.io/api version, provided
// the API server filled in the same defaults. (The printed form names every
// field of the Go types, so a k8s.io/api version that adds fields changes
// the hashes, on Kubernetes too.)
func ComputeHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	h := fnv.New32a()
	_, _ = io.WriteString(h, dump.ForHash(*template))
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
