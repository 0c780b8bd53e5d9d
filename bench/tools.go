//go:build tools

// Package bench measures kplane side by side with its peers.
package bench

import (
	_ "github.com/kplane/kplane/pkg/storage"
	_ "k8s.io/client-go/tools/cache"
	_ "k8s.io/client-go/util/workqueue"
	_ "sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
)
