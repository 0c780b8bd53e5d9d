package clusterroleaggregation

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/controller"
)

// fakeRoles is an in-memory roleLister.
type fakeRoles map[string]*rbacv1.ClusterRole

func (f fakeRoles) Get(name string) (*rbacv1.ClusterRole, error) {
	if r, ok := f[name]; ok {
		return r, nil
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterroles"}, name)
}

func (f fakeRoles) List(sel labels.Selector) ([]*rbacv1.ClusterRole, error) {
	var out []*rbacv1.ClusterRole
	// Map order is random: the syncer must not depend on the list's order.
	for _, r := range f {
		if sel.Matches(labels.Set(r.Labels)) {
			out = append(out, r)
		}
	}
	return out, nil
}

// recorder is an updater that records the writes.
type recorder struct {
	writes []*rbacv1.ClusterRole
	err    error
}

func (r *recorder) Update(_ context.Context, role *rbacv1.ClusterRole) error {
	r.writes = append(r.writes, role)
	return r.err
}

func rule(verb, resource string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: []string{verb}, APIGroups: []string{""}, Resources: []string{resource}}
}

func cr(name string, lbls map[string]string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
	return &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls}, Rules: rules}
}

func aggregating(name string, lbls map[string]string, selectors ...map[string]string) *rbacv1.ClusterRole {
	r := cr(name, lbls)
	r.AggregationRule = &rbacv1.AggregationRule{}
	for _, s := range selectors {
		r.AggregationRule.ClusterRoleSelectors = append(r.AggregationRule.ClusterRoleSelectors, metav1.LabelSelector{MatchLabels: s})
	}
	return r
}

var (
	toView  = map[string]string{"aggregate-to-view": "true"}
	toEdit  = map[string]string{"aggregate-to-edit": "true"}
	getPods = rule("get", "pods")
	getSvcs = rule("get", "services")
	putPods = rule("update", "pods")
)

func TestSync(t *testing.T) {
	tests := []struct {
		name  string
		roles []*rbacv1.ClusterRole
		key   string
		want  []rbacv1.PolicyRule // rules written; nil: no write
	}{{
		name: "union by name, deduplicated",
		roles: []*rbacv1.ClusterRole{
			aggregating("view", nil, toView),
			cr("b-pods", toView, getPods, getSvcs),
			cr("a-svcs", toView, getSvcs),
			cr("other", nil, putPods),
		},
		key:  "view",
		want: []rbacv1.PolicyRule{getSvcs, getPods},
	}, {
		name: "selectors in order, own rules excluded",
		roles: []*rbacv1.ClusterRole{
			aggregating("edit", toView, toEdit, toView),
			cr("editor", toEdit, putPods),
			cr("viewer", toView, getPods, putPods),
		},
		key:  "edit",
		want: []rbacv1.PolicyRule{putPods, getPods},
	}, {
		name: "already aggregated: no write",
		roles: []*rbacv1.ClusterRole{
			func() *rbacv1.ClusterRole {
				r := aggregating("view", nil, toView)
				r.Rules = []rbacv1.PolicyRule{getPods}
				return r
			}(),
			cr("viewer", toView, getPods),
		},
		key: "view",
	}, {
		name:  "nothing matched and no rules: no write",
		roles: []*rbacv1.ClusterRole{aggregating("view", nil, toView)},
		key:   "view",
	}, {
		name: "matched role lost its rules: emptied",
		roles: []*rbacv1.ClusterRole{
			func() *rbacv1.ClusterRole {
				r := aggregating("view", nil, toView)
				r.Rules = []rbacv1.PolicyRule{getPods}
				return r
			}(),
		},
		key:  "view",
		want: []rbacv1.PolicyRule{},
	}, {
		name:  "not aggregating",
		roles: []*rbacv1.ClusterRole{cr("plain", nil, getPods), cr("viewer", toView, getSvcs)},
		key:   "plain",
	}, {
		name: "gone",
		key:  "missing",
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			roles := fakeRoles{}
			for _, r := range tt.roles {
				roles[r.Name] = r
			}
			w := &recorder{}
			s := &syncer{roles: roles, writer: w}
			if err := s.sync(t.Context(), tt.key); err != nil {
				t.Fatal(err)
			}
			if tt.want == nil {
				if len(w.writes) != 0 {
					t.Fatalf("wrote %+v, want no write", w.writes)
				}
				return
			}
			if len(w.writes) != 1 {
				t.Fatalf("%d writes, want 1", len(w.writes))
			}
			if diff := cmp.Diff(tt.want, w.writes[0].Rules, cmpEmpty); diff != "" {
				t.Errorf("rules (-want +got):\n%s", diff)
			}
			if len(roles[tt.key].Rules) > 0 && len(w.writes[0].Rules) > 0 && &roles[tt.key].Rules[0] == &w.writes[0].Rules[0] {
				t.Error("the cached role was modified")
			}
		})
	}
}

// cmpEmpty makes an empty and a nil rule list equal, as the API stores them.
var cmpEmpty = cmp.Comparer(func(a, b []rbacv1.PolicyRule) bool { return len(a) == 0 && len(b) == 0 || cmp.Equal(a, b) })

func TestSyncStableOverRuns(t *testing.T) {
	roles := fakeRoles{"view": aggregating("view", nil, toView)}
	for _, n := range []string{"e", "c", "a", "d", "b"} {
		roles[n] = cr(n, toView, rule("get", n), getPods)
	}
	var first []rbacv1.PolicyRule
	for i := range 20 {
		w := &recorder{}
		if err := (&syncer{roles: roles, writer: w}).sync(t.Context(), "view"); err != nil {
			t.Fatal(err)
		}
		if i == 0 {
			first = w.writes[0].Rules
			continue
		}
		if diff := cmp.Diff(first, w.writes[0].Rules); diff != "" {
			t.Fatalf("run %d differs (-first +now):\n%s", i, diff)
		}
	}
	want := []rbacv1.PolicyRule{rule("get", "a"), getPods, rule("get", "b"), rule("get", "c"), rule("get", "d"), rule("get", "e")}
	if diff := cmp.Diff(want, first); diff != "" {
		t.Errorf("rules (-want +got):\n%s", diff)
	}
}

func TestSyncErrors(t *testing.T) {
	roles := fakeRoles{"view": aggregating("view", nil, toView), "viewer": cr("viewer", toView, getPods)}
	conflict := apierrors.NewConflict(schema.GroupResource{Group: rbacv1.GroupName, Resource: "clusterroles"}, "view", errors.New("stale"))
	err := (&syncer{roles: roles, writer: &recorder{err: conflict}}).sync(t.Context(), "view")
	if !apierrors.IsConflict(err) || controller.IsTerminal(err) {
		t.Errorf("conflict: %v, want a retried conflict", err)
	}
	bad := aggregating("bad", nil)
	bad.AggregationRule.ClusterRoleSelectors = []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}}}}
	roles["bad"] = bad
	if err := (&syncer{roles: roles, writer: &recorder{}}).sync(t.Context(), "bad"); !controller.IsTerminal(err) {
		t.Errorf("invalid selector: %v, want a terminal error", err)
	}
}
