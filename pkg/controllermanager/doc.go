// Package controllermanager runs kplane's controllers in one process, the
// way kube-controller-manager runs Kubernetes': one shared informer factory
// feeds every enabled controller, a Lease-based leader election decides
// which of several replicas acts, and an HTTP endpoint serves /healthz and
// /metrics.
//
//	m, err := controllermanager.New(controllermanager.Config{Client: c, Gates: gates})
//	...
//	err = m.Run(ctx)
//
// Guarantees:
//   - Only the leader acts: informers and controllers start when this
//     process starts leading (or at once with leader election disabled),
//     never before.
//   - Leadership loss is fatal: when the lease is lost, every controller
//     and informer is stopped and waited for, and Run returns an error
//     wrapping leaderelection.ErrLeadershipLost, as kube-controller-manager
//     exits. The caller is expected to exit too; a Manager runs once.
//   - Clean shutdown: when Run's context ends, Run stops the controllers,
//     the informers, the election (releasing the lease) and the HTTP
//     listener, and returns only after every goroutine it started has
//     exited.
//   - Identities: with Config.UseServiceAccountCredentials each controller
//     writes as its own ServiceAccount, kube-system/<name> as
//     kube-controller-manager names them, through a client of its own
//     with TokenRequest tokens (created when the ServiceAccount is missing,
//     renewed at 80% of their hour and after a 401); the informers, the
//     leader election and the node simulator keep Config.Client (and
//     NodeClient). Without it every controller shares Config.Client.
//   - Selection: Config.Controllers uses kube-controller-manager's
//     --controllers syntax ("*" is every controller enabled by default,
//     "name" enables one, "-name" disables one); unknown names are an
//     error from New.
//
// Feature gates (see Features) are read from the read-only Config.Gates;
// each one changes what the manager does, as documented on its constant.
package controllermanager
