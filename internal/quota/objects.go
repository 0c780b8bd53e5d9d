package quota

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// StorageClassSuffix joins a storage class and a claim resource name in
// the per-class quota names: <class>.storageclass.storage.k8s.io/requests.storage.
const StorageClassSuffix = ".storageclass.storage.k8s.io/"

// betaStorageClassAnnotation names a claim's class before
// spec.storageClassName existed; it wins when set.
const betaStorageClassAnnotation = "volume.beta.kubernetes.io/storage-class"

func one() resource.Quantity { return *resource.NewQuantity(1, resource.DecimalSI) }

// ServiceNames are the names a quota charges services under.
var ServiceNames = []corev1.ResourceName{
	CountPrefix + corev1.ResourceServices,
	corev1.ResourceServices,
	corev1.ResourceServicesLoadBalancers,
	corev1.ResourceServicesNodePorts,
}

// ServiceUsage is what svc uses: one service, one load balancer for a
// LoadBalancer, and a node port per port of a NodePort or LoadBalancer
// service (for a LoadBalancer that allocates none, per port given one
// explicitly).
func ServiceUsage(svc *corev1.Service) corev1.ResourceList {
	ports := int64(len(svc.Spec.Ports))
	out := corev1.ResourceList{
		CountPrefix + corev1.ResourceServices: one(),
		corev1.ResourceServices:               one(),
		corev1.ResourceServicesLoadBalancers:  *resource.NewQuantity(0, resource.DecimalSI),
		corev1.ResourceServicesNodePorts:      *resource.NewQuantity(0, resource.DecimalSI),
	}
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
	case corev1.ServiceTypeLoadBalancer:
		out[corev1.ResourceServicesLoadBalancers] = one()
		if a := svc.Spec.AllocateLoadBalancerNodePorts; a != nil && !*a {
			var n int64
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					n++
				}
			}
			ports = n
		}
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
	}
	return out
}

// IsClaimName reports whether a quota tracking name charges claims for
// it: persistentvolumeclaims, count/persistentvolumeclaims,
// requests.storage and their per-class forms.
func IsClaimName(name corev1.ResourceName) bool {
	s := string(name)
	switch name {
	case corev1.ResourcePersistentVolumeClaims, corev1.ResourceRequestsStorage, CountPrefix + corev1.ResourcePersistentVolumeClaims:
		return true
	}
	return strings.HasSuffix(s, StorageClassSuffix+string(corev1.ResourcePersistentVolumeClaims)) ||
		strings.HasSuffix(s, StorageClassSuffix+string(corev1.ResourceRequestsStorage))
}

// ClaimClass is the storage class pvc names: the beta annotation, else
// spec.storageClassName; "" for none.
func ClaimClass(pvc *corev1.PersistentVolumeClaim) string {
	if c, ok := pvc.Annotations[betaStorageClassAnnotation]; ok {
		return c
	}
	if pvc.Spec.StorageClassName != nil {
		return *pvc.Spec.StorageClassName
	}
	return ""
}

// ClaimUsage is what pvc uses: one claim, and its storage (the larger of
// its request and what was allocated to it, rounded up to a whole byte),
// in total and under its storage class.
func ClaimUsage(pvc *corev1.PersistentVolumeClaim) corev1.ResourceList {
	out := corev1.ResourceList{
		corev1.ResourcePersistentVolumeClaims:               one(),
		CountPrefix + corev1.ResourcePersistentVolumeClaims: one(),
	}
	class := ClaimClass(pvc)
	if class != "" {
		out[corev1.ResourceName(class+StorageClassSuffix+string(corev1.ResourcePersistentVolumeClaims))] = one()
	}
	req, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return out
	}
	storage := req.DeepCopy()
	if alloc, ok := pvc.Status.AllocatedResources[corev1.ResourceStorage]; ok && alloc.Cmp(storage) > 0 {
		storage = alloc.DeepCopy()
	}
	storage.RoundUp(0)
	out[corev1.ResourceRequestsStorage] = storage
	if class != "" {
		out[corev1.ResourceName(class+StorageClassSuffix+string(corev1.ResourceRequestsStorage))] = storage.DeepCopy()
	}
	return out
}
