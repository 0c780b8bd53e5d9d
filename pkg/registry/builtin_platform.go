package registry

// platformResources returns the strategies of storage.k8s.io, admissionregistration.k8s.io, resource.k8s.io and HorizontalPodAutoscalers.
func platformResources() []Strategy {
	return []Strategy{
		HorizontalPodAutoscalers(),
		HorizontalPodAutoscalersV1(),
	}
}
