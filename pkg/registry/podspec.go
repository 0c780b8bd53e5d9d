package registry

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// defaultTerminationGracePeriod is the grace period of a pod that sets none.
const defaultTerminationGracePeriod int64 = 30

// defaultPodSpec fills in the fields kube-apiserver defaults in a pod spec,
// so that objects read back look as they would from Kubernetes.
func defaultPodSpec(spec *corev1.PodSpec) {
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.TerminationGracePeriodSeconds == nil {
		g := defaultTerminationGracePeriod
		spec.TerminationGracePeriodSeconds = &g
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
}

func defaultContainer(c *corev1.Container) {
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = corev1.PullIfNotPresent
		if imageTag(c.Image) == "latest" || imageTag(c.Image) == "" && !strings.Contains(c.Image, "@") {
			c.ImagePullPolicy = corev1.PullAlways
		}
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
}

// imageTag returns the tag of an image reference, "" when it has none.
func imageTag(image string) string {
	if i := strings.Index(image, "@"); i >= 0 {
		image = image[:i]
	}
	slash := strings.LastIndex(image, "/")
	colon := strings.LastIndex(image, ":")
	if colon > slash {
		return image[colon+1:]
	}
	return ""
}

var (
	restartPolicies = sets.New(corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever)
	pullPolicies    = sets.New(corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever)
	dnsPolicies     = sets.New(corev1.DNSClusterFirst, corev1.DNSClusterFirstWithHostNet, corev1.DNSDefault, corev1.DNSNone)
	protocols       = sets.New(corev1.ProtocolTCP, corev1.ProtocolUDP, corev1.ProtocolSCTP)
)

// validatePodSpec checks the parts of a pod spec that kplane relies on and
// that clients most often get wrong.
func validatePodSpec(spec *corev1.PodSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(spec.Containers) == 0 {
		errs = append(errs, field.Required(fld.Child("containers"), ""))
	}
	names := sets.New[string]()
	errs = append(errs, validateContainers(spec.InitContainers, names, fld.Child("initContainers"))...)
	errs = append(errs, validateContainers(spec.Containers, names, fld.Child("containers"))...)
	if !restartPolicies.Has(spec.RestartPolicy) {
		errs = append(errs, field.NotSupported(fld.Child("restartPolicy"), spec.RestartPolicy, sets.List(restartPolicies)))
	}
	if !dnsPolicies.Has(spec.DNSPolicy) {
		errs = append(errs, field.NotSupported(fld.Child("dnsPolicy"), spec.DNSPolicy, sets.List(dnsPolicies)))
	}
	if g := spec.TerminationGracePeriodSeconds; g != nil && *g < 0 {
		errs = append(errs, field.Invalid(fld.Child("terminationGracePeriodSeconds"), *g, "must be greater than or equal to 0"))
	}
	if g := spec.ActiveDeadlineSeconds; g != nil && *g <= 0 {
		errs = append(errs, field.Invalid(fld.Child("activeDeadlineSeconds"), *g, "must be greater than 0"))
	}
	if spec.NodeName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(spec.NodeName, false) {
			errs = append(errs, field.Invalid(fld.Child("nodeName"), spec.NodeName, msg))
		}
	}
	if spec.ServiceAccountName != "" {
		for _, msg := range apivalidation.NameIsDNSSubdomain(spec.ServiceAccountName, false) {
			errs = append(errs, field.Invalid(fld.Child("serviceAccountName"), spec.ServiceAccountName, msg))
		}
	}
	errs = append(errs, metav1validation.ValidateLabels(spec.NodeSelector, fld.Child("nodeSelector"))...)
	return errs
}

func validateContainers(cs []corev1.Container, names sets.Set[string], fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range cs {
		p := fld.Index(i)
		switch {
		case c.Name == "":
			errs = append(errs, field.Required(p.Child("name"), ""))
		case names.Has(c.Name):
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		default:
			for _, msg := range validation.IsDNS1123Label(c.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), c.Name, msg))
			}
		}
		names.Insert(c.Name)
		if strings.TrimSpace(c.Image) == "" {
			errs = append(errs, field.Required(p.Child("image"), ""))
		}
		if c.ImagePullPolicy != "" && !pullPolicies.Has(c.ImagePullPolicy) {
			errs = append(errs, field.NotSupported(p.Child("imagePullPolicy"), c.ImagePullPolicy, sets.List(pullPolicies)))
		}
		for j, port := range c.Ports {
			pp := p.Child("ports").Index(j)
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(pp.Child("containerPort"), port.ContainerPort, msg))
			}
			if port.Protocol != "" && !protocols.Has(port.Protocol) {
				errs = append(errs, field.NotSupported(pp.Child("protocol"), port.Protocol, sets.List(protocols)))
			}
		}
		for j, e := range c.Env {
			if e.Name == "" {
				errs = append(errs, field.Required(p.Child("env").Index(j).Child("name"), ""))
			}
		}
		errs = append(errs, validateResources(&c.Resources, p.Child("resources"))...)
	}
	return errs
}

// validateResources checks that quantities are not negative and that no
// request exceeds its limit, in kube-apiserver's words.
func validateResources(r *corev1.ResourceRequirements, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, name := range sortedResourceNames(r.Limits) {
		if q := r.Limits[name]; q.Sign() < 0 {
			errs = append(errs, field.Invalid(fld.Child("limits").Key(string(name)), q.String(), apivalidation.IsNegativeErrorMsg))
		}
	}
	for _, name := range sortedResourceNames(r.Requests) {
		q := r.Requests[name]
		if q.Sign() < 0 {
			errs = append(errs, field.Invalid(fld.Child("requests").Key(string(name)), q.String(), apivalidation.IsNegativeErrorMsg))
		}
		if limit, ok := r.Limits[name]; ok && q.Cmp(limit) > 0 {
			errs = append(errs, field.Invalid(fld.Child("requests"), q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, limit.String())))
		}
	}
	return errs
}

// sortedResourceNames returns the names of a resource list in order, so
// that errors come out the same way every time.
func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for name := range l {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// defaultRequestsFromLimits gives each container of a pod a request equal
// to its limit where it sets a limit but no request, as Kubernetes
// defaults pods (not pod templates).
func defaultRequestsFromLimits(spec *corev1.PodSpec) {
	for _, cs := range [][]corev1.Container{spec.InitContainers, spec.Containers} {
		for i := range cs {
			r := &cs[i].Resources
			for name, limit := range r.Limits {
				if _, ok := r.Requests[name]; ok {
					continue
				}
				if r.Requests == nil {
					r.Requests = corev1.ResourceList{}
				}
				r.Requests[name] = limit.DeepCopy()
			}
		}
	}
}

// validatePodTemplate checks a workload's pod template against its selector.
func validatePodTemplate(tpl *corev1.PodTemplateSpec, selector *metav1.LabelSelector, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, metav1validation.ValidateLabels(tpl.Labels, fld.Child("metadata", "labels"))...)
	errs = append(errs, apivalidation.ValidateAnnotations(tpl.Annotations, fld.Child("metadata", "annotations"))...)
	if selector != nil {
		sel, err := metav1.LabelSelectorAsSelector(selector)
		if err == nil && !sel.Empty() && !sel.Matches(labels.Set(tpl.Labels)) {
			errs = append(errs, field.Invalid(fld.Child("metadata", "labels"), tpl.Labels, "`selector` does not match template `labels`"))
		}
	}
	errs = append(errs, validatePodSpec(&tpl.Spec, fld.Child("spec"))...)
	if tpl.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		errs = append(errs, field.NotSupported(fld.Child("spec", "restartPolicy"), tpl.Spec.RestartPolicy, []corev1.RestartPolicy{corev1.RestartPolicyAlways}))
	}
	return errs
}

// validateSelector checks a workload's required, non-empty label selector.
func validateSelector(selector *metav1.LabelSelector, fld *field.Path) field.ErrorList {
	if selector == nil {
		return field.ErrorList{field.Required(fld, "")}
	}
	errs := metav1validation.ValidateLabelSelector(selector, metav1validation.LabelSelectorValidationOptions{}, fld)
	if len(selector.MatchLabels)+len(selector.MatchExpressions) == 0 {
		errs = append(errs, field.Invalid(fld, selector, "empty selector is invalid for deployment"))
	}
	return errs
}

func validateNonNegative(v int64, fld *field.Path) field.ErrorList {
	return apivalidation.ValidateNonnegativeField(v, fld)
}
