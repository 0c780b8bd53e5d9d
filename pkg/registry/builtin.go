package registry

// Builtin returns the strategies of every resource kplane serves, in
// discovery order (a group is listed where its first resource is). Each
// call returns fresh values.
func Builtin() []Strategy {
	out := []Strategy{
		Namespaces(),
		Pods(),
		Nodes(),
		Events(),
		EventsV1(),
		ConfigMaps(),
		Secrets(),
		Deployments(),
		ReplicaSets(),
		Leases(),
	}
	out = append(out, serviceResources()...)
	out = append(out, workloadResources()...)
	out = append(out, policyResources()...)
	out = append(out, platformResources()...)
	return out
}
