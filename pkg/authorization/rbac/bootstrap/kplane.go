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

// kplaneClusterRoleBindings bind kplane's components to what they do: the
// controller manager's user to its Lease, and the simulated nodes, which
// also schedule, to kube-scheduler's role. The controllers themselves run
// as their ServiceAccounts (ControllerRoleBindings), as
// kube-controller-manager does with --use-service-account-credentials,
// kplane's default; see ManagerControllerRoleBindings for a manager that
// runs them as itself.
func kplaneClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	sched := binding("system:kube-scheduler", userSubject(NodeSimulator))
	sched.Name = "kplane:node-simulator:scheduler"
	return []rbacv1.ClusterRoleBinding{
		binding("kplane:controller-manager-leader-election", userSubject(KubeControllerManager)),
		sched,
	}
}

// ManagerControllerRoleBindings binds the controller manager's user
// (system:kube-controller-manager) to the role of every controller, named
// kplane:controller-manager:<controller>. A manager run with
// --use-service-account-credentials=false runs every controller as
// itself and needs them: system:kube-controller-manager's own role, as
// in Kubernetes, does not let it write pods or ReplicaSets. They are not
// part of the bootstrap policy (the API server does not know how the
// manager runs, and Kubernetes leaves that grant to the administrator);
// `kplane up --use-service-account-credentials=false`, which runs both,
// creates them. Such a manager gives up the separation between
// controllers: a bug in one may write what any other controller may.
func ManagerControllerRoleBindings() []rbacv1.ClusterRoleBinding {
	var out []rbacv1.ClusterRoleBinding
	for _, c := range controllers() {
		b := binding(ControllerRolePrefix+c.name, userSubject(KubeControllerManager))
		b.Name = "kplane:controller-manager:" + c.name
		out = append(out, b)
	}
	return out
}
