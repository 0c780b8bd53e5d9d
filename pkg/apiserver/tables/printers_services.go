package tables

import "reflect"

// servicePrinters returns the printers of Services, Endpoints, EndpointSlices, ServiceCIDRs, IPAddresses.
func servicePrinters() map[reflect.Type]*printer {
	return map[reflect.Type]*printer{}
}
