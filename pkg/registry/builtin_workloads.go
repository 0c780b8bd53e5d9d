package registry

// workloadResources returns the strategies of the workload resources: core (ServiceAccounts, PersistentVolumes and their claims, ResourceQuotas, LimitRanges, PodTemplates, ReplicationControllers), apps (StatefulSets, DaemonSets, ControllerRevisions) and batch (Jobs, CronJobs).
func workloadResources() []Strategy {
	return []Strategy{
		ServiceAccounts(),
		PersistentVolumeClaims(),
		PersistentVolumes(),
		ResourceQuotas(),
		LimitRanges(),
		PodTemplates(),
		ReplicationControllers(),
		StatefulSets(),
		DaemonSets(),
		ControllerRevisions(),
		Jobs(),
		CronJobs(),
	}
}
