package openapi

import (
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
)

// servedKinds are the resources kplane's API server serves.
func servedKinds() []Kind {
	return []Kind{
		{GVK: corev1.SchemeGroupVersion.WithKind("Namespace"), Resource: "namespaces", Object: &corev1.Namespace{}, List: &corev1.NamespaceList{}, Subresources: []string{"status"}},
		{GVK: corev1.SchemeGroupVersion.WithKind("Pod"), Resource: "pods", Namespaced: true, Object: &corev1.Pod{}, List: &corev1.PodList{}, Subresources: []string{"status"}},
		{GVK: corev1.SchemeGroupVersion.WithKind("Node"), Resource: "nodes", Object: &corev1.Node{}, List: &corev1.NodeList{}, Subresources: []string{"status"}},
		{GVK: corev1.SchemeGroupVersion.WithKind("Event"), Resource: "events", Namespaced: true, Object: &corev1.Event{}, List: &corev1.EventList{}},
		{GVK: corev1.SchemeGroupVersion.WithKind("ConfigMap"), Resource: "configmaps", Namespaced: true, Object: &corev1.ConfigMap{}, List: &corev1.ConfigMapList{}},
		{GVK: corev1.SchemeGroupVersion.WithKind("Secret"), Resource: "secrets", Namespaced: true, Object: &corev1.Secret{}, List: &corev1.SecretList{}},
		{GVK: appsv1.SchemeGroupVersion.WithKind("Deployment"), Resource: "deployments", Namespaced: true, Object: &appsv1.Deployment{}, List: &appsv1.DeploymentList{}, Subresources: []string{"status", "scale"}},
		{GVK: appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), Resource: "replicasets", Namespaced: true, Object: &appsv1.ReplicaSet{}, List: &appsv1.ReplicaSetList{}, Subresources: []string{"status", "scale"}},
		{GVK: coordinationv1.SchemeGroupVersion.WithKind("Lease"), Resource: "leases", Namespaced: true, Object: &coordinationv1.Lease{}, List: &coordinationv1.LeaseList{}},
	}
}
