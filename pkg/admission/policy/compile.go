package policy

import (
	"github.com/google/cel-go/cel"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	admissioncel "github.com/kplane/kplane/pkg/admission/cel"
)

// compiled is a ValidatingAdmissionPolicy's expressions, compiled once per
// version of the policy. Compile errors stay in the programs: evaluating
// them is an error the failurePolicy decides, as in Kubernetes.
type compiled struct {
	compiler        *admissioncel.Compiler
	matchConditions *admissioncel.CompiledConditions
	validations     []compiledValidation
	audits          []compiledAudit
	// err is set when no environment could be built at all.
	err error
}

type compiledValidation struct {
	spec    admissionregistrationv1.Validation
	expr    *admissioncel.Program
	message *admissioncel.Program // nil without messageExpression
}

type compiledAudit struct {
	key   string
	value *admissioncel.Program
}

// newPolicyCompiler returns the compiler of a policy's expressions, its
// variables added (first, in order, so that the other expressions and
// later variables can read them), and its matchConditions compiled.
func newPolicyCompiler(opts admissioncel.Options, vars []admissionregistrationv1.Variable, conds []admissionregistrationv1.MatchCondition) (*admissioncel.Compiler, *admissioncel.CompiledConditions, error) {
	c, err := admissioncel.NewCompiler(opts)
	if err != nil {
		return nil, nil, err
	}
	for _, v := range vars {
		c.AddVariable(v.Name, v.Expression)
	}
	return c, c.CompileConditions(conds), nil
}

// compile compiles the expressions of spec: its variables first, in
// order, so that the others (and later variables) can read them.
func compile(spec *admissionregistrationv1.ValidatingAdmissionPolicySpec) *compiled {
	c, conds, err := newPolicyCompiler(admissioncel.Options{Params: spec.ParamKind != nil, Composition: true}, spec.Variables, spec.MatchConditions)
	if err != nil {
		return &compiled{err: err}
	}
	out := &compiled{compiler: c, matchConditions: conds}
	for _, v := range spec.Validations {
		cv := compiledValidation{spec: v, expr: c.Compile(v.Expression, cel.BoolType)}
		if v.MessageExpression != "" {
			cv.message = c.CompileWithoutAuthorizer(v.MessageExpression, cel.StringType)
		}
		out.validations = append(out.validations, cv)
	}
	for _, a := range spec.AuditAnnotations {
		out.audits = append(out.audits, compiledAudit{key: a.Key, value: c.CompileWithoutAuthorizer(a.ValueExpression, cel.StringType, cel.NullType)})
	}
	return out
}
