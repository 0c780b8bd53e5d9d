//go:build tools

// Package compat runs real Kubernetes clients against kplane.
package compat

import (
	_ "github.com/kplane/kplane/pkg/storage"
	_ "k8s.io/client-go/informers"
	_ "k8s.io/client-go/kubernetes"
	_ "k8s.io/client-go/tools/clientcmd"
	_ "k8s.io/client-go/tools/leaderelection"
	_ "sigs.k8s.io/controller-runtime"
)
