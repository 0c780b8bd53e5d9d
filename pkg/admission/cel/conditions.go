package cel

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/authorization"
)

// NewConditionCompiler returns the compiler of webhooks' matchConditions:
// their expressions see object, oldObject, request, namespaceObject
// (null) and authorizer, which asks authz about the requesting user (nil
// authz allows everything, as admission.Config's nil Authorizer does).
func NewConditionCompiler(authz authorization.Authorizer) admission.ConditionCompiler {
	if authz == nil {
		authz = AllowAll
	}
	return func(conditions []admissionregistrationv1.MatchCondition) (admission.ConditionMatcher, error) {
		c, err := NewCompiler(Options{})
		if err != nil {
			return nil, err
		}
		compiled := c.CompileConditions(conditions)
		if err := compiled.Err(); err != nil {
			return nil, err
		}
		return &Conditions{compiler: c, conditions: compiled, authz: authz}, nil
	}
}

// AllowAll is the authorizer of servers that authorize every request.
var AllowAll authorization.Authorizer = authorization.AuthorizerFunc(func(context.Context, authorization.Attributes) (authorization.Decision, string, error) {
	return authorization.DecisionAllow, "", nil
})

// CompiledConditions are compiled matchConditions; they are safe for
// concurrent use.
type CompiledConditions struct {
	list []namedProgram
}

// CompileConditions compiles matchConditions (expressions that must be
// bool); compile errors are kept, see Err.
func (c *Compiler) CompileConditions(conditions []admissionregistrationv1.MatchCondition) *CompiledConditions {
	out := &CompiledConditions{}
	for _, mc := range conditions {
		out.list = append(out.list, namedProgram{name: mc.Name, prog: c.Compile(mc.Expression, cel.BoolType)})
	}
	return out
}

// Len returns the number of conditions.
func (cc *CompiledConditions) Len() int { return len(cc.list) }

// Err returns the compile errors of the conditions, naming them, or nil.
func (cc *CompiledConditions) Err() error {
	var errs []error
	for _, np := range cc.list {
		if err := np.prog.Err(); err != nil {
			errs = append(errs, fmt.Errorf("matchCondition %q: %w", np.name, err))
		}
	}
	return errors.Join(errs...)
}

// Conditions are compiled matchConditions. They are safe for concurrent
// use.
type Conditions struct {
	compiler   *Compiler
	conditions *CompiledConditions
	authz      authorization.Authorizer
}

var _ admission.ConditionMatcher = (*Conditions)(nil)

// Match evaluates the conditions as Kubernetes does: all must be true; a
// false one decides (its name is returned) even when others failed to
// evaluate; otherwise the evaluation errors, aggregated, are returned.
func (m *Conditions) Match(ctx context.Context, a *admission.Attributes, object, oldObject runtime.Object, request *admissionv1.AdmissionRequest) (bool, string, error) {
	var kind = a.Kind
	if request != nil {
		kind.Group, kind.Version, kind.Kind = request.Kind.Group, request.Kind.Version, request.Kind.Kind
	}
	obj, err := ObjectValue(object, kind)
	if err != nil {
		return false, "", fmt.Errorf("failed to prepare object variable for evaluation: %w", err)
	}
	old, err := ObjectValue(oldObject, kind)
	if err != nil {
		return false, "", fmt.Errorf("failed to prepare oldObject variable for evaluation: %w", err)
	}
	act := m.compiler.NewActivation(ctx, Input{
		Object:     obj,
		OldObject:  old,
		Request:    RequestValue(request),
		Authorizer: m.authz,
		User:       a.User,
		Resource:   ResourceOf(a),
	})
	return m.conditions.Match(act, RuntimeCostBudget)
}

// ResourceOf returns what authorizer.requestResource checks for a: the
// request's own resource, subresource, namespace and name.
func ResourceOf(a *admission.Attributes) ResourceAttributes {
	return ResourceAttributes{Group: a.Resource.Group, Resource: a.Resource.Resource, Subresource: a.Subresource, Namespace: a.Namespace, Name: a.Name}
}

// Match evaluates the conditions in act with budget, with the rules of
// Conditions.Match: all must be true, a false one decides (its name is
// returned), otherwise evaluation errors (compile errors included) are
// returned, aggregated.
func (cc *CompiledConditions) Match(act *Activation, budget int64) (bool, string, error) {
	var errs []error
	for _, c := range cc.list {
		out, left, err := c.prog.Eval(act, budget)
		if errors.Is(err, ErrOutOfBudget) {
			return false, "", err
		}
		budget = left
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if out == types.False {
			return false, c.name, nil
		}
		if out != types.True {
			errs = append(errs, fmt.Errorf("expression '%v' resulted in error: expected a bool, got %v", c.prog.Expression, out.Type().TypeName()))
		}
	}
	if len(errs) > 0 {
		return false, "", utilerrors.NewAggregate(errs)
	}
	return true, "", nil
}
