package client

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
)

// Platform resources: autoscaling, storage.k8s.io, admissionregistration.k8s.io, resource.k8s.io.
var (
	HorizontalPodAutoscalers = Resource[*autoscalingv2.HorizontalPodAutoscaler]{autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers"), "HorizontalPodAutoscaler", true}
	// HorizontalPodAutoscalersV1 reaches the same objects as
	// HorizontalPodAutoscalers through autoscaling/v1.
	HorizontalPodAutoscalersV1 = Resource[*autoscalingv1.HorizontalPodAutoscaler]{autoscalingv1.SchemeGroupVersion.WithResource("horizontalpodautoscalers"), "HorizontalPodAutoscaler", true}

	StorageClasses          = Resource[*storagev1.StorageClass]{storagev1.SchemeGroupVersion.WithResource("storageclasses"), "StorageClass", false}
	CSIDrivers              = Resource[*storagev1.CSIDriver]{storagev1.SchemeGroupVersion.WithResource("csidrivers"), "CSIDriver", false}
	CSINodes                = Resource[*storagev1.CSINode]{storagev1.SchemeGroupVersion.WithResource("csinodes"), "CSINode", false}
	VolumeAttachments       = Resource[*storagev1.VolumeAttachment]{storagev1.SchemeGroupVersion.WithResource("volumeattachments"), "VolumeAttachment", false}
	CSIStorageCapacities    = Resource[*storagev1.CSIStorageCapacity]{storagev1.SchemeGroupVersion.WithResource("csistoragecapacities"), "CSIStorageCapacity", true}
	VolumeAttributesClasses = Resource[*storagev1.VolumeAttributesClass]{storagev1.SchemeGroupVersion.WithResource("volumeattributesclasses"), "VolumeAttributesClass", false}

	ValidatingWebhookConfigurations = Resource[*admissionregistrationv1.ValidatingWebhookConfiguration]{admissionregistrationv1.SchemeGroupVersion.WithResource("validatingwebhookconfigurations"), "ValidatingWebhookConfiguration", false}
	MutatingWebhookConfigurations   = Resource[*admissionregistrationv1.MutatingWebhookConfiguration]{admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingwebhookconfigurations"), "MutatingWebhookConfiguration", false}

	ValidatingAdmissionPolicies       = Resource[*admissionregistrationv1.ValidatingAdmissionPolicy]{admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies"), "ValidatingAdmissionPolicy", false}
	ValidatingAdmissionPolicyBindings = Resource[*admissionregistrationv1.ValidatingAdmissionPolicyBinding]{admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicybindings"), "ValidatingAdmissionPolicyBinding", false}
	MutatingAdmissionPolicies         = Resource[*admissionregistrationv1.MutatingAdmissionPolicy]{admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicies"), "MutatingAdmissionPolicy", false}
	MutatingAdmissionPolicyBindings   = Resource[*admissionregistrationv1.MutatingAdmissionPolicyBinding]{admissionregistrationv1.SchemeGroupVersion.WithResource("mutatingadmissionpolicybindings"), "MutatingAdmissionPolicyBinding", false}

	DeviceClasses          = Resource[*resourcev1.DeviceClass]{resourcev1.SchemeGroupVersion.WithResource("deviceclasses"), "DeviceClass", false}
	ResourceClaims         = Resource[*resourcev1.ResourceClaim]{resourcev1.SchemeGroupVersion.WithResource("resourceclaims"), "ResourceClaim", true}
	ResourceClaimTemplates = Resource[*resourcev1.ResourceClaimTemplate]{resourcev1.SchemeGroupVersion.WithResource("resourceclaimtemplates"), "ResourceClaimTemplate", true}
	ResourceSlices         = Resource[*resourcev1.ResourceSlice]{resourcev1.SchemeGroupVersion.WithResource("resourceslices"), "ResourceSlice", false}
)
