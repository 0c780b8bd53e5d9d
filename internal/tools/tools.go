//go:build tools

// Package tools pins the modules kplane's packages are built on, so that
// go.mod and go.sum hold them while those packages grow.
package tools

import (
	_ "github.com/anishathalye/porcupine"
	_ "github.com/google/btree"
	_ "github.com/google/go-cmp/cmp"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/prometheus/client_golang/prometheus/testutil"
	_ "github.com/spf13/cobra"
	_ "go.etcd.io/etcd/client/v3"
	_ "go.etcd.io/etcd/server/v3/embed"
	_ "go.uber.org/goleak"
	_ "golang.org/x/time/rate"
	_ "k8s.io/api/apps/v1"
	_ "k8s.io/api/coordination/v1"
	_ "k8s.io/api/core/v1"
	_ "k8s.io/apimachinery/pkg/api/errors"
	_ "k8s.io/apimachinery/pkg/api/meta"
	_ "k8s.io/apimachinery/pkg/api/validation"
	_ "k8s.io/apimachinery/pkg/runtime/serializer"
	_ "k8s.io/apimachinery/pkg/util/strategicpatch"
	_ "k8s.io/apimachinery/pkg/util/validation"
	_ "k8s.io/utils/clock/testing"
	_ "sigs.k8s.io/yaml"
)
