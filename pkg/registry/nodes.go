package registry

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
)

// Nodes is core/v1 nodes: cluster-scoped, status subresource. Unlike
// other resources, a node keeps the status it is created with, as in
// Kubernetes: a node agent registers its node with addresses, capacity
// and conditions in one request.
func Nodes() Strategy {
	return &Resource[*corev1.Node]{
		Meta: Info{
			GVK:      corev1.SchemeGroupVersion.WithKind("Node"),
			Resource: "nodes", Singular: "node", ShortNames: []string{"no"},
			Status: true,
		},
		NewFunc:        func() *corev1.Node { return &corev1.Node{} },
		NewListFunc:    func() runtime.Object { return &corev1.NodeList{} },
		CopyStatus:     func(dst, src *corev1.Node) { dst.Status = src.Status },
		ResetForStatus: func(n, old *corev1.Node) { n.Spec = old.Spec },
		Fields: func(n *corev1.Node) fields.Set {
			unschedulable := "false"
			if n.Spec.Unschedulable {
				unschedulable = "true"
			}
			return fields.Set{"spec.unschedulable": unschedulable}
		},
	}
}
