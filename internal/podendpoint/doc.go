// Package podendpoint holds what the EndpointSlice and Endpoints
// controllers agree on: which pods of a Service are its endpoints, how a
// Service port resolves to a pod's port, which Services a pod belongs to,
// which pod changes matter to them, and the last-change trigger time of a
// Service's endpoints. Its functions are pure; TriggerTimes is safe for
// concurrent use.
package podendpoint
