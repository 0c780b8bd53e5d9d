package cel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"reflect"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/common/types/traits"
	"github.com/google/cel-go/interpreter"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
	kcel "github.com/kplane/kplane/pkg/cel"
)

// ErrOutOfBudget is wrapped by the error of an evaluation that spent the
// rest of its runtime cost budget: the evaluations sharing that budget stop.
var ErrOutOfBudget = errors.New("out of cost budget")

// RuntimeCostBudget is the cost budget the expressions evaluated for one
// binding (or one webhook's matchConditions) share, as in Kubernetes.
const RuntimeCostBudget = kcel.RuntimeCostBudget

// Program is a compiled expression. It is immutable and safe for
// concurrent use.
type Program struct {
	// Expression is the source.
	Expression string
	// OutputType is the type of the result; nil when it did not compile.
	OutputType *cel.Type

	prog cel.Program
	err  error
}

// Err returns the compile error, or nil.
func (p *Program) Err() error { return p.err }

// Eval evaluates p in act, charging its runtime cost (and that of the
// variables it reads first) to budget, and returns the result and the
// budget left. A compile or runtime error is returned as Kubernetes words
// it ("compilation error: ...", "expression '...' resulted in error:
// ..."); an evaluation that overspends budget returns an error wrapping
// ErrOutOfBudget.
func (p *Program) Eval(act *Activation, budget int64) (ref.Val, int64, error) {
	if p.err != nil {
		return nil, budget, fmt.Errorf("compilation error: %w", p.err)
	}
	out, details, err := p.prog.ContextEval(act.ctx, act)
	if c := act.takeVariablesCost(); c > 0 {
		if c > budget {
			return nil, -1, outOfBudget()
		}
		budget -= c
	}
	if details == nil || details.ActualCost() == nil {
		return nil, -1, fmt.Errorf("runtime cost could not be calculated for expression: %v, no further expression will be run: %w", p.Expression, ErrOutOfBudget)
	}
	if c := *details.ActualCost(); c > math.MaxInt64 || int64(c) > budget {
		return nil, -1, outOfBudget()
	} else {
		budget -= int64(c)
	}
	if err != nil {
		return nil, budget, fmt.Errorf("expression '%v' resulted in error: %v", p.Expression, err)
	}
	return out, budget, nil
}

type budgetError struct{}

func (budgetError) Error() string {
	return "validation failed due to running out of cost budget, no further validation rules will be run"
}

func (budgetError) Unwrap() error { return ErrOutOfBudget }

func outOfBudget() error { return budgetError{} }

// Input is what an evaluation sees. Objects are JSON-like values
// (map[string]any as runtime.DefaultUnstructuredConverter makes them) or
// nil, which expressions see as null.
type Input struct {
	Object, OldObject any
	// Params is the param object, nil when there is none.
	Params any
	// Namespace is the request's namespace object, nil for cluster-scoped
	// requests; it is seen with the fields Kubernetes declares.
	Namespace any
	// Request is the AdmissionRequest as Request returns it.
	Request map[string]any
	// Authorizer, when set, is what authorizer checks ask, for User;
	// without it authorizer and authorizer.requestResource are not bound
	// and expressions reading them fail.
	Authorizer authorization.Authorizer
	User       *authentication.User
	// Resource is the request's own resource, for
	// authorizer.requestResource.
	Resource ResourceAttributes
}

// ResourceAttributes name the object a request is for, as
// authorizer.requestResource checks it.
type ResourceAttributes struct {
	Group, Resource, Subresource, Namespace, Name string
}

// Activation binds the variables of one evaluation context: every
// expression of one binding and param (or one webhook) evaluated for one
// request. Variables are evaluated at most once in it. An Activation is
// used by one goroutine.
type Activation struct {
	// request and namespace are the typed values of in's.
	request, namespace ref.Val
	// ctx is the request's, kept for the duration of one evaluation
	// context so that authorizer checks and lazily evaluated variables
	// run under it.
	ctx        context.Context
	in         Input
	authorizer ref.Val
	resource   ref.Val
	variables  *variablesValue
	varsCost   int64
}

var _ interpreter.Activation = (*Activation)(nil)

// NewActivation returns the activation of in, for the programs of c.
func (c *Compiler) NewActivation(ctx context.Context, in Input) *Activation {
	act := &Activation{ctx: ctx, in: in, request: types.NullValue, namespace: types.NullValue}
	if in.Request != nil {
		act.request = requestType().Value(in.Request)
	}
	if in.Namespace != nil {
		if m, ok := in.Namespace.(map[string]any); !ok || m != nil {
			act.namespace = namespaceType().Value(in.Namespace)
		}
	}
	if in.Authorizer != nil {
		a := authorizerVal{ctx: ctx, authz: in.Authorizer, user: in.User}
		act.authorizer = a
		act.resource = resourceCheckVal{
			group:       groupCheckVal{authorizer: a, group: in.Resource.Group},
			resource:    in.Resource.Resource,
			subresource: in.Resource.Subresource,
			namespace:   in.Resource.Namespace,
			name:        in.Resource.Name,
		}
	}
	if c.vars != nil {
		act.variables = &variablesValue{act: act, compiled: c.variables, values: make([]ref.Val, len(c.variables))}
	}
	return act
}

// ResolveName implements interpreter.Activation.
func (a *Activation) ResolveName(name string) (any, bool) {
	switch name {
	case ObjectVar:
		return orNull(a.in.Object), true
	case OldObjectVar:
		return orNull(a.in.OldObject), true
	case ParamsVar:
		return orNull(a.in.Params), true
	case RequestVar:
		return a.request, true
	case NamespaceVar:
		return a.namespace, true
	case AuthorizerVar:
		return a.authorizer, a.authorizer != nil
	case RequestResourceAuthorizerVar:
		return a.resource, a.resource != nil
	case VariablesVar:
		if a.variables == nil {
			return nil, false
		}
		return a.variables, true
	}
	return nil, false
}

// Parent implements interpreter.Activation.
func (a *Activation) Parent() interpreter.Activation { return nil }

func orNull(v any) any {
	if v == nil {
		return types.NullValue
	}
	if m, ok := v.(map[string]any); ok && m == nil {
		return types.NullValue
	}
	return v
}

func (a *Activation) takeVariablesCost() int64 {
	c := a.varsCost
	a.varsCost = 0
	return c
}

// variablesValue is the variables variable: a map from the names of the
// variables to their values, each evaluated when first read.
type variablesValue struct {
	act      *Activation
	compiled []namedProgram
	values   []ref.Val
}

var (
	_ traits.Mapper = (*variablesValue)(nil)
	_ ref.Val       = (*variablesValue)(nil)
)

func (v *variablesValue) index(key ref.Val) int {
	s, ok := key.(types.String)
	if !ok {
		return -1
	}
	for i, np := range v.compiled {
		if np.name == string(s) {
			return i
		}
	}
	return -1
}

func (v *variablesValue) value(i int) ref.Val {
	if v.values[i] != nil {
		return v.values[i]
	}
	np := v.compiled[i]
	var out ref.Val
	if err := np.prog.err; err != nil {
		out = types.NewErr("composited variable %q fails to compile: %v", np.name, err)
	} else {
		res, details, err := np.prog.prog.ContextEval(v.act.ctx, v.act)
		switch {
		case details == nil || details.ActualCost() == nil:
			out = types.NewErr("unable to calculate cost of variable %q", np.name)
		default:
			c := *details.ActualCost()
			if c > math.MaxInt64 {
				c = math.MaxInt64
			}
			v.act.varsCost += int64(c)
			if err != nil {
				out = types.NewErr("composited variable %q fails to evaluate: %v", np.name, err)
			} else {
				out = res
			}
		}
	}
	v.values[i] = out
	return out
}

// Find implements traits.Mapper.
func (v *variablesValue) Find(key ref.Val) (ref.Val, bool) {
	i := v.index(key)
	if i < 0 {
		return nil, false
	}
	return v.value(i), true
}

// Get implements traits.Indexer.
func (v *variablesValue) Get(key ref.Val) ref.Val {
	if out, ok := v.Find(key); ok {
		return out
	}
	return types.NewErr("no such key: %v", key)
}

// Contains implements traits.Container.
func (v *variablesValue) Contains(key ref.Val) ref.Val { return types.Bool(v.index(key) >= 0) }

// Size implements traits.Sizer.
func (v *variablesValue) Size() ref.Val { return types.Int(len(v.compiled)) }

// Iterator implements traits.Iterable.
func (v *variablesValue) Iterator() traits.Iterator {
	names := make([]ref.Val, len(v.compiled))
	for i, np := range v.compiled {
		names[i] = types.String(np.name)
	}
	return types.NewRefValList(types.DefaultTypeAdapter, names).Iterator()
}

// ConvertToNative implements ref.Val.
func (v *variablesValue) ConvertToNative(reflectType reflect.Type) (any, error) {
	return nil, fmt.Errorf("variables cannot be converted to %v", reflectType)
}

// ConvertToType implements ref.Val.
func (v *variablesValue) ConvertToType(t ref.Type) ref.Val {
	if t == types.TypeType {
		return types.NewObjectType(variablesTypeName)
	}
	return types.NewErr("type conversion error from '%s' to '%s'", variablesTypeName, t.TypeName())
}

// Equal implements ref.Val.
func (v *variablesValue) Equal(other ref.Val) ref.Val { return types.Bool(other == ref.Val(v)) }

// Type implements ref.Val.
func (v *variablesValue) Type() ref.Type { return types.NewObjectType(variablesTypeName) }

// Value implements ref.Val.
func (v *variablesValue) Value() any { return v }
