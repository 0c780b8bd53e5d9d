package fieldmanager

import (
	"fmt"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/merge"
)

// conflictError is the 409 answer to an apply that would change fields
// other managers own: one cause per field and manager, and the message
// kube-apiserver writes.
func conflictError(conflicts merge.Conflicts) *apierrors.StatusError {
	causes := make([]metav1.StatusCause, 0, len(conflicts))
	for _, c := range conflicts {
		causes = append(causes, metav1.StatusCause{
			Type:    metav1.CauseTypeFieldManagerConflict,
			Message: "conflict with " + describeManager(c.Manager),
			Field:   c.Path.String(),
		})
	}
	return apierrors.NewApplyConflict(causes, conflictMessage(conflicts))
}

func conflictMessage(conflicts merge.Conflicts) string {
	if len(conflicts) == 1 {
		return fmt.Sprintf("Apply failed with 1 conflict: conflict with %s: %s", describeManager(conflicts[0].Manager), conflicts[0].Path)
	}
	byManager := map[string][]string{}
	var ids []string
	for _, c := range conflicts {
		if _, seen := byManager[c.Manager]; !seen {
			ids = append(ids, c.Manager)
		}
		byManager[c.Manager] = append(byManager[c.Manager], c.Path.String())
	}
	slices.Sort(ids)
	var lines []string
	for _, id := range ids {
		lines = append(lines, "conflicts with "+describeManager(id)+":")
		for _, p := range byManager[id] {
			lines = append(lines, "- "+p)
		}
	}
	return fmt.Sprintf("Apply failed with %d conflicts: %s", len(conflicts), strings.Join(lines, "\n"))
}
