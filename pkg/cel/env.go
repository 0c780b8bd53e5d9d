package cel

import (
	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/checker"
	"github.com/google/cel-go/ext"
	"github.com/google/cel-go/interpreter"
)

// Limits Kubernetes applies to CEL evaluation.
const (
	// PerCallLimit is the runtime cost limit of one evaluation of one expression.
	PerCallLimit = 1000000
	// RuntimeCostBudget is the runtime cost budget for all the rules evaluated
	// against one object.
	RuntimeCostBudget = 10000000
	// CheckFrequency is how many comprehension iterations run between checks
	// for cancellation.
	CheckFrequency = 100
	// MaxRequestSizeBytes is the largest request the API server accepts; it
	// bounds the size of lists, maps and strings with no declared maximum.
	MaxRequestSizeBytes = int64(3 * 1024 * 1024)
	// MaxMessageExpressionSizeBytes is the longest message a messageExpression
	// may produce.
	MaxMessageExpressionSizeBytes = 5 * 1024
)

// NewBaseEnv returns a new CEL environment with the libraries and options
// Kubernetes enables for expressions (at the feature level of Kubernetes 1.36):
// no variables are declared. Programs built from it track cost, stop at
// PerCallLimit and price the Kubernetes library functions with a CostEstimator.
// The environment is immutable and safe for concurrent use; building one is
// comparatively expensive (function declarations are validated eagerly), so
// callers should build it once and Extend it.
func NewBaseEnv() (*cel.Env, error) {
	return cel.NewEnv(baseEnvOptions()...)
}

func baseEnvOptions() []cel.EnvOption {
	return []cel.EnvOption{
		cel.HomogeneousAggregateLiterals(),
		cel.EagerlyValidateDeclarations(true),
		cel.DefaultUTCTimeZone(true),
		cel.CrossTypeNumericComparisons(true),
		cel.OptionalTypes(),
		// Kubernetes kept has() free when cel-go started charging for it.
		cel.CostEstimatorOptions(checker.PresenceTestHasCost(false)),
		cel.ASTValidators(
			cel.ValidateDurationLiterals(),
			cel.ValidateTimestampLiterals(),
			cel.ValidateRegexLiterals(),
			cel.ValidateHomogeneousAggregateLiterals(),
		),
		ext.Strings(ext.StringsVersion(2)),
		ext.Sets(),
		ext.TwoVarComprehensions(),
		ext.Lists(ext.ListsVersion(3)),
		cel.Lib(listsLib),
		cel.Lib(regexLib),
		cel.Lib(urlsLib),
		cel.Lib(quantityLib),
		cel.Lib(ipLib),
		cel.Lib(cidrLib),
		cel.Lib(formatLib),
		cel.Lib(semverLib),
		cel.Lib(programLib{}),
	}
}

// programLib carries the program options every expression gets.
type programLib struct{}

func (programLib) LibraryName() string { return "kplane.program" }

func (programLib) CompileOptions() []cel.EnvOption { return nil }

func (programLib) ProgramOptions() []cel.ProgramOption {
	return []cel.ProgramOption{
		cel.EvalOptions(cel.OptOptimize, cel.OptTrackCost),
		cel.CostLimit(PerCallLimit),
		cel.CostTrackerOptions(interpreter.PresenceTestHasCost(false)),
		cel.CostTracking(&CostEstimator{}),
		cel.InterruptCheckFrequency(CheckFrequency),
	}
}

// library is a named set of function declarations.
type library struct {
	name  string
	funcs []cel.EnvOption
}

func (l *library) LibraryName() string { return l.name }

func (l *library) CompileOptions() []cel.EnvOption { return l.funcs }

func (l *library) ProgramOptions() []cel.ProgramOption { return nil }
