//go:build tools

// Package tools pins the Kubernetes commands run.sh builds, so that go.mod
// and go.sum track them: kube-apiserver, kube-controller-manager and
// kube-scheduler from k8s.io/kubernetes, and etcd for the kube-apiserver.
package tools

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
