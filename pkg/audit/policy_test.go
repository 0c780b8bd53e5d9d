package audit

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const testPolicy = `
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: ["system:kube-proxy"]
  verbs: ["watch"]
  resources:
  - group: ""
    resources: ["endpoints", "services"]
- level: None
  userGroups: ["system:nodes"]
  verbs: ["get"]
  resources:
  - group: ""
    resources: ["nodes"]
- level: None
  nonResourceURLs: ["/healthz*", "/version"]
- level: RequestResponse
  resources:
  - group: ""
    resources: ["secrets", "serviceaccounts/token"]
  - group: authentication.k8s.io
    resources: ["tokenreviews"]
- level: Request
  resources:
  - group: ""
    resources: ["pods/log", "pods/status"]
- level: RequestResponse
  namespaces: ["kube-system"]
  omitStages: [ResponseStarted]
- level: Request
  resources:
  - group: apps
    resources: ["*/scale"]
  - group: batch
    resources: ["jobs/*"]
  - group: ""
    resources: ["configmaps"]
    resourceNames: ["controller-leader"]
- level: Metadata
  resources:
  - group: "rbac.authorization.k8s.io"
- level: Metadata
`

func TestPolicyFirstMatchingRule(t *testing.T) {
	p, err := ParsePolicy([]byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	proxy := &UserInfo{Username: "system:kube-proxy"}
	node := &UserInfo{Username: "system:node:n1", Groups: []string{"system:nodes"}}
	alice := &UserInfo{Username: "alice", Groups: []string{"system:authenticated"}}
	res := func(u *UserInfo, verb, group, resource, sub, ns, name string) Attributes {
		return Attributes{User: u, ResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	tests := []struct {
		name  string
		attrs Attributes
		want  Level
	}{
		{"user and verb and resource all match", res(proxy, "watch", "", "endpoints", "", "default", ""), LevelNone},
		{"user matches but verb does not", res(proxy, "list", "", "endpoints", "", "default", ""), LevelMetadata},
		{"user group matches", res(node, "get", "", "nodes", "", "", "n1"), LevelNone},
		{"user outside the group", res(alice, "get", "", "nodes", "", "", "n1"), LevelMetadata},
		{"no user matches no user rule", res(nil, "get", "", "nodes", "", "", "n1"), LevelMetadata},
		{"non-resource prefix", Attributes{User: alice, Verb: "get", Path: "/healthz/etcd"}, LevelNone},
		{"non-resource exact", Attributes{User: alice, Verb: "get", Path: "/version"}, LevelNone},
		{"non-resource exact does not prefix", Attributes{User: alice, Verb: "get", Path: "/version/x"}, LevelMetadata},
		{"secrets capped at Metadata", res(alice, "create", "", "secrets", "", "default", ""), LevelMetadata},
		{"token requests capped at Metadata", res(alice, "create", "", "serviceaccounts", "token", "default", "sa"), LevelMetadata},
		{"token reviews capped at Metadata", res(alice, "create", "authentication.k8s.io", "tokenreviews", "", "", ""), LevelMetadata},
		{"secrets capped even in a RequestResponse namespace", res(alice, "get", "", "secrets", "", "kube-system", "s"), LevelMetadata},
		{"subresource exact", res(alice, "get", "", "pods", "log", "default", "p"), LevelRequest},
		{"resource does not match its subresource", res(alice, "get", "", "pods", "exec", "default", "p"), LevelMetadata},
		{"namespace rule", res(alice, "get", "", "pods", "", "kube-system", "p"), LevelRequestResponse},
		{"namespace rule misses cluster scope", res(alice, "get", "", "nodes", "", "", "n"), LevelMetadata},
		{"*/subresource", res(alice, "update", "apps", "deployments", "scale", "default", "d"), LevelRequest},
		{"*/subresource not the resource", res(alice, "update", "apps", "deployments", "", "default", "d"), LevelMetadata},
		{"resource/*", res(alice, "update", "batch", "jobs", "status", "default", "j"), LevelRequest},
		{"resource/* the resource itself", res(alice, "update", "batch", "jobs", "", "default", "j"), LevelRequest},
		{"resourceNames match", res(alice, "update", "", "configmaps", "", "default", "controller-leader"), LevelRequest},
		{"resourceNames miss", res(alice, "update", "", "configmaps", "", "default", "other"), LevelMetadata},
		{"group with no resources matches all of it", res(alice, "create", "rbac.authorization.k8s.io", "roles", "", "default", ""), LevelMetadata},
		{"wrong group", res(alice, "update", "extensions", "deployments", "scale", "default", "d"), LevelMetadata},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := p.Evaluate(tt.attrs).Level; got != tt.want {
				t.Errorf("level %s, want %s", got, tt.want)
			}
		})
	}
}

func TestPolicyStagesAndManagedFields(t *testing.T) {
	p, err := ParsePolicy([]byte(testPolicy))
	if err != nil {
		t.Fatal(err)
	}
	got := p.Evaluate(Attributes{ResourceRequest: true, Verb: "get", Resource: "pods", Namespace: "kube-system"})
	if diff := cmp.Diff([]Stage{StageRequestReceived, StageResponseStarted}, got.OmitStages); diff != "" {
		t.Errorf("omitStages: policy's then rule's (-want +got):\n%s", diff)
	}
	if !got.Omits(StageResponseStarted) || got.Omits(StageResponseComplete) {
		t.Errorf("Omits wrong for %v", got.OmitStages)
	}
	// The rule's omitStages do not leak into the policy's.
	if other := p.Evaluate(Attributes{Verb: "get", Path: "/apis"}); len(other.OmitStages) != 1 {
		t.Errorf("omitStages of another rule: %v", other.OmitStages)
	}
	none, err := ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := none.Evaluate(Attributes{Verb: "get", Path: "/"}); got.Level != LevelNone {
		t.Errorf("no rule: %s, want None", got.Level)
	}
	f := false
	mf := &Policy{OmitManagedFields: true, Rules: []PolicyRule{{Level: LevelRequest, Verbs: []string{"get"}, OmitManagedFields: &f}, {Level: LevelRequest}}}
	if mf.Evaluate(Attributes{Verb: "get"}).OmitManagedFields || !mf.Evaluate(Attributes{Verb: "put"}).OmitManagedFields {
		t.Error("a rule's omitManagedFields must override the policy's")
	}
}

func TestParsePolicyRejects(t *testing.T) {
	tests := []struct{ name, doc, want string }{
		{"wrong kind", "apiVersion: audit.k8s.io/v1\nkind: Event\nrules: []", "want audit.k8s.io/v1 Policy"},
		{"wrong version", "apiVersion: audit.k8s.io/v1beta1\nkind: Policy\nrules: []", "want audit.k8s.io/v1 Policy"},
		{"unknown level", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Everything}]", "unknown level"},
		{"missing level", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{verbs: [get]}]", "unknown level"},
		{"unknown stage", "apiVersion: audit.k8s.io/v1\nkind: Policy\nomitStages: [Later]\nrules: []", "unknown stage"},
		{"unknown field", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, user: [a]}]", "unknown field"},
		{"urls with resources", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: [/x], resources: [{group: ''}]}]", "cannot be combined"},
		{"url without slash", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: [x]}]", "must begin with /"},
		{"inner wildcard", "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: None, nonResourceURLs: ['/a*/b']}]", "only at its end"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParsePolicy([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}
