package policy

import (
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	admissioncel "github.com/kplane/kplane/pkg/admission/cel"
)

// compiledMutating is a MutatingAdmissionPolicy's expressions, compiled
// once per version of the policy. As for validating policies, compile
// errors stay in the programs, for the failurePolicy to decide.
type compiledMutating struct {
	compiler        *admissioncel.Compiler
	matchConditions *admissioncel.CompiledConditions
	// mutations are in the policy's order; one per mutation.
	mutations []compiledMutation
	// err is set when no environment could be built at all.
	err error
}

type compiledMutation struct {
	patchType admissionregistrationv1.PatchType
	// expr is nil for a mutation without the expression of its type
	// (which validation refuses).
	expr *admissioncel.Program
}

// compileMutating compiles spec's variables (first, in order), its
// matchConditions and its mutations, each typed as its patchType wants.
func compileMutating(spec *admissionregistrationv1.MutatingAdmissionPolicySpec) *compiledMutating {
	c, conds, err := newPolicyCompiler(admissioncel.Options{Params: spec.ParamKind != nil, Composition: true, Mutation: true}, spec.Variables, spec.MatchConditions)
	if err != nil {
		return &compiledMutating{err: err}
	}
	out := &compiledMutating{compiler: c, matchConditions: conds}
	for _, m := range spec.Mutations {
		cm := compiledMutation{patchType: m.PatchType}
		switch {
		case m.PatchType == admissionregistrationv1.PatchTypeJSONPatch && m.JSONPatch != nil:
			cm.expr = c.Compile(m.JSONPatch.Expression, admissioncel.JSONPatchListType)
		case m.PatchType == admissionregistrationv1.PatchTypeApplyConfiguration && m.ApplyConfiguration != nil:
			cm.expr = c.Compile(m.ApplyConfiguration.Expression, admissioncel.ApplyConfigurationType)
		}
		out.mutations = append(out.mutations, cm)
	}
	return out
}

// errMissingExpression is the error of a mutation without the expression
// its patchType needs.
func errMissingExpression(pt admissionregistrationv1.PatchType) error {
	return fmt.Errorf("unsupported patch type %q or missing expression", pt)
}
