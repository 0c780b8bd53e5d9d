package testenv

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/client"
)

// TestWithRBACRunsUnderTheBoundRole checks that a ServiceAccount's client
// may do exactly what its binding grants: a controller's RBAC manifest
// missing a rule makes its test fail.
func TestWithRBACRunsUnderTheBoundRole(t *testing.T) {
	for _, tls := range []bool{false, true} {
		t.Run(map[bool]string{false: "http", true: "https"}[tls], func(t *testing.T) {
			env := Start(t, WithRBAC(), WithTLS(tls))
			ctx := t.Context()
			ns := env.Namespace(t)
			// The administrator may do anything.
			checkServes(t, env.Client)

			bot, err := client.New(env.ServiceAccountConfig(ns, "bot").ClientConfig())
			if err != nil {
				t.Fatal(err)
			}
			pods := client.NewResource(bot, client.Pods).Namespace(ns)
			if _, err := pods.List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Fatalf("list pods without a binding: %v, want Forbidden", err)
			}
			role := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pod-reader"},
				Rules: []rbacv1.PolicyRule{{Verbs: []string{"get", "list", "watch"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}
			if _, err := client.NewResource(env.Client, client.Roles).Create(ctx, role, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			rb := &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "bot-reads-pods"},
				RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "pod-reader"},
				Subjects: []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: "bot"}}}
			if _, err := client.NewResource(env.Client, client.RoleBindings).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			// The policy cache follows the binding within moments.
			eventually(t, "the binding to take effect", func() (bool, error) {
				_, err := pods.List(ctx, metav1.ListOptions{})
				if apierrors.IsForbidden(err) {
					return false, nil
				}
				return err == nil, err
			})
			// Nothing beyond the role: no writes, no other resources, no
			// other namespace.
			if _, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{}); !apierrors.IsForbidden(err) {
				t.Fatalf("create pod: %v, want Forbidden", err)
			}
			if _, err := client.NewResource(bot, client.ConfigMaps).Namespace(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Fatalf("list config maps: %v, want Forbidden", err)
			}
			if _, err := client.NewResource(bot, client.Pods).Namespace("default").List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Fatalf("list pods in default: %v, want Forbidden", err)
			}
			// A user in no bound group gets nothing either.
			alice, err := client.New(env.ConfigFor("alice", "team").ClientConfig())
			if err != nil {
				t.Fatal(err)
			}
			if _, err := client.NewResource(alice, client.Pods).Namespace(ns).List(ctx, metav1.ListOptions{}); !apierrors.IsForbidden(err) {
				t.Fatalf("alice lists pods: %v, want Forbidden", err)
			}
			// Escalation: a user who may create Roles cannot grant more
			// than it holds.
			maker := &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "role-maker"},
				Rules: []rbacv1.PolicyRule{
					{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}},
					{Verbs: []string{"create"}, APIGroups: []string{rbacv1.GroupName}, Resources: []string{"roles"}},
				}}
			if _, err := client.NewResource(env.Client, client.Roles).Create(ctx, maker, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := client.NewResource(env.Client, client.RoleBindings).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "alice-makes-roles"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "role-maker"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "alice"}},
			}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			eventually(t, "alice's binding to take effect", func() (bool, error) {
				_, err := client.NewResource(alice, client.Pods).Namespace(ns).List(ctx, metav1.ListOptions{})
				return err == nil, nil
			})
			_, err = client.NewResource(alice, client.Roles).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secrets-all"},
				Rules: []rbacv1.PolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}}}, metav1.CreateOptions{})
			if !apierrors.IsForbidden(err) {
				t.Fatalf("alice creates a role granting everything: %v, want Forbidden", err)
			}
			// What she holds she may grant.
			if _, err := client.NewResource(alice, client.Roles).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pod-lister"},
				Rules: []rbacv1.PolicyRule{{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}}}}, metav1.CreateOptions{}); err != nil {
				t.Fatalf("alice creates a role within her own rights: %v", err)
			}
		})
	}
}

// TestConfigForWithoutRBAC: without WithRBAC the extra users are
// authenticated and allowed everything.
func TestConfigForWithoutRBAC(t *testing.T) {
	env := Start(t)
	c, err := client.New(env.ConfigFor("alice").ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	checkServes(t, c)
	bad := env.ConfigFor("mallory")
	bad.BearerToken += "x"
	c, err = client.New(bad.ClientConfig())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.NewResource(c, client.Pods).List(t.Context(), metav1.ListOptions{}); !apierrors.IsUnauthorized(err) {
		t.Fatalf("a wrong token: %v, want Unauthorized", err)
	}
}

// eventually polls cond until it holds: the server's policy cache follows
// bindings through a watch, a moment after they are stored.
func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := cond()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
