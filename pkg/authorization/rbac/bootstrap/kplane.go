package bootstrap

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// The identities of kplane's own components, as `kplane up` and
// `kplane apiserver` issue their client certificates.
const (
	// NodeSimulator is the user the simulated nodes run as (group
	// system:nodes). They also schedule pods, as kube-scheduler would.
	NodeSimulator = "system:node:kplane-nodesim"
	// ControllerManagerLease is the Lease kplane's controller manager
	// elects its leader with (in kube-system).
	ControllerManagerLease = "kplane-controller-manager"
)

// kplaneClusterRoles are the ClusterRoles kplane adds to Kubernetes'
// policy: the controller manager's leader-election Lease, which kplane
// names after itself.
func kplaneClusterRoles() []rbacv1.ClusterRole {
	return []rbacv1.ClusterRole{
		clusterRole("kplane:controller-manager-leader-election",
			r(v("create"), g(coordination), "leases"),
			named(v("get", "update"), g(coordination), []string{"leases"}, ControllerManagerLease)),
	}
}

// kplaneClusterRoleBindings bind kplane's components to what they do.
// kube-controller-manager runs each controller with its ServiceAccount's
// credentials (--use-service-account-credentials); kplane's controller
// manager runs them all with its own client, so its user is bound to the
// role of every controller (and a bug in one controller may write what
// another controller may). The simulated nodes also schedule, so their
// user gets kube-scheduler's role.
func kplaneClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	out := []rbacv1.ClusterRoleBinding{
		binding("kplane:controller-manager-leader-election", userSubject(KubeControllerManager)),
	}
	for _, c := range controllers() {
		b := binding(ControllerRolePrefix+c.name, userSubject(KubeControllerManager))
		b.Name = "kplane:controller-manager:" + c.name
		out = append(out, b)
	}
	sched := binding("system:kube-scheduler", userSubject(NodeSimulator))
	sched.Name = "kplane:node-simulator:scheduler"
	return append(out, sched)
}
