package policy_test

import (
	"context"
	"fmt"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/admission/admissiontest"
	"github.com/kplane/kplane/pkg/admission/policy"
)

// The plugin is built from the admission Config the server gives every
// plugin; its Source holds the policies and bindings (here a test's
// fake, without any).
func ExampleNewValidating() {
	cfg := &admission.Config{Source: &admissiontest.Source{}}
	p, err := policy.NewValidating(cfg)
	if err != nil {
		panic(err)
	}
	v := p.(admission.ValidationInterface)
	fmt.Println(v.Handles(admission.Delete), v.Validate(context.Background(), &admission.Attributes{Operation: admission.Delete}))
	// Output:
	// true <nil>
}
