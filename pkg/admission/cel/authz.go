package cel

import (
	"context"
	"fmt"
	"reflect"
	"strings"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
	"github.com/google/cel-go/interpreter"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"

	"github.com/kplane/kplane/pkg/authentication"
	"github.com/kplane/kplane/pkg/authorization"
	kcel "github.com/kplane/kplane/pkg/cel"
)

// The types of Kubernetes' authorization library, named as Kubernetes
// names them.
var (
	AuthorizerType    = cel.ObjectType("kubernetes.authorization.Authorizer")
	PathCheckType     = cel.ObjectType("kubernetes.authorization.PathCheck")
	GroupCheckType    = cel.ObjectType("kubernetes.authorization.GroupCheck")
	ResourceCheckType = cel.ObjectType("kubernetes.authorization.ResourceCheck")
	DecisionType      = cel.ObjectType("kubernetes.authorization.Decision")
)

// authzCheckCost is what one authorization check costs, as in Kubernetes:
// enough to allow about two checks per expression.
const authzCheckCost = 350000

// authzLibrary is Kubernetes' authorization library:
// authorizer.group(g).resource(r).subresource(s).namespace(ns).name(n)
// .check(verb), authorizer.path(p).check(verb),
// authorizer.serviceAccount(ns, name), and the decision's allowed(),
// reason(), errored() and error().
type authzLibrary struct{}

func (authzLibrary) LibraryName() string { return "kplane.admission.authz" }

func (authzLibrary) ProgramOptions() []cel.ProgramOption { return nil }

func (authzLibrary) CompileOptions() []cel.EnvOption {
	member := func(name, id string, args []*cel.Type, out *cel.Type, b cel.OverloadOpt) cel.EnvOption {
		return cel.Function(name, cel.MemberOverload(id, args, out, b))
	}
	str := cel.StringType
	return []cel.EnvOption{
		member("path", "authorizer_path", []*cel.Type{AuthorizerType, str}, PathCheckType, cel.BinaryBinding(authorizerPath)),
		member("group", "authorizer_group", []*cel.Type{AuthorizerType, str}, GroupCheckType, cel.BinaryBinding(authorizerGroup)),
		member("serviceAccount", "authorizer_serviceaccount", []*cel.Type{AuthorizerType, str, str}, AuthorizerType, cel.FunctionBinding(authorizerServiceAccount)),
		member("resource", "groupcheck_resource", []*cel.Type{GroupCheckType, str}, ResourceCheckType, cel.BinaryBinding(groupCheckResource)),
		member("subresource", "resourcecheck_subresource", []*cel.Type{ResourceCheckType, str}, ResourceCheckType, cel.BinaryBinding(resourceCheckSet(func(r *resourceCheckVal, s string) { r.subresource = s }))),
		member("namespace", "resourcecheck_namespace", []*cel.Type{ResourceCheckType, str}, ResourceCheckType, cel.BinaryBinding(resourceCheckSet(func(r *resourceCheckVal, s string) { r.namespace = s }))),
		member("name", "resourcecheck_name", []*cel.Type{ResourceCheckType, str}, ResourceCheckType, cel.BinaryBinding(resourceCheckSet(func(r *resourceCheckVal, s string) { r.name = s }))),
		cel.Function("check",
			cel.MemberOverload("pathcheck_check", []*cel.Type{PathCheckType, str}, DecisionType, cel.BinaryBinding(pathCheckCheck)),
			cel.MemberOverload("resourcecheck_check", []*cel.Type{ResourceCheckType, str}, DecisionType, cel.BinaryBinding(resourceCheckCheck))),
		member("errored", "decision_errored", []*cel.Type{DecisionType}, cel.BoolType, cel.UnaryBinding(decisionFunc(func(d decisionVal) ref.Val { return types.Bool(d.err != nil) }))),
		member("error", "decision_error", []*cel.Type{DecisionType}, cel.StringType, cel.UnaryBinding(decisionFunc(func(d decisionVal) ref.Val {
			if d.err == nil {
				return types.String("")
			}
			return types.String(d.err.Error())
		}))),
		member("allowed", "decision_allowed", []*cel.Type{DecisionType}, cel.BoolType, cel.UnaryBinding(decisionFunc(func(d decisionVal) ref.Val {
			return types.Bool(d.decision == authorization.DecisionAllow)
		}))),
		member("reason", "decision_reason", []*cel.Type{DecisionType}, cel.StringType, cel.UnaryBinding(decisionFunc(func(d decisionVal) ref.Val { return types.String(d.reason) }))),
	}
}

func authorizerPath(arg1, arg2 ref.Val) ref.Val {
	a, ok := arg1.(authorizerVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg1)
	}
	path, ok := arg2.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg2)
	}
	if strings.TrimSpace(path) == "" {
		return types.NewErr("path must not be empty")
	}
	return pathCheckVal{authorizer: a, path: path}
}

func authorizerGroup(arg1, arg2 ref.Val) ref.Val {
	a, ok := arg1.(authorizerVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg1)
	}
	group, ok := arg2.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg2)
	}
	return groupCheckVal{authorizer: a, group: group}
}

func authorizerServiceAccount(args ...ref.Val) ref.Val {
	if len(args) != 3 {
		return types.NoSuchOverloadErr()
	}
	a, ok := args[0].(authorizerVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(args[0])
	}
	namespace, ok := args[1].Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(args[1])
	}
	name, ok := args[2].Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(args[2])
	}
	if len(apimachineryvalidation.ValidateServiceAccountName(name, false)) > 0 {
		return types.NewErr("Invalid service account name")
	}
	if len(apimachineryvalidation.ValidateNamespaceName(namespace, false)) > 0 {
		return types.NewErr("Invalid service account namespace")
	}
	a.user = &authentication.User{
		Name:   authentication.ServiceAccountPrefix + namespace + ":" + name,
		Groups: []string{authentication.ServiceAccountsGroup, authentication.ServiceAccountsGroup + ":" + namespace},
	}
	return a
}

func groupCheckResource(arg1, arg2 ref.Val) ref.Val {
	g, ok := arg1.(groupCheckVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg1)
	}
	resource, ok := arg2.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg2)
	}
	if strings.TrimSpace(resource) == "" {
		return types.NewErr("resource must not be empty")
	}
	return resourceCheckVal{group: g, resource: resource}
}

func resourceCheckSet(set func(*resourceCheckVal, string)) func(ref.Val, ref.Val) ref.Val {
	return func(arg1, arg2 ref.Val) ref.Val {
		r, ok := arg1.(resourceCheckVal)
		if !ok {
			return types.MaybeNoSuchOverloadErr(arg1)
		}
		s, ok := arg2.Value().(string)
		if !ok {
			return types.MaybeNoSuchOverloadErr(arg2)
		}
		set(&r, s)
		return r
	}
}

func pathCheckCheck(arg1, arg2 ref.Val) ref.Val {
	p, ok := arg1.(pathCheckVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg1)
	}
	verb, ok := arg2.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg2)
	}
	return p.authorizer.check(authorization.Attributes{Path: p.path, Verb: verb})
}

func resourceCheckCheck(arg1, arg2 ref.Val) ref.Val {
	r, ok := arg1.(resourceCheckVal)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg1)
	}
	verb, ok := arg2.Value().(string)
	if !ok {
		return types.MaybeNoSuchOverloadErr(arg2)
	}
	return r.group.authorizer.check(authorization.Attributes{
		ResourceRequest: true,
		APIGroup:        r.group.group,
		APIVersion:      "*",
		Resource:        r.resource,
		Subresource:     r.subresource,
		Namespace:       r.namespace,
		Name:            r.name,
		Verb:            verb,
	})
}

func decisionFunc(f func(decisionVal) ref.Val) func(ref.Val) ref.Val {
	return func(arg ref.Val) ref.Val {
		d, ok := arg.(decisionVal)
		if !ok {
			return types.MaybeNoSuchOverloadErr(arg)
		}
		return f(d)
	}
}

// authorizerVal asks authz about user. It keeps the request's context:
// it lives only as long as one evaluation context.
type authorizerVal struct {
	receiverOnly
	ctx   context.Context
	authz authorization.Authorizer
	user  *authentication.User
}

func (a authorizerVal) check(attrs authorization.Attributes) ref.Val {
	attrs.User = a.user
	d, reason, err := a.authz.Authorize(a.ctx, attrs)
	return decisionVal{decision: d, reason: reason, err: err}
}

type pathCheckVal struct {
	receiverOnly
	authorizer authorizerVal
	path       string
}

type groupCheckVal struct {
	receiverOnly
	authorizer authorizerVal
	group      string
}

type resourceCheckVal struct {
	receiverOnly
	group                                  groupCheckVal
	resource, subresource, namespace, name string
}

type decisionVal struct {
	receiverOnly
	decision authorization.Decision
	reason   string
	err      error
}

// The values' types.
func (authorizerVal) Type() ref.Type    { return AuthorizerType }
func (pathCheckVal) Type() ref.Type     { return PathCheckType }
func (groupCheckVal) Type() ref.Type    { return GroupCheckType }
func (resourceCheckVal) Type() ref.Type { return ResourceCheckType }
func (decisionVal) Type() ref.Type      { return DecisionType }

// receiverOnly is the ref.Val part (but Type) of values that only have
// member functions.
type receiverOnly struct{}

func (receiverOnly) ConvertToNative(typeDesc reflect.Type) (any, error) {
	return nil, fmt.Errorf("type conversion error to '%v'", typeDesc)
}

func (receiverOnly) ConvertToType(t ref.Type) ref.Val {
	return types.NewErr("type conversion error to '%s'", t.TypeName())
}

func (receiverOnly) Equal(other ref.Val) ref.Val { return types.MaybeNoSuchOverloadErr(other) }

func (receiverOnly) Value() any { return types.NoSuchOverloadErr() }

// costEstimator prices the authorization library as Kubernetes does and
// everything else as kplane/pkg/cel does.
type costEstimator struct{ *kcel.CostEstimator }

var (
	_ checker.CostEstimator           = costEstimator{}
	_ interpreter.ActualCostEstimator = costEstimator{}
)

func (e costEstimator) CallCost(function, overloadID string, args []ref.Val, result ref.Val) *uint64 {
	switch function {
	case "check":
		c := uint64(authzCheckCost)
		return &c
	case "serviceAccount", "path", "group", "resource", "subresource", "namespace", "name", "allowed", "reason", "error", "errored":
		if isAuthzOverload(overloadID) {
			c := uint64(1)
			return &c
		}
	}
	return e.CostEstimator.CallCost(function, overloadID, args, result)
}

func (e costEstimator) EstimateCallCost(function, overloadID string, target *checker.AstNode, args []checker.AstNode) *checker.CallEstimate {
	switch function {
	case "check":
		return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: authzCheckCost, Max: authzCheckCost}}
	case "serviceAccount", "path", "group", "resource", "subresource", "namespace", "name", "allowed", "reason", "error", "errored":
		if isAuthzOverload(overloadID) {
			return &checker.CallEstimate{CostEstimate: checker.CostEstimate{Min: 1, Max: 1}}
		}
	}
	return e.CostEstimator.EstimateCallCost(function, overloadID, target, args)
}

func isAuthzOverload(id string) bool {
	for _, p := range []string{"authorizer_", "groupcheck_", "resourcecheck_", "pathcheck_", "decision_"} {
		if strings.HasPrefix(id, p) {
			return true
		}
	}
	return false
}
