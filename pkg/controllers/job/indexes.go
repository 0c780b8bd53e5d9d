package job

import (
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// Labels, annotations and the finalizer the controller puts on pods.
const (
	// TrackingFinalizer keeps a Job's finished pod until the controller
	// has counted it in the Job's status.
	TrackingFinalizer = batchv1.JobTrackingFinalizer
	// CompletionIndexKey is the annotation and label holding an Indexed
	// Job pod's completion index.
	CompletionIndexKey = batchv1.JobCompletionIndexAnnotation
	// IndexFailureCountKey counts the earlier failures of the pod's index
	// (Jobs with backoffLimitPerIndex).
	IndexFailureCountKey = batchv1.JobIndexFailureCountAnnotation
	// IndexIgnoredFailureCountKey counts the earlier failures of the
	// pod's index that the pod failure policy ignored.
	IndexIgnoredFailureCountKey = batchv1.JobIndexIgnoredFailureCountAnnotation
	// completionIndexEnv is the environment variable giving a container
	// its index.
	completionIndexEnv = "JOB_COMPLETION_INDEX"
)

// noIndex is the index of a pod that has none, or an invalid one.
const noIndex = -1

// indexSet is a set of completion indexes.
type indexSet map[int]struct{}

// parseIndexes reads an interval list such as "1,3-5,7"; invalid parts and
// indexes at or beyond limit (when limit >= 0) are skipped.
func parseIndexes(s string, limit int) indexSet {
	out := indexSet{}
	if s == "" {
		return out
	}
	for part := range strings.SplitSeq(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil || a < 0 {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil || b < a {
				continue
			}
		}
		for i := a; i <= b && (limit < 0 || i < limit); i++ {
			out[i] = struct{}{}
		}
	}
	return out
}

func (s indexSet) has(i int) bool { _, ok := s[i]; return ok }

func (s indexSet) add(i int) { s[i] = struct{}{} }

// String formats the set as Kubernetes writes completedIndexes and
// failedIndexes: ascending, comma-separated, consecutive indexes joined
// into one "first-last" interval.
func (s indexSet) String() string {
	if len(s) == 0 {
		return ""
	}
	idx := make([]int, 0, len(s))
	for i := range s {
		idx = append(idx, i)
	}
	slices.Sort(idx)
	var b strings.Builder
	for i := 0; i < len(idx); {
		j := i
		for j+1 < len(idx) && idx[j+1] == idx[j]+1 {
			j++
		}
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(idx[i]))
		if j > i {
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(idx[j]))
		}
		i = j + 1
	}
	return b.String()
}

// indexOf is a pod's completion index from its annotation (or, failing
// that, its label), or noIndex.
func indexOf(pod *corev1.Pod) int {
	v, ok := pod.Annotations[CompletionIndexKey]
	if !ok {
		v, ok = pod.Labels[CompletionIndexKey]
	}
	if !ok {
		return noIndex
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 {
		return noIndex
	}
	return i
}

// validIndex reports whether pod has an index below completions.
func validIndex(pod *corev1.Pod, completions int) (int, bool) {
	i := indexOf(pod)
	return i, i != noIndex && i < completions
}

// annotationCount reads a non-negative counter annotation, 0 if absent.
func annotationCount(pod *corev1.Pod, key string) int {
	n, err := strconv.Atoi(pod.Annotations[key])
	if err != nil || n < 0 {
		return 0
	}
	return n
}
