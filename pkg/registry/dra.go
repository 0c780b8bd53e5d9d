package registry

import (
	"fmt"
	"strings"

	"github.com/google/cel-go/cel"
	resourcev1 "k8s.io/api/resource/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// The limits Kubernetes puts on dynamic resource allocation objects.
const (
	draPoolNameMaxLength         = 253
	draDeviceRequestsMaxSize     = 32
	draFirstAvailableMaxSize     = 8
	draDeviceSelectorsMaxSize    = 32
	draCELExpressionMaxLength    = 10 * 1024
	draResourceSliceMaxDevices   = 128
	draReservedForMaxSize        = 256
	draAttributeNameMaxLength    = 32
	draAttributeStringMaxLength  = 64
	draDeviceAttributesMaxLength = 32
)

// DeviceClasses is resource.k8s.io/v1 deviceclasses: cluster-scoped
// classes of devices, their selectors compiled as CEL.
func DeviceClasses() Strategy {
	return &Resource[*resourcev1.DeviceClass]{
		Meta: Info{
			GVK:      resourcev1.SchemeGroupVersion.WithKind("DeviceClass"),
			Resource: "deviceclasses", Singular: "deviceclass",
		},
		NewFunc:     func() *resourcev1.DeviceClass { return &resourcev1.DeviceClass{} },
		NewListFunc: func() runtime.Object { return &resourcev1.DeviceClassList{} },
		Spec:        func(c *resourcev1.DeviceClass) any { return c.Spec },
		ValidateFunc: func(c *resourcev1.DeviceClass) field.ErrorList {
			spec := field.NewPath("spec")
			errs := validateDeviceSelectors(c.Spec.Selectors, spec.Child("selectors"))
			for i, cfg := range c.Spec.Config {
				errs = append(errs, validateOpaqueConfig(cfg.Opaque, spec.Child("config").Index(i))...)
			}
			if n := c.Spec.ExtendedResourceName; n != nil {
				for _, msg := range validation.IsQualifiedName(*n) {
					errs = append(errs, field.Invalid(spec.Child("extendedResourceName"), *n, msg))
				}
			}
			return errs
		},
	}
}

// ResourceClaims is resource.k8s.io/v1 resourceclaims: namespaced, the spec
// fixed once created, a status subresource with the allocation.
func ResourceClaims() Strategy {
	return &Resource[*resourcev1.ResourceClaim]{
		Meta: Info{
			GVK:      resourcev1.SchemeGroupVersion.WithKind("ResourceClaim"),
			Resource: "resourceclaims", Singular: "resourceclaim", Namespaced: true, Status: true,
		},
		NewFunc:        func() *resourcev1.ResourceClaim { return &resourcev1.ResourceClaim{} },
		NewListFunc:    func() runtime.Object { return &resourcev1.ResourceClaimList{} },
		Spec:           func(c *resourcev1.ResourceClaim) any { return c.Spec },
		CopyStatus:     func(dst, src *resourcev1.ResourceClaim) { dst.Status = src.Status },
		ResetForStatus: func(c, old *resourcev1.ResourceClaim) { c.Spec = old.Spec },
		ResetStatus:    func(c *resourcev1.ResourceClaim) { c.Status = resourcev1.ResourceClaimStatus{} },
		Defaults:       func(c *resourcev1.ResourceClaim) { defaultDeviceClaim(&c.Spec.Devices) },
		ValidateFunc: func(c *resourcev1.ResourceClaim) field.ErrorList {
			return validateDeviceClaim(&c.Spec.Devices, field.NewPath("spec", "devices"))
		},
		ValidateUpdateFunc: func(c, old *resourcev1.ResourceClaim) field.ErrorList {
			errs := apivalidation.ValidateImmutableField(c.Spec, old.Spec, field.NewPath("spec"))
			return append(errs, validateClaimStatus(&c.Status)...)
		},
	}
}

// ResourceClaimTemplates is resource.k8s.io/v1 resourceclaimtemplates: the
// claims pods get made from them; the spec is fixed once created.
func ResourceClaimTemplates() Strategy {
	return &Resource[*resourcev1.ResourceClaimTemplate]{
		Meta: Info{
			GVK:      resourcev1.SchemeGroupVersion.WithKind("ResourceClaimTemplate"),
			Resource: "resourceclaimtemplates", Singular: "resourceclaimtemplate", Namespaced: true,
		},
		NewFunc:     func() *resourcev1.ResourceClaimTemplate { return &resourcev1.ResourceClaimTemplate{} },
		NewListFunc: func() runtime.Object { return &resourcev1.ResourceClaimTemplateList{} },
		Defaults:    func(t *resourcev1.ResourceClaimTemplate) { defaultDeviceClaim(&t.Spec.Spec.Devices) },
		ValidateFunc: func(t *resourcev1.ResourceClaimTemplate) field.ErrorList {
			spec := field.NewPath("spec")
			errs := apivalidation.ValidateObjectMeta(&t.Spec.ObjectMeta, false, apivalidation.NameIsDNSSubdomain, spec.Child("metadata"))
			// The claims get their names and namespaces from the pod.
			errs = filterOut(errs, spec.Child("metadata", "name").String(), spec.Child("metadata", "namespace").String())
			return append(errs, validateDeviceClaim(&t.Spec.Spec.Devices, spec.Child("spec", "devices"))...)
		},
		ValidateUpdateFunc: func(t, old *resourcev1.ResourceClaimTemplate) field.ErrorList {
			return apivalidation.ValidateImmutableField(t.Spec, old.Spec, field.NewPath("spec"))
		},
	}
}

func filterOut(errs field.ErrorList, paths ...string) field.ErrorList {
	var out field.ErrorList
	for _, e := range errs {
		keep := true
		for _, p := range paths {
			if e.Field == p {
				keep = false
			}
		}
		if keep {
			out = append(out, e)
		}
	}
	return out
}

// ResourceSlices is resource.k8s.io/v1 resourceslices: cluster-scoped, the
// devices a driver publishes for a node or a set of nodes; spec.nodeName
// and spec.driver are selectable fields, as in Kubernetes.
func ResourceSlices() Strategy {
	return &Resource[*resourcev1.ResourceSlice]{
		Meta: Info{
			GVK:      resourcev1.SchemeGroupVersion.WithKind("ResourceSlice"),
			Resource: "resourceslices", Singular: "resourceslice",
		},
		NewFunc:     func() *resourcev1.ResourceSlice { return &resourcev1.ResourceSlice{} },
		NewListFunc: func() runtime.Object { return &resourcev1.ResourceSliceList{} },
		Spec:        func(s *resourcev1.ResourceSlice) any { return s.Spec },
		ValidateFunc: func(s *resourcev1.ResourceSlice) field.ErrorList {
			return validateResourceSliceSpec(&s.Spec, field.NewPath("spec"))
		},
		ValidateUpdateFunc: func(s, old *resourcev1.ResourceSlice) field.ErrorList {
			spec := field.NewPath("spec")
			errs := apivalidation.ValidateImmutableField(s.Spec.NodeName, old.Spec.NodeName, spec.Child("nodeName"))
			return append(errs, apivalidation.ValidateImmutableField(s.Spec.Driver, old.Spec.Driver, spec.Child("driver"))...)
		},
		Fields: func(s *resourcev1.ResourceSlice) fields.Set {
			return fields.Set{"spec.nodeName": deref(s.Spec.NodeName), "spec.driver": s.Spec.Driver}
		},
	}
}

// DeviceTaintRules is resource.k8s.io/v1 devicetaintrules: cluster-scoped
// taints put on the devices a selector picks, with a status subresource.
// kube-scheduler 1.37 watches them.
func DeviceTaintRules() Strategy {
	return &Resource[*resourcev1.DeviceTaintRule]{
		Meta: Info{
			GVK:      resourcev1.SchemeGroupVersion.WithKind("DeviceTaintRule"),
			Resource: "devicetaintrules", Singular: "devicetaintrule", Status: true,
		},
		NewFunc:        func() *resourcev1.DeviceTaintRule { return &resourcev1.DeviceTaintRule{} },
		NewListFunc:    func() runtime.Object { return &resourcev1.DeviceTaintRuleList{} },
		Spec:           func(r *resourcev1.DeviceTaintRule) any { return r.Spec },
		CopyStatus:     func(dst, src *resourcev1.DeviceTaintRule) { dst.Status = src.Status },
		ResetForStatus: func(r, old *resourcev1.DeviceTaintRule) { r.Spec = old.Spec },
		ResetStatus:    func(r *resourcev1.DeviceTaintRule) { r.Status = resourcev1.DeviceTaintRuleStatus{} },
		ValidateFunc: func(r *resourcev1.DeviceTaintRule) field.ErrorList {
			return validateDeviceTaint(&r.Spec.Taint, field.NewPath("spec", "taint"))
		},
	}
}

// validateDeviceTaint checks a taint's key and value as node taints' are,
// and its effect.
func validateDeviceTaint(t *resourcev1.DeviceTaint, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(t.Key) {
		errs = append(errs, field.Invalid(fld.Child("key"), t.Key, msg))
	}
	if t.Value != "" {
		for _, msg := range validation.IsValidLabelValue(t.Value) {
			errs = append(errs, field.Invalid(fld.Child("value"), t.Value, msg))
		}
	}
	switch t.Effect {
	case resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNone:
	case "":
		errs = append(errs, field.Required(fld.Child("effect"), ""))
	default:
		errs = append(errs, field.NotSupported(fld.Child("effect"), t.Effect,
			[]resourcev1.DeviceTaintEffect{resourcev1.DeviceTaintEffectNoSchedule, resourcev1.DeviceTaintEffectNoExecute, resourcev1.DeviceTaintEffectNone}))
	}
	return errs
}

func defaultDeviceClaim(c *resourcev1.DeviceClaim) {
	for i := range c.Requests {
		r := &c.Requests[i]
		if e := r.Exactly; e != nil {
			defaultAllocationMode(&e.AllocationMode, &e.Count)
			defaultTolerations(e.Tolerations)
		}
		for j := range r.FirstAvailable {
			s := &r.FirstAvailable[j]
			defaultAllocationMode(&s.AllocationMode, &s.Count)
			defaultTolerations(s.Tolerations)
		}
	}
}

func defaultAllocationMode(mode *resourcev1.DeviceAllocationMode, count *int64) {
	if *mode == "" {
		*mode = resourcev1.DeviceAllocationModeExactCount
	}
	if *mode == resourcev1.DeviceAllocationModeExactCount && *count == 0 {
		*count = 1
	}
}

func defaultTolerations(ts []resourcev1.DeviceToleration) {
	for i := range ts {
		if ts[i].Operator == "" {
			ts[i].Operator = resourcev1.DeviceTolerationOpEqual
		}
	}
}

func validateDNSLabel(v string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(v) {
		errs = append(errs, field.Invalid(fld, v, msg))
	}
	return errs
}

func validateDNSSubdomain(v string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(v) {
		errs = append(errs, field.Invalid(fld, v, msg))
	}
	return errs
}

func validateDeviceClaim(c *resourcev1.DeviceClaim, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	reqs := fld.Child("requests")
	if len(c.Requests) > draDeviceRequestsMaxSize {
		errs = append(errs, field.TooMany(reqs, len(c.Requests), draDeviceRequestsMaxSize))
	}
	names := map[string]map[string]bool{}
	for i, r := range c.Requests {
		at := reqs.Index(i)
		errs = append(errs, validateDNSLabel(r.Name, at.Child("name"))...)
		if _, dup := names[r.Name]; dup {
			errs = append(errs, field.Duplicate(at, r.Name))
		}
		sub := map[string]bool{}
		names[r.Name] = sub
		switch {
		case r.Exactly == nil && len(r.FirstAvailable) == 0:
			errs = append(errs, field.Required(at, "exactly one of `exactly` or `firstAvailable` is required"))
		case r.Exactly != nil && len(r.FirstAvailable) > 0:
			errs = append(errs, field.Invalid(at, nil, "exactly one of `exactly` or `firstAvailable` is required, but multiple fields are set"))
		case r.Exactly != nil:
			e := r.Exactly
			errs = append(errs, validateDeviceRequestBody(e.DeviceClassName, e.Selectors, e.AllocationMode, e.Count, at.Child("exactly"))...)
		default:
			fa := at.Child("firstAvailable")
			if len(r.FirstAvailable) > draFirstAvailableMaxSize {
				errs = append(errs, field.TooMany(fa, len(r.FirstAvailable), draFirstAvailableMaxSize))
			}
			for j, s := range r.FirstAvailable {
				sat := fa.Index(j)
				errs = append(errs, validateDNSLabel(s.Name, sat.Child("name"))...)
				if sub[s.Name] {
					errs = append(errs, field.Duplicate(sat, s.Name))
				}
				sub[s.Name] = true
				errs = append(errs, validateDeviceRequestBody(s.DeviceClassName, s.Selectors, s.AllocationMode, s.Count, sat)...)
			}
		}
	}
	known := func(ref string) bool {
		req, subName, hasSub := strings.Cut(ref, "/")
		s, ok := names[req]
		if !ok || strings.Contains(subName, "/") {
			return false
		}
		return !hasSub || s[subName]
	}
	for i, con := range c.Constraints {
		at := fld.Child("constraints").Index(i)
		for j, ref := range con.Requests {
			if !known(ref) {
				errs = append(errs, field.Invalid(at.Child("requests").Index(j), ref, "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"))
			}
		}
		if con.MatchAttribute == nil && con.DistinctAttribute == nil {
			errs = append(errs, field.Required(at, "exactly one of `matchAttribute` or `distinctAttribute` is required"))
		}
		if a := con.MatchAttribute; a != nil {
			errs = append(errs, validateFullyQualifiedName(string(*a), at.Child("matchAttribute"))...)
		}
		if a := con.DistinctAttribute; a != nil {
			errs = append(errs, validateFullyQualifiedName(string(*a), at.Child("distinctAttribute"))...)
		}
	}
	for i, cfg := range c.Config {
		at := fld.Child("config").Index(i)
		for j, ref := range cfg.Requests {
			if !known(ref) {
				errs = append(errs, field.Invalid(at.Child("requests").Index(j), ref, "must be the name of a request in the claim or the name of a request and a subrequest separated by '/'"))
			}
		}
		errs = append(errs, validateOpaqueConfig(cfg.Opaque, at)...)
	}
	return errs
}

func validateDeviceRequestBody(class string, sels []resourcev1.DeviceSelector, mode resourcev1.DeviceAllocationMode, count int64, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if class == "" {
		errs = append(errs, field.Required(fld.Child("deviceClassName"), ""))
	} else {
		errs = append(errs, validateDNSSubdomain(class, fld.Child("deviceClassName"))...)
	}
	errs = append(errs, validateDeviceSelectors(sels, fld.Child("selectors"))...)
	switch mode {
	case resourcev1.DeviceAllocationModeAll:
		if count != 0 {
			errs = append(errs, field.Invalid(fld.Child("count"), count, fmt.Sprintf("must not be specified when allocationMode is '%s'", mode)))
		}
	case resourcev1.DeviceAllocationModeExactCount:
		if count <= 0 {
			errs = append(errs, field.Invalid(fld.Child("count"), count, "must be greater than zero"))
		}
	default:
		errs = append(errs, field.NotSupported(fld.Child("allocationMode"), mode, []resourcev1.DeviceAllocationMode{resourcev1.DeviceAllocationModeAll, resourcev1.DeviceAllocationModeExactCount}))
	}
	return errs
}

func validateDeviceSelectors(sels []resourcev1.DeviceSelector, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(sels) > draDeviceSelectorsMaxSize {
		errs = append(errs, field.TooMany(fld, len(sels), draDeviceSelectorsMaxSize))
	}
	for i, s := range sels {
		at := fld.Index(i)
		if s.CEL == nil {
			errs = append(errs, field.Required(at.Child("cel"), ""))
			continue
		}
		expr := at.Child("cel", "expression")
		if len(s.CEL.Expression) > draCELExpressionMaxLength {
			errs = append(errs, field.TooLong(expr, "", draCELExpressionMaxLength))
			continue
		}
		errs = append(errs, compileDeviceSelector(s.CEL.Expression, expr)...)
	}
	return errs
}

func validateOpaqueConfig(o *resourcev1.OpaqueDeviceConfiguration, fld *field.Path) field.ErrorList {
	if o == nil {
		return field.ErrorList{field.Required(fld.Child("opaque"), "")}
	}
	at := fld.Child("opaque")
	errs := validateCSIDriverName(o.Driver, at.Child("driver"))
	if len(o.Parameters.Raw) == 0 {
		errs = append(errs, field.Required(at.Child("parameters"), ""))
	}
	return errs
}

// validateFullyQualifiedName checks an attribute name with its domain.
func validateFullyQualifiedName(name string, fld *field.Path) field.ErrorList {
	domain, id, ok := strings.Cut(name, "/")
	if !ok || domain == "" {
		return field.ErrorList{field.Required(fld, "a fully qualified name must be a domain and a name separated by a slash")}
	}
	errs := validateDNSSubdomain(domain, fld)
	return append(errs, validateCIdentifier(id, fld)...)
}

func validateCIdentifier(id string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(id) > draAttributeNameMaxLength {
		errs = append(errs, field.TooLong(fld, id, draAttributeNameMaxLength))
	}
	for _, msg := range validation.IsCIdentifier(id) {
		errs = append(errs, field.Invalid(fld, id, msg))
	}
	return errs
}

func validateClaimStatus(st *resourcev1.ResourceClaimStatus) field.ErrorList {
	status := field.NewPath("status")
	var errs field.ErrorList
	rf := status.Child("reservedFor")
	if len(st.ReservedFor) > draReservedForMaxSize {
		errs = append(errs, field.TooMany(rf, len(st.ReservedFor), draReservedForMaxSize))
	}
	uids := map[string]bool{}
	for i, r := range st.ReservedFor {
		at := rf.Index(i)
		if r.Resource == "" {
			errs = append(errs, field.Required(at.Child("resource"), ""))
		}
		if r.Name == "" {
			errs = append(errs, field.Required(at.Child("name"), ""))
		}
		if r.UID == "" {
			errs = append(errs, field.Required(at.Child("uid"), ""))
		} else if uids[string(r.UID)] {
			errs = append(errs, field.Duplicate(at, string(r.UID)))
		}
		uids[string(r.UID)] = true
	}
	if len(st.ReservedFor) > 0 && st.Allocation == nil {
		errs = append(errs, field.Forbidden(rf, "may not be specified when `allocated` is not set"))
	}
	if a := st.Allocation; a != nil {
		for i, r := range a.Devices.Results {
			at := status.Child("allocation", "devices", "results").Index(i)
			errs = append(errs, validateCSIDriverName(r.Driver, at.Child("driver"))...)
			errs = append(errs, validatePoolName(r.Pool, at.Child("pool"))...)
			errs = append(errs, validateDNSLabel(r.Device, at.Child("device"))...)
		}
	}
	return errs
}

func validatePoolName(name string, fld *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fld, "")}
	}
	var errs field.ErrorList
	if len(name) > draPoolNameMaxLength {
		errs = append(errs, field.TooLong(fld, "", draPoolNameMaxLength))
	}
	for _, part := range strings.Split(name, "/") {
		errs = append(errs, validateDNSSubdomain(part, fld)...)
	}
	return errs
}

func validateResourceSliceSpec(s *resourcev1.ResourceSliceSpec, fld *field.Path) field.ErrorList {
	errs := validateCSIDriverName(s.Driver, fld.Child("driver"))
	pool := fld.Child("pool")
	errs = append(errs, validatePoolName(s.Pool.Name, pool.Child("name"))...)
	errs = append(errs, apivalidation.ValidateNonnegativeField(s.Pool.Generation, pool.Child("generation"))...)
	if s.Pool.ResourceSliceCount <= 0 {
		errs = append(errs, field.Invalid(pool.Child("resourceSliceCount"), s.Pool.ResourceSliceCount, "must be greater than zero"))
	}
	var set []string
	if s.NodeName != nil {
		set = append(set, "`nodeName`")
		for _, msg := range apivalidation.NameIsDNSSubdomain(*s.NodeName, false) {
			errs = append(errs, field.Invalid(fld.Child("nodeName"), *s.NodeName, msg))
		}
	}
	if s.NodeSelector != nil {
		set = append(set, "`nodeSelector`")
		if len(s.NodeSelector.NodeSelectorTerms) != 1 {
			errs = append(errs, field.Invalid(fld.Child("nodeSelector", "nodeSelectorTerms"), s.NodeSelector.NodeSelectorTerms, "must have exactly one node selector term"))
		}
	}
	if deref(s.AllNodes) {
		set = append(set, "`allNodes`")
	}
	if deref(s.PerDeviceNodeSelection) {
		set = append(set, "`perDeviceNodeSelection`")
	}
	const one = "exactly one of `nodeName`, `nodeSelector`, `allNodes`, `perDeviceNodeSelection` is required"
	switch len(set) {
	case 0:
		errs = append(errs, field.Required(fld, one))
	case 1:
	default:
		errs = append(errs, field.Invalid(fld, "{"+strings.Join(set, ", ")+"}", one+", but multiple fields are set"))
	}
	devs := fld.Child("devices")
	if len(s.Devices) > draResourceSliceMaxDevices {
		errs = append(errs, field.TooMany(devs, len(s.Devices), draResourceSliceMaxDevices))
	}
	names := map[string]bool{}
	for i, d := range s.Devices {
		at := devs.Index(i)
		errs = append(errs, validateDNSLabel(d.Name, at.Child("name"))...)
		if names[d.Name] {
			errs = append(errs, field.Duplicate(at.Child("name"), d.Name))
		}
		names[d.Name] = true
		if len(d.Attributes)+len(d.Capacity) > draDeviceAttributesMaxLength {
			errs = append(errs, field.Invalid(at, len(d.Attributes)+len(d.Capacity), fmt.Sprintf("the total number of attributes and capacities must not exceed %d", draDeviceAttributesMaxLength)))
		}
		for name, a := range d.Attributes {
			aat := at.Child("attributes").Key(string(name))
			errs = append(errs, validateQualifiedAttributeName(string(name), aat)...)
			n := 0
			for _, set := range []bool{a.IntValue != nil, a.BoolValue != nil, a.StringValue != nil, a.VersionValue != nil,
				a.IntValues != nil, a.BoolValues != nil, a.StringValues != nil, a.VersionValues != nil} {
				if set {
					n++
				}
			}
			switch {
			case n == 0:
				errs = append(errs, field.Required(aat, "exactly one value must be specified"))
			case n > 1:
				errs = append(errs, field.Invalid(aat, a, "exactly one value must be specified"))
			}
			if v := a.StringValue; v != nil && len(*v) > draAttributeStringMaxLength {
				errs = append(errs, field.TooLong(aat.Child("string"), "", draAttributeStringMaxLength))
			}
		}
		for name := range d.Capacity {
			errs = append(errs, validateQualifiedAttributeName(string(name), at.Child("capacity").Key(string(name)))...)
		}
	}
	return errs
}

// validateQualifiedAttributeName checks an attribute or capacity name: a C
// identifier, optionally after a DNS subdomain and a slash.
func validateQualifiedAttributeName(name string, fld *field.Path) field.ErrorList {
	if domain, id, ok := strings.Cut(name, "/"); ok {
		errs := validateDNSSubdomain(domain, fld)
		return append(errs, validateCIdentifier(id, fld)...)
	}
	return validateCIdentifier(name, fld)
}

// compileDeviceSelector compiles a device selector: a bool expression over
// device (its driver, attributes and capacity).
func compileDeviceSelector(expr string, fld *field.Path) field.ErrorList {
	envs, err := admissionEnvs()
	if err != nil {
		return field.ErrorList{field.InternalError(fld, err)}
	}
	ast, iss := envs[draVarsDevice].Compile(expr)
	if iss != nil && iss.Err() != nil {
		return field.ErrorList{field.Invalid(fld, expr, "compilation failed: "+strings.TrimSpace(iss.Err().Error()))}
	}
	if out := ast.OutputType(); !out.IsExactType(cel.BoolType) && !out.IsExactType(cel.DynType) {
		return field.ErrorList{field.Invalid(fld, expr, "must evaluate to bool")}
	}
	return nil
}
