package tables

import "reflect"

// platformPrinters returns the printers of storage.k8s.io, admissionregistration.k8s.io, resource.k8s.io, HorizontalPodAutoscalers.
func platformPrinters() map[reflect.Type]*printer {
	return map[reflect.Type]*printer{}
}
