package cel

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"

	kcel "github.com/kplane/kplane/pkg/cel"
)

// The variables of admission expressions, named as in Kubernetes.
const (
	ObjectVar                    = "object"
	OldObjectVar                 = "oldObject"
	ParamsVar                    = "params"
	RequestVar                   = "request"
	NamespaceVar                 = "namespaceObject"
	AuthorizerVar                = "authorizer"
	RequestResourceAuthorizerVar = "authorizer.requestResource"
	VariablesVar                 = "variables"
)

// variablesTypeName is the object type of the variables variable; its
// fields are the policy's variables, with the types their expressions
// have.
const variablesTypeName = "kubernetes.variables"

// Options says which optional variables a configuration's expressions may
// use.
type Options struct {
	// Params declares params: the expressions of a policy with a
	// paramKind.
	Params bool
	// Composition declares variables: the expressions of a policy.
	Composition bool
	// Mutation declares the types of mutations (JSONPatch, Object) and
	// jsonpatch.escapeKey: the expressions of a MutatingAdmissionPolicy.
	Mutation bool
}

// envKey says which optional variables an environment declares.
type envKey struct{ params, authorizer, mutation bool }

// baseEnvs are the environments of admission expressions, built once:
// with and without params, with and without the authorizer (which
// Kubernetes does not give messageExpressions and auditAnnotations).
var baseEnvs = sync.OnceValues(func() (map[envKey]*cel.Env, error) {
	base, err := kcel.NewBaseEnv()
	if err != nil {
		return nil, err
	}
	common, err := base.Extend(
		cel.Lib(authzLibrary{}),
		cel.CustomTypeProvider(kcel.NewTypeProvider(base.CELTypeProvider(), requestType(), namespaceType())),
		cel.Variable(ObjectVar, cel.DynType),
		cel.Variable(OldObjectVar, cel.DynType),
		cel.Variable(RequestVar, requestType().CelType()),
		cel.Variable(NamespaceVar, namespaceType().CelType()),
	)
	if err != nil {
		return nil, err
	}
	out := map[envKey]*cel.Env{}
	for _, params := range []bool{false, true} {
		for _, authz := range []bool{false, true} {
			var opts []cel.EnvOption
			if params {
				opts = append(opts, cel.Variable(ParamsVar, cel.DynType))
			}
			if authz {
				opts = append(opts, cel.Variable(AuthorizerVar, AuthorizerType), cel.Variable(RequestResourceAuthorizerVar, ResourceCheckType))
			}
			if out[envKey{params: params, authorizer: authz}], err = common.Extend(opts...); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
})

// mutationEnvs are baseEnvs with the mutation library, built once.
var mutationEnvs = sync.OnceValues(func() (map[envKey]*cel.Env, error) {
	envs, err := baseEnvs()
	if err != nil {
		return nil, err
	}
	out := map[envKey]*cel.Env{}
	for k, env := range envs {
		e, err := env.Extend(cel.Lib(mutationLibrary{}), cel.CustomTypeProvider(mutationProvider{base: env.CELTypeProvider()}))
		if err != nil {
			return nil, err
		}
		k.mutation = true
		out[k] = e
	}
	return out, nil
})

// Compiler compiles the expressions of one webhook or policy. With
// Composition, variables are added with AddVariable in declaration order,
// each able to use those added before it. A Compiler is used by one
// goroutine; the Programs it returns are safe for concurrent use.
type Compiler struct {
	env *cel.Env
	// noAuthz is env without authorizer and authorizer.requestResource.
	noAuthz *cel.Env
	// vars is the type of the variables variable; nil without
	// Composition. Its fields grow as variables are added.
	vars *variablesProvider
	// variables are the compiled variables, in declaration order.
	variables []namedProgram
}

type namedProgram struct {
	name string
	prog *Program
}

// NewCompiler returns a compiler for expressions with the variables opts
// declares.
func NewCompiler(opts Options) (*Compiler, error) {
	envs, err := baseEnvs()
	if opts.Mutation {
		envs, err = mutationEnvs()
	}
	if err != nil {
		return nil, fmt.Errorf("building the CEL environment: %w", err)
	}
	c := &Compiler{env: envs[envKey{opts.Params, true, opts.Mutation}], noAuthz: envs[envKey{opts.Params, false, opts.Mutation}]}
	if opts.Composition {
		c.vars = &variablesProvider{base: c.env.CELTypeProvider(), fields: map[string]*types.Type{}}
		withVars := func(env *cel.Env) (*cel.Env, error) {
			return env.Extend(
				cel.CustomTypeProvider(c.vars),
				cel.Variable(VariablesVar, types.NewObjectType(variablesTypeName)),
			)
		}
		if c.env, err = withVars(c.env); err != nil {
			return nil, fmt.Errorf("building the CEL environment: %w", err)
		}
		if c.noAuthz, err = withVars(c.noAuthz); err != nil {
			return nil, fmt.Errorf("building the CEL environment: %w", err)
		}
	}
	return c, nil
}

// AddVariable compiles a variable and declares it to the expressions
// compiled after it as variables.<name>, with the type its expression has
// (dyn when it does not compile: reading it is then an error). The
// compiled variable is returned too, for its compile error.
func (c *Compiler) AddVariable(name, expression string) *Program {
	p := c.Compile(expression)
	if c.vars == nil {
		p.err = errors.New("variables are not available to these expressions")
		return p
	}
	t := p.OutputType
	if t == nil {
		t = cel.DynType
	}
	c.vars.fields[name] = t
	c.variables = append(c.variables, namedProgram{name: name, prog: p})
	return p
}

// Compile compiles expression. When want is not empty, its result must
// have one of those types (as Kubernetes checks it: exactly). A compile
// error does not fail Compile: it is kept in the Program, reported by Err
// and by every evaluation, as Kubernetes reports it.
func (c *Compiler) Compile(expression string, want ...*cel.Type) *Program {
	return c.compile(c.env, expression, want)
}

// CompileWithoutAuthorizer is Compile for the expressions Kubernetes does
// not give the authorizer: messageExpressions and auditAnnotations.
func (c *Compiler) CompileWithoutAuthorizer(expression string, want ...*cel.Type) *Program {
	return c.compile(c.noAuthz, expression, want)
}

func (c *Compiler) compile(env *cel.Env, expression string, want []*cel.Type) *Program {
	p := &Program{Expression: expression}
	ast, iss := env.Compile(expression)
	if iss != nil && iss.Err() != nil {
		p.err = errors.New("compilation failed: " + iss.String())
		return p
	}
	out := ast.OutputType()
	if len(want) > 0 && !slices.ContainsFunc(want, func(t *cel.Type) bool { return out.IsExactType(t) || cel.AnyType.IsExactType(t) }) {
		if len(want) == 1 {
			p.err = fmt.Errorf("must evaluate to %v but got %v", want[0], out)
		} else {
			p.err = fmt.Errorf("must evaluate to one of %v but got %v", want, out)
		}
		return p
	}
	prog, err := env.Program(ast, cel.CostTracking(costEstimator{&kcel.CostEstimator{}}))
	if err != nil {
		p.err = fmt.Errorf("program instantiation failed: %w", err)
		return p
	}
	p.prog, p.OutputType = prog, out
	return p
}

// Check type-checks expression without building a program: its error is
// the checker's issues, as Kubernetes' type checking reports them.
func (c *Compiler) Check(expression string) error {
	if _, iss := c.env.Compile(expression); iss != nil && iss.Err() != nil {
		return errors.New(iss.String())
	}
	return nil
}

// variablesProvider makes the object type of the variables variable known
// to the checker, with a field per variable declared so far.
type variablesProvider struct {
	base   types.Provider
	fields map[string]*types.Type
}

func (p *variablesProvider) EnumValue(name string) ref.Val { return p.base.EnumValue(name) }

func (p *variablesProvider) FindIdent(name string) (ref.Val, bool) { return p.base.FindIdent(name) }

func (p *variablesProvider) FindStructType(name string) (*types.Type, bool) {
	if name == variablesTypeName {
		return types.NewTypeTypeWithParam(types.NewObjectType(variablesTypeName)), true
	}
	return p.base.FindStructType(name)
}

func (p *variablesProvider) FindStructFieldNames(name string) ([]string, bool) {
	if name == variablesTypeName {
		return slices.Sorted(maps.Keys(p.fields)), true
	}
	return p.base.FindStructFieldNames(name)
}

func (p *variablesProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if name == variablesTypeName {
		t, ok := p.fields[field]
		if !ok {
			return nil, false
		}
		return &types.FieldType{Type: t}, true
	}
	return p.base.FindStructFieldType(name, field)
}

func (p *variablesProvider) NewValue(name string, fields map[string]ref.Val) ref.Val {
	if name == variablesTypeName {
		return types.NewErr("cannot construct values of type %s", name)
	}
	return p.base.NewValue(name, fields)
}
