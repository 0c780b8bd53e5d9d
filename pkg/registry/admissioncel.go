package registry

import (
	"strings"
	"sync"

	"github.com/google/cel-go/cel"
	"k8s.io/apimachinery/pkg/util/validation/field"

	kcel "github.com/kplane/kplane/pkg/cel"
)

// admissionVars are the variables an admission expression may use.
type admissionVars int

const (
	// admissionVarsWebhook: a webhook's matchConditions.
	admissionVarsWebhook admissionVars = iota
	// admissionVarsPolicy: the expressions of an admission policy without
	// a paramKind.
	admissionVarsPolicy
	// admissionVarsPolicyParams: those of a policy with a paramKind, which
	// may use params.
	admissionVarsPolicyParams
	// draVarsDevice: a device selector of resource.k8s.io.
	draVarsDevice
)

// admissionEnvs are the CEL environments of admission expressions, built
// on first use and never changed; every variable is dynamically typed, so
// compiling catches syntax errors, unknown variables and functions, and
// results of the wrong type where they can be known.
var admissionEnvs = sync.OnceValues(func() (map[admissionVars]*cel.Env, error) {
	base, err := kcel.NewBaseEnv()
	if err != nil {
		return nil, err
	}
	common := []string{"object", "oldObject", "request", "authorizer"}
	out := map[admissionVars]*cel.Env{}
	for kind, names := range map[admissionVars][]string{
		admissionVarsWebhook:      common,
		admissionVarsPolicy:       append(slicesClone(common), "namespaceObject", "variables"),
		admissionVarsPolicyParams: append(slicesClone(common), "namespaceObject", "variables", "params"),
		draVarsDevice:             {"device"},
	} {
		var opts []cel.EnvOption
		for _, n := range names {
			opts = append(opts, cel.Variable(n, cel.DynType))
		}
		env, err := base.Extend(opts...)
		if err != nil {
			return nil, err
		}
		out[kind] = env
	}
	return out, nil
})

func slicesClone(s []string) []string { return append([]string(nil), s...) }

// compileAdmissionExpression compiles expr with the variables of vars; with
// wantBool its result must be a bool (or dynamic), with wantString a string.
func compileAdmissionExpression(expr string, vars admissionVars, wantBool bool, fld *field.Path) field.ErrorList {
	return compileAdmissionExpressionType(expr, vars, map[bool]*cel.Type{true: cel.BoolType, false: nil}[wantBool], fld)
}

func compileAdmissionExpressionType(expr string, vars admissionVars, want *cel.Type, fld *field.Path) field.ErrorList {
	envs, err := admissionEnvs()
	if err != nil {
		return field.ErrorList{field.InternalError(fld, err)}
	}
	ast, iss := envs[vars].Compile(expr)
	if iss != nil && iss.Err() != nil {
		return field.ErrorList{field.Invalid(fld, expr, "compilation failed: "+strings.TrimSpace(iss.Err().Error()))}
	}
	if want != nil {
		out := ast.OutputType()
		if !out.IsExactType(want) && !out.IsExactType(cel.DynType) {
			return field.ErrorList{field.Invalid(fld, expr, "must evaluate to "+want.String())}
		}
	}
	return nil
}

// parseAdmissionExpression checks only the syntax of expr: mutations build
// typed objects (Object{...}, JSONPatch{...}) whose types come from the
// matched resources, which are not known when the policy is written.
func parseAdmissionExpression(expr string, fld *field.Path) field.ErrorList {
	envs, err := admissionEnvs()
	if err != nil {
		return field.ErrorList{field.InternalError(fld, err)}
	}
	if _, iss := envs[admissionVarsPolicyParams].Parse(expr); iss != nil && iss.Err() != nil {
		return field.ErrorList{field.Invalid(fld, expr, "compilation failed: "+strings.TrimSpace(iss.Err().Error()))}
	}
	return nil
}
