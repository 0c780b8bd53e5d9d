package client

import (
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// Platform resources: autoscaling, storage.k8s.io, admissionregistration.k8s.io.
var (
	HorizontalPodAutoscalers = Resource[*autoscalingv2.HorizontalPodAutoscaler]{autoscalingv2.SchemeGroupVersion.WithResource("horizontalpodautoscalers"), "HorizontalPodAutoscaler", true}
	// HorizontalPodAutoscalersV1 reaches the same objects as
	// HorizontalPodAutoscalers through autoscaling/v1.
	HorizontalPodAutoscalersV1 = Resource[*autoscalingv1.HorizontalPodAutoscaler]{autoscalingv1.SchemeGroupVersion.WithResource("horizontalpodautoscalers"), "HorizontalPodAutoscaler", true}
)
