// Package nodefit decides whether a pod may be placed on a node, by the
// rules kube-scheduler's filter plugins and the DaemonSet controller's
// predicates share: the pod's nodeSelector and required node affinity
// (NodeAffinity), the node's taints against the pod's tolerations
// (TaintToleration), and the pod's resource requests (NodeResourcesFit).
//
// Every function is pure: it reads only its arguments and is safe for
// concurrent use.
package nodefit
