package policy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/admission"
)

func statusConfig(src *fakeSource) *admission.Config {
	return &admission.Config{Source: src, Resolver: fakeResolver{served: []admission.ServedResource{
		{Resource: deploymentsGVR, Kind: deploymentGVK, Namespaced: true},
		{Resource: deploymentsGVR, Subresource: "scale", Kind: deploymentGVK, Namespaced: true},
	}}}
}

func behindPolicy() *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := newPolicy("p", func(s *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
		s.Variables = []admissionregistrationv1.Variable{{Name: "r", Expression: "object.spec.replicas"}}
	},
		admissionregistrationv1.Validation{Expression: "variables.r <= 5"},
		admissionregistrationv1.Validation{Expression: "nope > 1", MessageExpression: "'ok'"},
		admissionregistrationv1.Validation{Expression: "true", MessageExpression: "variables.missing"},
	)
	p.Generation, p.Status.ObservedGeneration = 2, 1
	return p
}

func TestStatusTypeCheckingAsKubernetes(t *testing.T) {
	src := newFakeSource(behindPolicy())
	cfg := statusConfig(src)
	if err := SyncStatus(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	if len(src.Updates()) != 1 {
		t.Fatalf("%d status updates, want 1", len(src.Updates()))
	}
	st := src.Updates()[0].(*admissionregistrationv1.ValidatingAdmissionPolicy).Status
	if st.ObservedGeneration != 2 || st.TypeChecking == nil {
		t.Fatalf("status = %+v", st)
	}
	w := st.TypeChecking.ExpressionWarnings
	if len(w) != 2 || w[0].FieldRef != "spec.validations[1].expression" || w[1].FieldRef != "spec.validations[2].messageExpression" {
		t.Fatalf("warnings = %+v", w)
	}
	if !strings.HasPrefix(w[0].Warning, "apps/v1, Kind=Deployment: ERROR: <input>:1:1: undeclared reference to 'nope'") || !strings.HasSuffix(w[0].Warning, "\n") {
		t.Errorf("warning = %q", w[0].Warning)
	}
	if !strings.Contains(w[1].Warning, "undefined field 'missing'") {
		t.Errorf("warning = %q", w[1].Warning)
	}
	// up to date now: nothing more to write
	if err := SyncStatus(context.Background(), cfg); err != nil || len(src.Updates()) != 1 {
		t.Fatalf("second sync: %v, %d updates", err, len(src.Updates()))
	}
}

func TestStatusWithoutKnownKindsHasNoWarnings(t *testing.T) {
	p := behindPolicy()
	p.Spec.MatchConstraints.ResourceRules[0].APIGroups = []string{"*"}
	if w := TypeCheck(p, statusConfig(nil).Resolver); w != nil {
		t.Fatalf("wildcard rules checked: %+v", w)
	}
}

func TestRunStatusFollowsPoliciesUntilCancelled(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		src := newFakeSource(behindPolicy())
		src.onUpdate = make(chan runtime.Object)
		cfg := statusConfig(src)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error)
		go func() { done <- RunStatus(ctx, cfg) }()
		<-src.onUpdate
		// a new policy is written on the next tick, not before
		p := behindPolicy()
		p.Name = "q"
		src.add(p)
		synctest.Wait()
		select {
		case o := <-src.onUpdate:
			t.Fatalf("updated %v before the interval passed", o)
		default:
		}
		time.Sleep(StatusInterval)
		if got := (<-src.onUpdate).(*admissionregistrationv1.ValidatingAdmissionPolicy); got.Name != "q" {
			t.Fatalf("updated %s, want q", got.Name)
		}
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("RunStatus = %v", err)
		}
	})
}
