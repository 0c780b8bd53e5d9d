package registry

// Builtin returns the strategies of every resource kplane serves, in
// discovery order. Each call returns fresh values.
func Builtin() []Strategy {
	return []Strategy{
		Namespaces(),
		Pods(),
		Nodes(),
		Events(),
		ConfigMaps(),
		Secrets(),
		Deployments(),
		ReplicaSets(),
		Leases(),
	}
}
