package bootstrap

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/authentication"
)

// The labels and annotations of the bootstrap objects.
const (
	// BootstrappingLabel marks the objects of the default policy.
	BootstrappingLabel = "kubernetes.io/bootstrapping"
	// AutoUpdateAnnotation, when "false", stops reconciliation of an object.
	AutoUpdateAnnotation = rbacv1.AutoUpdateAnnotationKey
	// ControllerRolePrefix starts the name of every controller's role.
	ControllerRolePrefix = "system:controller:"
)

// Verb sets used throughout the policy.
var (
	read       = []string{"get", "list", "watch"}
	write      = []string{"create", "update", "patch", "delete", "deletecollection"}
	readUpdate = []string{"get", "list", "watch", "update", "patch"}
	readWrite  = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
)

// The API groups the policy names.
const (
	core           = ""
	apps           = "apps"
	authnGroup     = "authentication.k8s.io"
	authzGroup     = "authorization.k8s.io"
	autoscaling    = "autoscaling"
	batch          = "batch"
	certificates   = "certificates.k8s.io"
	coordination   = "coordination.k8s.io"
	discoveryGroup = "discovery.k8s.io"
	eventsGroup    = "events.k8s.io"
	extensions     = "extensions"
	networking     = "networking.k8s.io"
	nodeGroup      = "node.k8s.io"
	policyGroup    = "policy"
	rbacGroup      = "rbac.authorization.k8s.io"
	storageGroup   = "storage.k8s.io"
	resourceGroup  = "resource.k8s.io"
)

// r is a resource rule: verbs over resources of groups.
func r(verbs []string, groups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: append([]string{}, verbs...), APIGroups: append([]string{}, groups...), Resources: resources}
}

// named is r restricted to resource names.
func named(verbs []string, groups []string, resources []string, names ...string) rbacv1.PolicyRule {
	rule := r(verbs, groups, resources...)
	rule.ResourceNames = names
	return rule
}

// urls is a non-resource rule.
func urls(verbs []string, paths ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: append([]string{}, verbs...), NonResourceURLs: paths}
}

func v(verbs ...string) []string  { return verbs }
func g(groups ...string) []string { return groups }

// eventsRule lets a component record events in both event APIs.
func eventsRule() rbacv1.PolicyRule {
	return r(v("create", "update", "patch"), g(core, eventsGroup), "events")
}

func meta(name string, labels map[string]string) metav1.ObjectMeta {
	l := map[string]string{BootstrappingLabel: "rbac-defaults"}
	for k, val := range labels {
		l[k] = val
	}
	return metav1.ObjectMeta{Name: name, Labels: l, Annotations: map[string]string{AutoUpdateAnnotation: "true"}}
}

func clusterRole(name string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: meta(name, nil), Rules: rules}
}

// aggregated is a ClusterRole whose rules the aggregation controller
// gathers from the roles labelled selects=true; it carries labels itself.
func aggregated(name, selects string, labels map[string]string) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{
		ObjectMeta: meta(name, labels),
		AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
			{MatchLabels: map[string]string{selects: "true"}},
		}},
	}
}

func part(name, label string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: meta(name, map[string]string{label: "true"}), Rules: rules}
}

// The labels that aggregate roles into admin, edit and view.
const (
	AggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	AggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	AggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// NodeRules are the rules of system:node, what a node agent needs.
func NodeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		r(v("create"), g(authnGroup), "tokenreviews"),
		r(v("create"), g(authzGroup), "subjectaccessreviews", "localsubjectaccessreviews"),
		r(read, g(core), "services"),
		r(v("create", "get", "list", "watch"), g(core), "nodes"),
		r(v("update", "patch"), g(core), "nodes/status"),
		r(v("update", "patch"), g(core), "nodes"),
		r(v("create", "update", "patch"), g(core), "events"),
		r(read, g(core), "pods"),
		r(v("create", "delete"), g(core), "pods"),
		r(v("update", "patch"), g(core), "pods/status"),
		r(v("create"), g(core), "pods/eviction"),
		r(read, g(core), "secrets", "configmaps"),
		r(v("get"), g(core), "persistentvolumeclaims", "persistentvolumes"),
		r(v("get"), g(core), "endpoints"),
		r(v("create", "get", "list", "watch"), g(certificates), "certificatesigningrequests"),
		r(v("get", "create", "update", "patch", "delete"), g(coordination), "leases"),
		r(v("get"), g(storageGroup), "volumeattachments"),
		r(v("get", "update", "patch"), g(core), "persistentvolumeclaims/status"),
		r(v("create"), g(core), "serviceaccounts/token"),
		r(v("get", "watch", "list"), g(storageGroup), "csidrivers"),
		r(v("get", "create", "update", "patch", "delete"), g(storageGroup), "csinodes"),
		r(read, g(nodeGroup), "runtimeclasses"),
	}
}

// ClusterRoles returns the bootstrap ClusterRoles other than the
// controllers' (see ControllerRoles), in a stable order.
func ClusterRoles() []rbacv1.ClusterRole {
	return append([]rbacv1.ClusterRole{
		clusterRole("cluster-admin", r(v("*"), g("*"), "*"), urls(v("*"), "*")),
		clusterRole("system:discovery", urls(v("get"),
			"/livez", "/readyz", "/healthz", "/version", "/version/", "/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*")),
		clusterRole("system:monitoring", urls(v("get"),
			"/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz", "/livez/*", "/readyz/*", "/healthz/*")),
		clusterRole("system:basic-user",
			r(v("create"), g(authzGroup), "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
			r(v("create"), g(authnGroup), "selfsubjectreviews")),
		clusterRole("system:public-info-viewer", urls(v("get"), "/livez", "/readyz", "/healthz", "/version", "/version/")),
		aggregated("admin", AggregateToAdmin, nil),
		aggregated("edit", AggregateToEdit, map[string]string{AggregateToAdmin: "true"}),
		aggregated("view", AggregateToView, map[string]string{AggregateToEdit: "true"}),
		part("system:aggregate-to-admin", AggregateToAdmin,
			r(v("create"), g(authzGroup), "localsubjectaccessreviews"),
			r(readWrite, g(rbacGroup), "roles", "rolebindings")),
		part("system:aggregate-to-edit", AggregateToEdit,
			r(read, g(core), "pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy"),
			r(v("impersonate"), g(core), "serviceaccounts"),
			r(write, g(core), "pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
			r(v("create"), g(core), "pods/eviction"),
			r(write, g(core), "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
				"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets", "events"),
			r(v("create"), g(core), "serviceaccounts/token"),
			r(write, g(apps), "statefulsets", "statefulsets/scale", "daemonsets", "deployments", "deployments/scale",
				"deployments/rollback", "replicasets", "replicasets/scale"),
			r(write, g(autoscaling), "horizontalpodautoscalers"),
			r(write, g(batch), "jobs", "cronjobs"),
			r(write, g(extensions), "daemonsets", "deployments", "deployments/scale", "deployments/rollback", "ingresses",
				"replicasets", "replicasets/scale", "replicationcontrollers/scale", "networkpolicies"),
			r(write, g(policyGroup), "poddisruptionbudgets"),
			r(write, g(networking), "networkpolicies", "ingresses"),
			r(readWrite, g(coordination), "leases")),
		part("system:aggregate-to-view", AggregateToView,
			r(read, g(core), "pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
				"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps"),
			r(read, g(core), "limitranges", "resourcequotas", "bindings", "events", "pods/status", "resourcequotas/status",
				"namespaces/status", "replicationcontrollers/status", "pods/log"),
			r(read, g(core), "namespaces"),
			r(read, g(discoveryGroup), "endpointslices"),
			r(read, g(apps), "controllerrevisions", "statefulsets", "statefulsets/status", "statefulsets/scale",
				"daemonsets", "daemonsets/status", "deployments", "deployments/status", "deployments/scale",
				"replicasets", "replicasets/status", "replicasets/scale"),
			r(read, g(autoscaling), "horizontalpodautoscalers", "horizontalpodautoscalers/status"),
			r(read, g(batch), "jobs", "cronjobs", "cronjobs/status", "jobs/status"),
			r(read, g(extensions), "daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
				"ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status",
				"replicationcontrollers/scale", "networkpolicies"),
			r(read, g(policyGroup), "poddisruptionbudgets", "poddisruptionbudgets/status"),
			r(read, g(networking), "networkpolicies", "ingresses", "ingresses/status")),
		clusterRole("system:node", NodeRules()...),
		clusterRole("system:node-proxier",
			r(v("list", "watch"), g(core), "services", "endpoints"),
			r(read, g(core), "nodes"),
			eventsRule(),
			r(v("list", "watch"), g(discoveryGroup), "endpointslices")),
		clusterRole("system:node-bootstrapper", r(v("create", "get", "list", "watch"), g(certificates), "certificatesigningrequests")),
		clusterRole("system:kubelet-api-admin",
			r(read, g(core), "nodes"),
			r(v("proxy"), g(core), "nodes"),
			r(v("*"), g(core), "nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log")),
		clusterRole("system:auth-delegator",
			r(v("create"), g(authnGroup), "tokenreviews"),
			r(v("create"), g(authzGroup), "subjectaccessreviews")),
		clusterRole("system:kube-scheduler",
			eventsRule(),
			r(v("create"), g(coordination), "leases"),
			named(v("get", "update", "list", "watch"), g(coordination), []string{"leases"}, "kube-scheduler"),
			r(readWrite, g(coordination), "leasecandidates"),
			r(read, g(core), "nodes"),
			r(v("get", "list", "watch", "delete"), g(core), "pods"),
			r(v("create"), g(core), "pods/binding", "bindings"),
			r(v("patch", "update"), g(core), "pods/status"),
			r(read, g(core), "services", "replicationcontrollers"),
			r(read, g(apps, extensions), "replicasets"),
			r(read, g(apps), "statefulsets"),
			r(read, g(policyGroup), "poddisruptionbudgets"),
			r(read, g(core), "persistentvolumeclaims", "persistentvolumes"),
			r(v("create"), g(authnGroup), "tokenreviews"),
			r(v("create"), g(authzGroup), "subjectaccessreviews"),
			r(read, g(storageGroup), "csinodes"),
			r(read, g(storageGroup), "volumeattachments"),
			r(read, g(core), "namespaces"),
			r(read, g(storageGroup), "csidrivers"),
			r(read, g(storageGroup), "csistoragecapacities"),
			// Dynamic resource allocation (GA), with the rules of its
			// features on by default in 1.37: extended resources, device
			// taint rules, granular claim status.
			r(read, g(resourceGroup), "deviceclasses"),
			r(readUpdate, g(resourceGroup), "resourceclaims", "resourceclaims/status"),
			r(v("update"), g(core), "pods/finalizers"),
			r(read, g(resourceGroup), "resourceslices"),
			r(v("create", "delete"), g(resourceGroup), "resourceclaims"),
			r(read, g(resourceGroup), "devicetaintrules"),
			r(v("update", "patch"), g(resourceGroup), "resourceclaims/binding")),
		clusterRole("system:volume-scheduler",
			r(v("get", "list", "watch", "update", "patch"), g(core), "persistentvolumes"),
			r(read, g(storageGroup), "storageclasses"),
			r(v("get", "list", "watch", "update", "patch"), g(core), "persistentvolumeclaims")),
		clusterRole("system:kube-controller-manager",
			eventsRule(),
			r(v("create"), g(coordination), "leases"),
			named(v("get", "update"), g(coordination), []string{"leases"}, "kube-controller-manager"),
			r(v("create"), g(core), "secrets", "serviceaccounts"),
			r(v("delete"), g(core), "secrets"),
			r(v("get"), g(core), "namespaces", "secrets", "serviceaccounts", "configmaps"),
			r(v("update"), g(core), "secrets", "serviceaccounts"),
			r(v("create"), g(authnGroup), "tokenreviews"),
			r(v("create"), g(authzGroup), "subjectaccessreviews"),
			r(v("list", "watch"), g("*"), "*"),
			r(v("create"), g(core), "serviceaccounts/token")),
		clusterRole("system:service-account-issuer-discovery", urls(v("get"), "/.well-known/openid-configuration", "/openid/v1/jwks")),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:nodeclient",
			r(v("create"), g(certificates), "certificatesigningrequests/nodeclient")),
		clusterRole("system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
			r(v("create"), g(certificates), "certificatesigningrequests/selfnodeclient")),
		clusterRole("system:certificates.k8s.io:legacy-unknown-approver",
			named(v("approve"), g(certificates), []string{"signers"}, "kubernetes.io/legacy-unknown")),
		clusterRole("system:certificates.k8s.io:kubelet-serving-approver",
			named(v("approve"), g(certificates), []string{"signers"}, "kubernetes.io/kubelet-serving")),
		clusterRole("system:certificates.k8s.io:kube-apiserver-client-approver",
			named(v("approve"), g(certificates), []string{"signers"}, "kubernetes.io/kube-apiserver-client")),
		clusterRole("system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
			named(v("approve"), g(certificates), []string{"signers"}, "kubernetes.io/kube-apiserver-client-kubelet")),
	}, kplaneClusterRoles()...)
}

// binding is a ClusterRoleBinding of the ClusterRole of the same name.
func binding(name string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{
		ObjectMeta: meta(name, nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "ClusterRole", Name: name},
		Subjects:   subjects,
	}
}

func groupSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacGroup, Name: name}
}

func userSubject(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacGroup, Name: name}
}

// The users the components authenticate as.
const (
	KubeScheduler         = "system:kube-scheduler"
	KubeControllerManager = "system:kube-controller-manager"
	KubeProxy             = "system:kube-proxy"
)

// ClusterRoleBindings returns the bootstrap ClusterRoleBindings other
// than the controllers' (see ControllerRoleBindings).
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	return append([]rbacv1.ClusterRoleBinding{
		binding("cluster-admin", groupSubject(authentication.SystemPrivilegedGroup)),
		binding("system:monitoring", groupSubject("system:monitoring")),
		binding("system:discovery", groupSubject(authentication.AllAuthenticated)),
		binding("system:basic-user", groupSubject(authentication.AllAuthenticated)),
		binding("system:public-info-viewer", groupSubject(authentication.AllAuthenticated), groupSubject(authentication.AllUnauthenticated)),
		binding("system:node-proxier", userSubject(KubeProxy)),
		binding("system:kube-controller-manager", userSubject(KubeControllerManager)),
		binding("system:kube-scheduler", userSubject(KubeScheduler)),
		binding("system:volume-scheduler", userSubject(KubeScheduler)),
		// Kubernetes leaves this binding empty and authorizes nodes with its
		// Node authorizer; kplane has none, so its nodes get the role.
		binding("system:node", groupSubject(authentication.NodesGroup)),
		binding("system:service-account-issuer-discovery", groupSubject(authentication.ServiceAccountsGroup)),
	}, kplaneClusterRoleBindings()...)
}
