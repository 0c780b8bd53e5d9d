package registry

// platformResources returns the strategies of storage.k8s.io, admissionregistration.k8s.io, resource.k8s.io and HorizontalPodAutoscalers.
func platformResources() []Strategy {
	return []Strategy{
		// autoscaling/v2 first: the preferred version, and the one stored.
		HorizontalPodAutoscalers(),
		HorizontalPodAutoscalersV1(),
		StorageClasses(),
		CSIDrivers(),
		CSINodes(),
		VolumeAttachments(),
		CSIStorageCapacities(),
		VolumeAttributesClasses(),
		ValidatingWebhookConfigurations(),
		MutatingWebhookConfigurations(),
		ValidatingAdmissionPolicies(),
		ValidatingAdmissionPolicyBindings(),
		MutatingAdmissionPolicies(),
		MutatingAdmissionPolicyBindings(),
		DeviceClasses(),
		ResourceClaims(),
		ResourceClaimTemplates(),
		ResourceSlices(),
		DeviceTaintRules(),
	}
}
