package apiextensions

import (
	"fmt"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
)

// AcceptNames decides, as kube-apiserver's naming controller does, which of
// crd's requested names it may use given the names the other CRDs of its
// group have been granted (their status.acceptedNames): a name already
// granted to crd stays granted; a new one is granted when no other CRD
// holds it. It returns the accepted names and the NamesAccepted and
// Established conditions crd should have (without transition times).
// Established, once True, stays True.
func AcceptNames(crd *CRD, others []*CRD) (apiextensionsv1.CustomResourceDefinitionNames, []apiextensionsv1.CustomResourceDefinitionCondition) {
	resources, kinds := map[string]bool{}, map[string]bool{}
	for _, o := range others {
		if o.Name == crd.Name || o.Spec.Group != crd.Spec.Group {
			continue
		}
		n := o.Status.AcceptedNames
		for _, r := range append([]string{n.Plural, n.Singular}, n.ShortNames...) {
			if r != "" {
				resources[r] = true
			}
		}
		for _, k := range []string{n.Kind, n.ListKind} {
			if k != "" {
				kinds[k] = true
			}
		}
	}
	requested, accepted := crd.Spec.Names, crd.Status.AcceptedNames
	out := accepted
	cond := apiextensionsv1.CustomResourceDefinitionCondition{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionUnknown}
	conflict := func(reason string, err error) {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionFalse, reason, err.Error()
	}
	if err := freshOrAccepted(requested.Plural, accepted.Plural, resources); err != nil {
		conflict("PluralConflict", err)
	} else {
		out.Plural = requested.Plural
	}
	if err := freshOrAccepted(requested.Singular, accepted.Singular, resources); err != nil {
		conflict("SingularConflict", err)
	} else {
		out.Singular = requested.Singular
	}
	if !slices.Equal(requested.ShortNames, accepted.ShortNames) {
		var msgs []string
		for _, s := range requested.ShortNames {
			if !slices.Contains(accepted.ShortNames, s) && resources[s] {
				msgs = append(msgs, fmt.Sprintf("%q is already in use", s))
			}
		}
		if len(msgs) > 0 {
			conflict("ShortNamesConflict", fmt.Errorf("%s", strings.Join(msgs, ", ")))
		} else {
			out.ShortNames = requested.ShortNames
		}
	}
	if err := freshOrAccepted(requested.Kind, accepted.Kind, kinds); err != nil {
		conflict("KindConflict", err)
	} else {
		out.Kind = requested.Kind
	}
	if err := freshOrAccepted(requested.ListKind, accepted.ListKind, kinds); err != nil {
		conflict("ListKindConflict", err)
	} else {
		out.ListKind = requested.ListKind
	}
	out.Categories = requested.Categories
	if cond.Status == apiextensionsv1.ConditionUnknown {
		cond.Status, cond.Reason, cond.Message = apiextensionsv1.ConditionTrue, "NoConflicts", "no conflicts found"
	}

	established := apiextensionsv1.CustomResourceDefinitionCondition{
		Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionFalse,
		Reason: "NotAccepted", Message: "not all names are accepted",
	}
	if old := FindCondition(crd, apiextensionsv1.Established); old != nil {
		established = *old
	}
	if established.Status != apiextensionsv1.ConditionTrue && cond.Status == apiextensionsv1.ConditionTrue {
		// One server establishes at once: nothing else must agree first.
		established = apiextensionsv1.CustomResourceDefinitionCondition{
			Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue,
			Reason: "InitialNamesAccepted", Message: "the initial names have been accepted",
		}
	}
	return out, []apiextensionsv1.CustomResourceDefinitionCondition{cond, established}
}

// freshOrAccepted allows a requested name that is already crd's or that no
// other CRD holds.
func freshOrAccepted(requested, accepted string, used map[string]bool) error {
	if requested == accepted || !used[requested] {
		return nil
	}
	return fmt.Errorf("%q is already in use", requested)
}
