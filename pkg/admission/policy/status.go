package policy

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"

	"github.com/kplane/kplane/pkg/admission"
	admissioncel "github.com/kplane/kplane/pkg/admission/cel"
)

// StatusInterval is how often RunStatus looks for policies whose status
// is behind their generation.
const StatusInterval = time.Second

// maxTypesToCheck bounds the kinds a policy's expressions are checked
// against, as in Kubernetes.
const maxTypesToCheck = 10

// RunStatus writes the status of ValidatingAdmissionPolicies, as
// Kubernetes' type-checking controller does: for every policy whose
// generation is newer than status.observedGeneration, it sets
// status.observedGeneration and status.typeChecking (the expressions of
// spec.validations, and their messageExpressions, that do not compile
// against the kinds the policy's rules name; kplane resolves no schemas,
// so only what fails without them is reported). Conditions are left as
// they are. It runs every StatusInterval (on cfg.Clock) until ctx is done,
// in the caller's goroutine, and returns ctx's error.
func RunStatus(ctx context.Context, cfg *admission.Config) error {
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	var lastRev uint64
	var synced bool
	for {
		rev, err := syncStatus(ctx, cfg, lastRev, synced)
		if err == nil {
			lastRev, synced = rev, true
		} else if cfg.Logger != nil {
			cfg.Logger.Warn("updating the status of validatingadmissionpolicies", "err", err)
		}
		t := clk.NewTimer(StatusInterval)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
	}
}

// SyncStatus updates, once, the status of every policy that is behind its
// generation (see RunStatus).
func SyncStatus(ctx context.Context, cfg *admission.Config) error {
	_, err := syncStatus(ctx, cfg, 0, false)
	return err
}

func syncStatus(ctx context.Context, cfg *admission.Config, lastRev uint64, synced bool) (uint64, error) {
	if cfg == nil || cfg.Source == nil {
		return 0, fmt.Errorf("ValidatingAdmissionPolicy status needs a Source")
	}
	objs, rev, err := cfg.Source.List(ctx, policiesResource, "")
	if err != nil {
		return 0, err
	}
	if synced && rev == lastRev {
		return rev, nil
	}
	var errs []error
	for _, o := range objs {
		p, ok := o.(*admissionregistrationv1.ValidatingAdmissionPolicy)
		if !ok || p.Generation <= p.Status.ObservedGeneration {
			continue
		}
		updated := p.DeepCopy()
		updated.Status.ObservedGeneration = p.Generation
		updated.Status.TypeChecking = &admissionregistrationv1.TypeChecking{ExpressionWarnings: TypeCheck(p, cfg.Resolver)}
		if _, err := cfg.Source.UpdateStatus(ctx, policiesResource, updated); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("policy %s: %w", p.Name, err))
		}
	}
	if len(errs) > 0 {
		// try again next time, even if nothing changes
		return rev, errs[0]
	}
	return rev, nil
}

// TypeCheck returns the type-checking warnings of policy, as
// status.typeChecking.expressionWarnings shows them: per expression of
// spec.validations (and messageExpression), the kinds it does not compile
// against, "<kind>: <issues>". Kinds are those served for the policy's
// resource rules (no wildcards, no subresources; at most ten).
func TypeCheck(policy *admissionregistrationv1.ValidatingAdmissionPolicy, resolver admission.Resolver) []admissionregistrationv1.ExpressionWarning {
	kinds := typesToCheck(policy, resolver)
	if len(kinds) == 0 {
		return nil
	}
	compiler, err := admissioncel.NewCompiler(admissioncel.Options{Params: policy.Spec.ParamKind != nil, Composition: true})
	if err != nil {
		return nil
	}
	for _, v := range policy.Spec.Variables {
		compiler.AddVariable(v.Name, v.Expression)
	}
	check := func(expr string) string {
		err := compiler.Check(expr)
		if err == nil {
			return ""
		}
		// without schemas the result is the same for every kind
		var msgs []string
		for _, k := range kinds {
			msgs = append(msgs, fmt.Sprintf("%v: %s\n", k, err))
		}
		return strings.Join(msgs, "\n")
	}
	var warnings []admissionregistrationv1.ExpressionWarning
	path := field.NewPath("spec", "validations")
	for i, v := range policy.Spec.Validations {
		if w := check(v.Expression); w != "" {
			warnings = append(warnings, admissionregistrationv1.ExpressionWarning{FieldRef: path.Index(i).Child("expression").String(), Warning: w})
		}
		if v.MessageExpression == "" {
			continue
		}
		if w := check(v.MessageExpression); w != "" {
			warnings = append(warnings, admissionregistrationv1.ExpressionWarning{FieldRef: path.Index(i).Child("messageExpression").String(), Warning: w})
		}
	}
	return warnings
}

// typesToCheck returns the kinds served for the resource rules of
// policy's matchConstraints, sorted, at most maxTypesToCheck.
func typesToCheck(policy *admissionregistrationv1.ValidatingAdmissionPolicy, resolver admission.Resolver) []schema.GroupVersionKind {
	mc := policy.Spec.MatchConstraints
	if resolver == nil || mc == nil || len(mc.ResourceRules) == 0 {
		return nil
	}
	served := resolver.Served()
	seen := map[schema.GroupVersionKind]bool{}
	var out []schema.GroupVersionKind
	for _, rule := range mc.ResourceRules {
		if slices.ContainsFunc(rule.APIGroups, hasWildcard) || slices.ContainsFunc(rule.APIVersions, hasWildcard) {
			continue
		}
		for _, res := range rule.Resources {
			if strings.ContainsAny(res, "*/") {
				continue
			}
			for _, s := range served {
				if s.Subresource != "" || s.Resource.Resource != res || !slices.Contains(rule.APIGroups, s.Resource.Group) ||
					!slices.Contains(rule.APIVersions, s.Resource.Version) || seen[s.Kind] {
					continue
				}
				seen[s.Kind] = true
				out = append(out, s.Kind)
				if len(out) == maxTypesToCheck {
					return sortKinds(out)
				}
			}
		}
	}
	return sortKinds(out)
}

func hasWildcard(s string) bool { return strings.Contains(s, "*") }

func sortKinds(kinds []schema.GroupVersionKind) []schema.GroupVersionKind {
	slices.SortFunc(kinds, func(a, b schema.GroupVersionKind) int {
		if c := strings.Compare(a.Group, b.Group); c != 0 {
			return c
		}
		if c := strings.Compare(a.Version, b.Version); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return kinds
}
