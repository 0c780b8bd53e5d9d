package registry

// serviceResources returns the strategies of Services, Endpoints, EndpointSlices, ServiceCIDRs and IPAddresses.
func serviceResources() []Strategy {
	return []Strategy{Services(), Endpoints(), EndpointSlices(), ServiceCIDRs(), IPAddresses()}
}
