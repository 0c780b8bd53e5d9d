package cel_test

import (
	"fmt"

	"github.com/google/cel-go/cel"

	kcel "github.com/kplane/kplane/pkg/cel"
)

func ExampleNewBaseEnv() {
	base, err := kcel.NewBaseEnv()
	if err != nil {
		panic(err)
	}
	env, err := base.Extend(cel.Variable("limit", cel.StringType))
	if err != nil {
		panic(err)
	}
	ast, iss := env.Compile(`quantity(limit).isGreaterThan(quantity("1Gi"))`)
	if iss.Err() != nil {
		panic(iss.Err())
	}
	prog, err := env.Program(ast)
	if err != nil {
		panic(err)
	}
	out, details, err := prog.Eval(map[string]any{"limit": "2Gi"})
	if err != nil {
		panic(err)
	}
	fmt.Println(out, *details.ActualCost())
	// Output:
	// true 4
}
