package client

import (
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// The workload resources: jobs and cron jobs, stateful and daemon sets and
// their revisions, replication controllers, and the core resources pods
// run with (service accounts, volumes and claims, quotas, limit ranges,
// pod templates).
var (
	Jobs                   = Resource[*batchv1.Job]{batchv1.SchemeGroupVersion.WithResource("jobs"), "Job", true}
	CronJobs               = Resource[*batchv1.CronJob]{batchv1.SchemeGroupVersion.WithResource("cronjobs"), "CronJob", true}
	StatefulSets           = Resource[*appsv1.StatefulSet]{appsv1.SchemeGroupVersion.WithResource("statefulsets"), "StatefulSet", true}
	DaemonSets             = Resource[*appsv1.DaemonSet]{appsv1.SchemeGroupVersion.WithResource("daemonsets"), "DaemonSet", true}
	ControllerRevisions    = Resource[*appsv1.ControllerRevision]{appsv1.SchemeGroupVersion.WithResource("controllerrevisions"), "ControllerRevision", true}
	ReplicationControllers = Resource[*corev1.ReplicationController]{corev1.SchemeGroupVersion.WithResource("replicationcontrollers"), "ReplicationController", true}
	ServiceAccounts        = Resource[*corev1.ServiceAccount]{corev1.SchemeGroupVersion.WithResource("serviceaccounts"), "ServiceAccount", true}
	PersistentVolumeClaims = Resource[*corev1.PersistentVolumeClaim]{corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), "PersistentVolumeClaim", true}
	PersistentVolumes      = Resource[*corev1.PersistentVolume]{corev1.SchemeGroupVersion.WithResource("persistentvolumes"), "PersistentVolume", false}
	ResourceQuotas         = Resource[*corev1.ResourceQuota]{corev1.SchemeGroupVersion.WithResource("resourcequotas"), "ResourceQuota", true}
	LimitRanges            = Resource[*corev1.LimitRange]{corev1.SchemeGroupVersion.WithResource("limitranges"), "LimitRange", true}
	PodTemplates           = Resource[*corev1.PodTemplate]{corev1.SchemeGroupVersion.WithResource("podtemplates"), "PodTemplate", true}
)
