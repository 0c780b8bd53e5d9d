package bootstrap

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// controllerRole is one controller's role, named for its ServiceAccount.
type controllerRole struct {
	name  string
	rules []rbacv1.PolicyRule
}

// controllers lists the roles of the controllers kplane runs, and of a few
// more of kube-controller-manager's (certificate, node, service-cidrs,
// ttl) so that it runs against kplane with
// --use-service-account-credentials, as Kubernetes' bootstrap policy grants
// them.
func controllers() []controllerRole {
	return []controllerRole{
		{"certificate-controller", []rbacv1.PolicyRule{
			r(v("get", "list", "watch", "delete"), g(certificates), "certificatesigningrequests"),
			r(v("update"), g(certificates), "certificatesigningrequests/status", "certificatesigningrequests/approval"),
			named(v("approve"), g(certificates), []string{"signers"}, "kubernetes.io/kube-apiserver-client-kubelet"),
			named(v("sign"), g(certificates), []string{"signers"}, "kubernetes.io/legacy-unknown",
				"kubernetes.io/kube-apiserver-client", "kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving"),
			r(v("create"), g(authzGroup), "subjectaccessreviews"),
			eventsRule(),
		}},
		{"clusterrole-aggregation-controller", []rbacv1.PolicyRule{
			r(v("escalate", "get", "list", "watch", "update", "patch"), g(rbacGroup), "clusterroles"),
		}},
		{"cronjob-controller", []rbacv1.PolicyRule{
			r(v("get", "list", "watch", "update"), g(batch), "cronjobs"),
			r(v("get", "list", "watch", "create", "update", "delete", "patch"), g(batch), "jobs"),
			r(v("update"), g(batch), "cronjobs/status"),
			r(v("update"), g(batch), "cronjobs/finalizers"),
			r(v("list", "delete"), g(core), "pods"),
			eventsRule(),
		}},
		{"daemon-set-controller", []rbacv1.PolicyRule{
			r(read, g(extensions, apps), "daemonsets"),
			r(v("update"), g(extensions, apps), "daemonsets/status"),
			r(v("update"), g(extensions, apps), "daemonsets/finalizers"),
			r(v("list", "watch"), g(core), "nodes"),
			r(v("list", "watch", "create", "delete", "patch"), g(core), "pods"),
			r(v("create"), g(core), "pods/binding"),
			r(v("get", "list", "watch", "create", "delete", "update", "patch"), g(apps), "controllerrevisions"),
			eventsRule(),
		}},
		{"deployment-controller", []rbacv1.PolicyRule{
			r(v("get", "list", "watch", "update"), g(extensions, apps), "deployments"),
			r(v("update"), g(extensions, apps), "deployments/status"),
			r(v("update"), g(extensions, apps), "deployments/finalizers"),
			r(v("get", "list", "watch", "create", "update", "patch", "delete"), g(apps, extensions), "replicasets"),
			r(v("get", "list", "watch", "update"), g(core), "pods"),
			eventsRule(),
		}},
		{"disruption-controller", []rbacv1.PolicyRule{
			r(read, g(extensions, apps), "deployments"),
			r(read, g(apps, extensions), "replicasets"),
			r(read, g(core), "replicationcontrollers"),
			r(read, g(policyGroup), "poddisruptionbudgets"),
			r(read, g(apps), "statefulsets"),
			r(v("update"), g(policyGroup), "poddisruptionbudgets/status"),
			r(v("patch", "update"), g(core), "pods/status"),
			r(v("get"), g("*"), "*/scale"),
			eventsRule(),
		}},
		{"endpoint-controller", []rbacv1.PolicyRule{
			r(read, g(core), "services", "pods"),
			r(v("get", "list", "create", "update", "delete"), g(core), "endpoints"),
			r(v("create"), g(core), "endpoints/restricted"),
			eventsRule(),
		}},
		{"endpointslice-controller", []rbacv1.PolicyRule{
			r(read, g(core), "services", "pods", "nodes"),
			r(v("update"), g(core), "services/finalizers"),
			r(v("get", "list", "create", "update", "delete"), g(discoveryGroup), "endpointslices"),
			eventsRule(),
		}},
		{"generic-garbage-collector", []rbacv1.PolicyRule{
			r(v("get", "list", "watch", "patch", "update", "delete"), g("*"), "*"),
			eventsRule(),
		}},
		{"job-controller", []rbacv1.PolicyRule{
			r(v("get", "list", "watch", "update", "patch"), g(batch), "jobs"),
			r(v("update"), g(batch), "jobs/status"),
			r(v("update"), g(batch), "jobs/finalizers"),
			r(v("list", "watch", "create", "delete", "patch"), g(core), "pods"),
			eventsRule(),
		}},
		{"namespace-controller", []rbacv1.PolicyRule{
			r(v("get", "list", "watch", "delete"), g(core), "namespaces"),
			r(v("update"), g(core), "namespaces/finalize", "namespaces/status"),
			r(v("get", "list", "delete", "deletecollection"), g("*"), "*"),
		}},
		{"node-controller", []rbacv1.PolicyRule{
			r(v("get", "list", "watch", "update", "delete", "patch"), g(core), "nodes"),
			r(v("patch", "update"), g(core), "nodes/status"),
			r(v("patch", "update"), g(core), "pods/status"),
			r(v("list", "watch", "get", "delete"), g(core), "pods"),
			r(read, g(coordination), "leases"),
			eventsRule(),
		}},
		{"pod-garbage-collector", []rbacv1.PolicyRule{
			r(v("list", "watch", "delete"), g(core), "pods"),
			r(v("get", "list"), g(core), "nodes"),
			r(v("patch"), g(core), "pods/status"),
		}},
		{"replicaset-controller", []rbacv1.PolicyRule{
			r(v("get", "list", "watch", "update"), g(apps, extensions), "replicasets"),
			r(v("update"), g(apps, extensions), "replicasets/status"),
			r(v("update"), g(apps, extensions), "replicasets/finalizers"),
			r(v("list", "watch", "patch", "create", "delete"), g(core), "pods"),
			eventsRule(),
		}},
		{"replication-controller", []rbacv1.PolicyRule{
			r(v("get", "list", "watch", "update"), g(core), "replicationcontrollers"),
			r(v("update"), g(core), "replicationcontrollers/status"),
			r(v("update"), g(core), "replicationcontrollers/finalizers"),
			r(v("list", "watch", "patch", "create", "delete"), g(core), "pods"),
			eventsRule(),
		}},
		{"resourcequota-controller", []rbacv1.PolicyRule{
			r(v("list", "watch"), g("*"), "*"),
			r(v("update"), g(core), "resourcequotas/status"),
			eventsRule(),
		}},
		{"root-ca-cert-publisher", []rbacv1.PolicyRule{
			r(v("create", "update"), g(core), "configmaps"),
			eventsRule(),
		}},
		{"service-account-controller", []rbacv1.PolicyRule{
			r(v("create"), g(core), "serviceaccounts"),
			eventsRule(),
		}},
		{"service-cidrs-controller", []rbacv1.PolicyRule{
			r(v("get", "list", "watch", "patch", "update"), g(networking), "servicecidrs"),
			r(v("patch", "update"), g(networking), "servicecidrs/finalizers", "servicecidrs/status"),
			r(read, g(networking), "ipaddresses"),
			eventsRule(),
		}},
		{"statefulset-controller", []rbacv1.PolicyRule{
			r(v("list", "watch"), g(core), "pods"),
			r(read, g(apps), "statefulsets"),
			r(v("update"), g(apps), "statefulsets/status"),
			r(v("update"), g(apps), "statefulsets/finalizers"),
			r(v("get", "create", "delete", "update", "patch"), g(core), "pods"),
			r(v("get", "create", "delete", "update", "patch", "list", "watch"), g(apps), "controllerrevisions"),
			r(v("get", "create"), g(core), "persistentvolumeclaims"),
			r(v("update", "delete"), g(core), "persistentvolumeclaims"),
			eventsRule(),
		}},
		{"ttl-after-finished-controller", []rbacv1.PolicyRule{
			r(v("get", "list", "watch", "delete"), g(batch), "jobs"),
			eventsRule(),
		}},
		{"ttl-controller", []rbacv1.PolicyRule{
			r(v("update", "patch", "list", "watch"), g(core), "nodes"),
			eventsRule(),
		}},
	}
}

// ControllerRoles returns the system:controller:<name> ClusterRoles, in
// name order.
func ControllerRoles() []rbacv1.ClusterRole {
	var out []rbacv1.ClusterRole
	for _, c := range controllers() {
		out = append(out, clusterRole(ControllerRolePrefix+c.name, c.rules...))
	}
	return out
}

// ControllerRoleBindings binds each controller's role to the ServiceAccount
// kube-system/<name> the controller runs as.
func ControllerRoleBindings() []rbacv1.ClusterRoleBinding {
	var out []rbacv1.ClusterRoleBinding
	for _, c := range controllers() {
		out = append(out, binding(ControllerRolePrefix+c.name,
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: metav1.NamespaceSystem, Name: c.name}))
	}
	return out
}

// ControllerServiceAccount returns the user name the controller name runs
// as: system:serviceaccount:kube-system:<name>.
func ControllerServiceAccount(name string) string {
	return "system:serviceaccount:" + metav1.NamespaceSystem + ":" + name
}
