package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func resourceClaim(reqs ...resourcev1.DeviceRequest) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: reqs}}}
}

func TestResourceClaimDefaultsAndValidation(t *testing.T) {
	c := resourceClaim(resourcev1.DeviceRequest{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}})
	ResourceClaims().Default(c)
	if e := c.Spec.Devices.Requests[0].Exactly; e.AllocationMode != resourcev1.DeviceAllocationModeExactCount || e.Count != 1 {
		t.Errorf("defaults: %+v", e)
	}
	if errs := ResourceClaims().Validate(c); len(errs) != 0 {
		t.Errorf("valid claim: %v", errs)
	}

	tests := []struct {
		name string
		obj  runtime.Object
		want []string
	}{
		{"neither exactly nor firstAvailable", resourceClaim(resourcev1.DeviceRequest{Name: "gpu"}), []string{
			"spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required",
		}},
		{"both", resourceClaim(resourcev1.DeviceRequest{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "c"},
			FirstAvailable: []resourcev1.DeviceSubRequest{{Name: "a", DeviceClassName: "c"}}}), []string{
			"spec.devices.requests[0]: Invalid value: null: exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set",
		}},
		{"bad exact request", resourceClaim(resourcev1.DeviceRequest{Name: "GPU", Exactly: &resourcev1.ExactDeviceRequest{
			AllocationMode: resourcev1.DeviceAllocationModeAll, Count: 2,
			Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `device.driver == "gpu.example.com"`}}, {CEL: &resourcev1.CELDeviceSelector{Expression: "dev.driver == 'x'"}}, {}},
		}}), []string{
			`spec.devices.requests[0].name: Invalid value: "GPU": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
			"spec.devices.requests[0].exactly.deviceClassName: Required value",
			"spec.devices.requests[0].exactly.selectors[1].cel.expression: Invalid value: \"dev.driver == 'x'\": compilation failed: ERROR: <input>:1:1: undeclared reference to 'dev' (in container '')\n | dev.driver == 'x'\n | ^",
			"spec.devices.requests[0].exactly.selectors[2].cel: Required value",
			"spec.devices.requests[0].exactly.count: Invalid value: 2: must not be specified when allocationMode is 'All'",
		}},
		{"first available, constraints", &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "default"}, Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{
			Requests: []resourcev1.DeviceRequest{{Name: "gpu", FirstAvailable: []resourcev1.DeviceSubRequest{
				{Name: "big", DeviceClassName: "big.example.com", AllocationMode: "ExactCount", Count: 1},
				{Name: "big", DeviceClassName: "small.example.com", AllocationMode: "Some"},
			}}},
			Constraints: []resourcev1.DeviceConstraint{{Requests: []string{"gpu/big", "gpu/huge", "cpu"}, MatchAttribute: ptr(resourcev1.FullyQualifiedName("example.com/model"))}},
		}}}, []string{
			`spec.devices.requests[0].firstAvailable[1]: Duplicate value: "big"`,
			`spec.devices.requests[0].firstAvailable[1].allocationMode: Unsupported value: "Some": supported values: "All", "ExactCount"`,
			`spec.devices.constraints[0].requests[1]: Invalid value: "gpu/huge": must be the name of a request in the claim or the name of a request and a subrequest separated by '/'`,
			`spec.devices.constraints[0].requests[2]: Invalid value: "cpu": must be the name of a request in the claim or the name of a request and a subrequest separated by '/'`,
		}},
		{"deviceclass selector must be bool", &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: "gpu"}, Spec: resourcev1.DeviceClassSpec{
			Selectors: []resourcev1.DeviceSelector{{CEL: &resourcev1.CELDeviceSelector{Expression: `"yes"`}}},
		}}, []string{`spec.selectors[0].cel.expression: Invalid value: "\"yes\"": must evaluate to bool`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var st Strategy = ResourceClaims()
			if _, ok := tc.obj.(*resourcev1.DeviceClass); ok {
				st = DeviceClasses()
			}
			if d := cmp.Diff(tc.want, errStrings(st.Validate(tc.obj))); d != "" {
				t.Errorf("errors (-want +got):\n%s", d)
			}
		})
	}
}

func TestResourceClaimUpdateRules(t *testing.T) {
	st := ResourceClaims()
	old := resourceClaim(resourcev1.DeviceRequest{Name: "gpu", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}})
	old.ResourceVersion = "1"
	st.Default(old)
	upd := old.DeepCopy()
	upd.Spec.Devices.Requests[0].Exactly.Count = 2
	if errs := st.ValidateUpdate(upd, old); len(errs) != 1 || errs[0].Field != "spec" || errs[0].Detail != "field is immutable" {
		t.Errorf("spec change: %v", errs)
	}
	upd = old.DeepCopy()
	upd.Status.ReservedFor = []resourcev1.ResourceClaimConsumerReference{{Resource: "pods", Name: "p", UID: "1"}, {Resource: "pods", Name: "q", UID: "1"}}
	want := []string{
		`status.reservedFor[1]: Duplicate value: "1"`,
		"status.reservedFor: Forbidden: may not be specified when `allocated` is not set",
	}
	if d := cmp.Diff(want, errStrings(st.ValidateUpdate(upd, old))); d != "" {
		t.Errorf("status (-want +got):\n%s", d)
	}
	// Status writes keep the spec.
	upd.Spec.Devices.Requests = nil
	out := st.PrepareForStatusUpdate(upd, old).(*resourcev1.ResourceClaim)
	if len(out.Spec.Devices.Requests) != 1 || len(out.Status.ReservedFor) != 2 {
		t.Errorf("status write: %+v", out)
	}
}

func TestResourceSliceValidation(t *testing.T) {
	node := "node-1"
	valid := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "s"},
		Spec: resourcev1.ResourceSliceSpec{
			Driver: "gpu.example.com", NodeName: &node, Pool: resourcev1.ResourcePool{Name: "node-1", ResourceSliceCount: 1},
			Devices: []resourcev1.Device{{Name: "gpu-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"model": {StringValue: ptr("a100")}}}},
		},
	}
	if errs := ResourceSlices().Validate(valid); len(errs) != 0 {
		t.Errorf("valid slice: %v", errs)
	}
	bad := valid.DeepCopy()
	bad.Spec.AllNodes = ptr(true)
	bad.Spec.Pool = resourcev1.ResourcePool{Generation: -1}
	bad.Spec.Devices = append(bad.Spec.Devices, resourcev1.Device{Name: "gpu-0", Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"model": {}}})
	want := []string{
		"spec.pool.name: Required value",
		"spec.pool.generation: Invalid value: -1: must be greater than or equal to 0",
		"spec.pool.resourceSliceCount: Invalid value: 0: must be greater than zero",
		"spec: Invalid value: \"{`nodeName`, `allNodes`}\": exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required, but multiple fields are set",
		`spec.devices[1].name: Duplicate value: "gpu-0"`,
		"spec.devices[1].attributes[model]: Required value: exactly one value must be specified",
	}
	if d := cmp.Diff(want, errStrings(ResourceSlices().Validate(bad))); d != "" {
		t.Errorf("errors (-want +got):\n%s", d)
	}
	none := valid.DeepCopy()
	none.Spec.NodeName = nil
	if errs := ResourceSlices().Validate(none); len(errs) != 1 || errs[0].Field != "spec" {
		t.Errorf("no node selection: %v", errs)
	}
	// nodeName and driver are fixed, and selectable.
	valid.ResourceVersion = "1"
	upd := valid.DeepCopy()
	other := "node-2"
	upd.Spec.NodeName, upd.Spec.Driver = &other, "npu.example.com"
	if errs := ResourceSlices().ValidateUpdate(upd, valid); len(errs) != 2 {
		t.Errorf("immutable: %v", errs)
	}
	_, fs, err := ResourceSlices().GetAttrs(valid)
	if err != nil || fs["spec.nodeName"] != "node-1" || fs["spec.driver"] != "gpu.example.com" {
		t.Errorf("fields %v %v", fs, err)
	}
}

func TestResourceClaimTemplateValidation(t *testing.T) {
	tpl := &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: "default"},
		Spec:       resourcev1.ResourceClaimTemplateSpec{Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{Name: "gpu"}}}}},
	}
	want := []string{"spec.spec.devices.requests[0]: Required value: exactly one of `exactly` or `firstAvailable` is required"}
	if d := cmp.Diff(want, errStrings(ResourceClaimTemplates().Validate(tpl))); d != "" {
		t.Errorf("(-want +got):\n%s", d)
	}
}

func TestDeviceTaintRuleValidation(t *testing.T) {
	for _, tc := range []struct {
		name  string
		taint resourcev1.DeviceTaint
		want  string // "" valid; else the field in error
	}{
		{"valid", resourcev1.DeviceTaint{Key: "example.com/broken", Value: "yes", Effect: resourcev1.DeviceTaintEffectNoSchedule}, ""},
		{"no effect", resourcev1.DeviceTaint{Key: "k"}, "spec.taint.effect"},
		{"bad effect", resourcev1.DeviceTaint{Key: "k", Effect: "PreferNoSchedule"}, "spec.taint.effect"},
		{"bad key", resourcev1.DeviceTaint{Key: "a b", Effect: resourcev1.DeviceTaintEffectNone}, "spec.taint.key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			errs := DeviceTaintRules().Validate(&resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: "r"}, Spec: resourcev1.DeviceTaintRuleSpec{Taint: tc.taint}})
			switch {
			case tc.want == "" && len(errs) != 0:
				t.Errorf("errors %v, want none", errs)
			case tc.want != "" && (len(errs) != 1 || errs[0].Field != tc.want):
				t.Errorf("errors %v, want one on %s", errs, tc.want)
			}
		})
	}
}
