package apiextensions

import (
	"fmt"
	"net/url"
	"slices"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxSelectableFields bounds a version's selectableFields, as in Kubernetes.
const maxSelectableFields = 8

var (
	scopes              = []string{string(apiextensionsv1.ClusterScoped), string(apiextensionsv1.NamespaceScoped)}
	conversionTypes     = []string{string(apiextensionsv1.NoneConverter), string(apiextensionsv1.WebhookConverter)}
	columnTypes         = []string{"boolean", "date", "integer", "number", "string"}
	columnFormats       = []string{"byte", "date", "date-time", "double", "float", "int32", "int64", "password"}
	conversionReviewVer = []string{"v1", "v1beta1"}
)

// validateCRD checks a CRD as kube-apiserver's apiextensions.k8s.io/v1
// validation does.
func validateCRD(c *CRD) field.ErrorList {
	var errs field.ErrorList
	if want := c.Spec.Names.Plural + "." + c.Spec.Group; c.Name != want {
		errs = append(errs, field.Invalid(field.NewPath("metadata", "name"), c.Name, `must be spec.names.plural+"."+spec.group`))
	}
	errs = append(errs, validateSpec(&c.Spec, field.NewPath("spec"))...)
	errs = append(errs, validateStatus(c, field.NewPath("status"))...)
	return errs
}

// validateCRDUpdate adds the checks of a change to validateCRD's.
func validateCRDUpdate(c, old *CRD) field.ErrorList {
	errs := validateCRD(c)
	spec := field.NewPath("spec")
	if IsConditionTrue(old, apiextensionsv1.Established) {
		// These decide how objects are stored: fixed once served.
		errs = append(errs, apivalidation.ValidateImmutableField(c.Spec.Scope, old.Spec.Scope, spec.Child("scope"))...)
		errs = append(errs, apivalidation.ValidateImmutableField(c.Spec.Names.Kind, old.Spec.Names.Kind, spec.Child("names", "kind"))...)
	}
	// The CRD's name is made of these, and names never change.
	errs = append(errs, apivalidation.ValidateImmutableField(c.Spec.Group, old.Spec.Group, spec.Child("group"))...)
	errs = append(errs, apivalidation.ValidateImmutableField(c.Spec.Names.Plural, old.Spec.Names.Plural, spec.Child("names", "plural"))...)
	return errs
}

func validateSpec(spec *apiextensionsv1.CustomResourceDefinitionSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case spec.Group == "":
		errs = append(errs, field.Required(fld.Child("group"), ""))
	case len(validation.IsDNS1123Subdomain(spec.Group)) > 0:
		errs = append(errs, field.Invalid(fld.Child("group"), spec.Group, strings.Join(validation.IsDNS1123Subdomain(spec.Group), ",")))
	case len(strings.Split(spec.Group, ".")) < 2:
		errs = append(errs, field.Invalid(fld.Child("group"), spec.Group, "should be a domain with at least one dot"))
	}
	switch spec.Scope {
	case "":
		errs = append(errs, field.Required(fld.Child("scope"), ""))
	case apiextensionsv1.ClusterScoped, apiextensionsv1.NamespaceScoped:
	default:
		errs = append(errs, field.NotSupported(fld.Child("scope"), spec.Scope, scopes))
	}

	storage := 0
	seen := map[string]bool{}
	unique := true
	for i := range spec.Versions {
		v := &spec.Versions[i]
		vf := fld.Child("versions").Index(i)
		if v.Storage {
			storage++
		}
		if seen[v.Name] {
			unique = false
		}
		seen[v.Name] = true
		errs = append(errs, validateVersion(v, vf)...)
	}
	if !unique {
		errs = append(errs, field.Invalid(fld.Child("versions"), versionNames(spec.Versions), "must contain unique version names"))
	}
	if storage != 1 {
		errs = append(errs, field.Invalid(fld.Child("versions"), versionNames(spec.Versions), "must have exactly one version marked as storage version"))
	}

	names := fld.Child("names")
	if spec.Names.Plural == "" {
		errs = append(errs, field.Required(names.Child("plural"), ""))
	}
	if spec.Names.Singular == "" {
		errs = append(errs, field.Required(names.Child("singular"), ""))
	}
	if spec.Names.Kind == "" {
		errs = append(errs, field.Required(names.Child("kind"), ""))
	}
	if spec.Names.ListKind == "" {
		errs = append(errs, field.Required(names.Child("listKind"), ""))
	}
	errs = append(errs, validateNames(&spec.Names, names)...)

	if spec.PreserveUnknownFields {
		errs = append(errs, field.Invalid(fld.Child("preserveUnknownFields"), true, "cannot set to true, set x-kubernetes-preserve-unknown-fields to true in spec.versions[*].schema instead"))
	}
	errs = append(errs, validateConversion(spec.Conversion, fld.Child("conversion"))...)
	return errs
}

func versionNames(vs []apiextensionsv1.CustomResourceDefinitionVersion) []string {
	out := make([]string, len(vs))
	for i, v := range vs {
		out[i] = v.Name
	}
	return out
}

// validateNames checks spec.names or status.acceptedNames.
func validateNames(n *apiextensionsv1.CustomResourceDefinitionNames, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	label := func(f *field.Path, v, prefix string) {
		if msgs := validation.IsDNS1035Label(strings.ToLower(v)); v != "" && len(msgs) > 0 {
			errs = append(errs, field.Invalid(f, v, prefix+strings.Join(msgs, ",")))
		}
	}
	if msgs := validation.IsDNS1035Label(n.Plural); n.Plural != "" && len(msgs) > 0 {
		errs = append(errs, field.Invalid(fld.Child("plural"), n.Plural, strings.Join(msgs, ",")))
	}
	if msgs := validation.IsDNS1035Label(n.Singular); n.Singular != "" && len(msgs) > 0 {
		errs = append(errs, field.Invalid(fld.Child("singular"), n.Singular, strings.Join(msgs, ",")))
	}
	label(fld.Child("kind"), n.Kind, "may have mixed case, but should otherwise match: ")
	label(fld.Child("listKind"), n.ListKind, "may have mixed case, but should otherwise match: ")
	for i, s := range n.ShortNames {
		if msgs := validation.IsDNS1035Label(s); len(msgs) > 0 {
			errs = append(errs, field.Invalid(fld.Child("shortNames").Index(i), s, strings.Join(msgs, ",")))
		}
	}
	if n.Kind != "" && n.Kind == n.ListKind {
		errs = append(errs, field.Invalid(fld.Child("listKind"), n.ListKind, "kind and listKind may not be the same"))
	}
	for i, c := range n.Categories {
		if msgs := validation.IsDNS1035Label(c); len(msgs) > 0 {
			errs = append(errs, field.Invalid(fld.Child("categories").Index(i), c, strings.Join(msgs, ",")))
		}
	}
	return errs
}

func validateVersion(v *apiextensionsv1.CustomResourceDefinitionVersion, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if msgs := validation.IsDNS1035Label(v.Name); len(msgs) > 0 {
		errs = append(errs, field.Invalid(fld.Child("name"), v.Name, strings.Join(msgs, ",")))
	}
	statusEnabled := v.Subresources != nil && v.Subresources.Status != nil
	if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
		errs = append(errs, field.Required(fld.Child("schema", "openAPIV3Schema"), "schemas are required"))
	} else {
		errs = append(errs, validateVersionSchema(v.Schema.OpenAPIV3Schema, statusEnabled, fld.Child("schema", "openAPIV3Schema"))...)
	}
	if v.Subresources != nil && v.Subresources.Scale != nil {
		errs = append(errs, validateScale(v.Subresources.Scale, fld.Child("subresources", "scale"))...)
	}
	for i, col := range v.AdditionalPrinterColumns {
		errs = append(errs, validateColumn(&col, fld.Child("additionalPrinterColumns").Index(i))...)
	}
	if len(v.SelectableFields) > maxSelectableFields {
		errs = append(errs, field.TooMany(fld.Child("selectableFields"), len(v.SelectableFields), maxSelectableFields))
	}
	seen := map[string]bool{}
	for i, sf := range v.SelectableFields {
		f := fld.Child("selectableFields").Index(i).Child("jsonPath")
		if sf.JSONPath == "" {
			errs = append(errs, field.Required(f, ""))
			continue
		}
		if e := validateSimpleJSONPath(sf.JSONPath, f); len(e) > 0 {
			errs = append(errs, e...)
			continue
		}
		if seen[sf.JSONPath] {
			errs = append(errs, field.Duplicate(f, sf.JSONPath))
		}
		seen[sf.JSONPath] = true
		if sf.JSONPath == ".metadata.name" || sf.JSONPath == ".metadata.namespace" {
			errs = append(errs, field.Invalid(f, sf.JSONPath, "is an invalid path: metadata.name and metadata.namespace are selectable on every resource"))
			continue
		}
		if v.Schema != nil && v.Schema.OpenAPIV3Schema != nil {
			if t := schemaAt(v.Schema.OpenAPIV3Schema, sf.JSONPath); t == nil {
				errs = append(errs, field.Invalid(f, sf.JSONPath, "is an invalid path: does not refer to a field in the schema"))
			} else if t.Type != "string" && t.Type != "integer" && t.Type != "boolean" {
				errs = append(errs, field.Invalid(f, sf.JSONPath, "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed."))
			}
		}
	}
	if v.DeprecationWarning != nil && !v.Deprecated {
		errs = append(errs, field.Invalid(fld.Child("deprecationWarning"), *v.DeprecationWarning, "can only be set for deprecated versions"))
	}
	if v.DeprecationWarning != nil && len(*v.DeprecationWarning) > 256 {
		errs = append(errs, field.TooLong(fld.Child("deprecationWarning"), "", 256))
	}
	return errs
}

// schemaAt returns the schema a simple JSON path (".spec.a.b") points to
// in root, or nil.
func schemaAt(root *apiextensionsv1.JSONSchemaProps, path string) *apiextensionsv1.JSONSchemaProps {
	s := root
	for _, seg := range strings.Split(strings.TrimPrefix(path, "."), ".") {
		p, ok := s.Properties[seg]
		if !ok {
			return nil
		}
		s = &p
	}
	return s
}

func validateScale(sc *apiextensionsv1.CustomResourceSubresourceScale, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	path := func(p string, f *field.Path, prefixes []string, where string) {
		if e := validateSimpleJSONPath(p, f); len(e) > 0 {
			errs = append(errs, e...)
			return
		}
		for _, pre := range prefixes {
			if strings.HasPrefix(p, pre) {
				return
			}
		}
		errs = append(errs, field.Invalid(f, p, "should be a json path under "+where))
	}
	if sc.SpecReplicasPath == "" {
		errs = append(errs, field.Required(fld.Child("specReplicasPath"), ""))
	} else {
		path(sc.SpecReplicasPath, fld.Child("specReplicasPath"), []string{".spec."}, ".spec")
	}
	if sc.StatusReplicasPath == "" {
		errs = append(errs, field.Required(fld.Child("statusReplicasPath"), ""))
	} else {
		path(sc.StatusReplicasPath, fld.Child("statusReplicasPath"), []string{".status."}, ".status")
	}
	if p := sc.LabelSelectorPath; p != nil && *p != "" {
		path(*p, fld.Child("labelSelectorPath"), []string{".spec.", ".status."}, "either .spec or .status")
	}
	return errs
}

// validateSimpleJSONPath checks a path in dot notation from the object's
// root, as scale paths and selectable fields are written.
func validateSimpleJSONPath(s string, fld *field.Path) field.ErrorList {
	switch {
	case s == "":
		return field.ErrorList{field.Invalid(fld, s, "must not be empty")}
	case s[0] != '.':
		return field.ErrorList{field.Invalid(fld, s, "must be a simple json path starting with .")}
	case s != "." && slices.Contains(strings.Split(s[1:], "."), ""):
		return field.ErrorList{field.Invalid(fld, s, "must be a json path in the dot notation")}
	}
	return nil
}

func validateColumn(col *apiextensionsv1.CustomResourceColumnDefinition, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if col.Name == "" {
		errs = append(errs, field.Required(fld.Child("name"), ""))
	}
	switch {
	case col.Type == "":
		errs = append(errs, field.Required(fld.Child("type"), fmt.Sprintf("must be one of %s", strings.Join(columnTypes, ", "))))
	case !slices.Contains(columnTypes, col.Type):
		errs = append(errs, field.NotSupported(fld.Child("type"), col.Type, columnTypes))
	}
	if col.Format != "" && !slices.Contains(columnFormats, col.Format) {
		errs = append(errs, field.NotSupported(fld.Child("format"), col.Format, columnFormats))
	}
	if col.JSONPath == "" {
		errs = append(errs, field.Required(fld.Child("jsonPath"), ""))
	} else if _, err := ParseJSONPath(col.JSONPath); err != nil {
		errs = append(errs, field.Invalid(fld.Child("jsonPath"), col.JSONPath, "must be a valid JSON path: "+err.Error()))
	}
	return errs
}

func validateConversion(conv *apiextensionsv1.CustomResourceConversion, fld *field.Path) field.ErrorList {
	if conv == nil {
		return nil
	}
	var errs field.ErrorList
	switch conv.Strategy {
	case apiextensionsv1.NoneConverter:
		if conv.Webhook != nil {
			errs = append(errs, field.Forbidden(fld.Child("webhook"), "should not be set when strategy is not set to Webhook"))
		}
	case apiextensionsv1.WebhookConverter:
		if conv.Webhook == nil {
			errs = append(errs, field.Required(fld.Child("webhook"), "required when strategy is set to Webhook"))
			break
		}
		wf := fld.Child("webhook")
		if !slices.ContainsFunc(conv.Webhook.ConversionReviewVersions, func(v string) bool { return slices.Contains(conversionReviewVer, v) }) {
			errs = append(errs, field.Invalid(wf.Child("conversionReviewVersions"), conv.Webhook.ConversionReviewVersions,
				fmt.Sprintf("must include at least one of %s", strings.Join(conversionReviewVer, ", "))))
		}
		errs = append(errs, validateClientConfig(conv.Webhook.ClientConfig, wf.Child("clientConfig"))...)
	case "":
		errs = append(errs, field.Required(fld.Child("strategy"), ""))
	default:
		errs = append(errs, field.NotSupported(fld.Child("strategy"), conv.Strategy, conversionTypes))
	}
	return errs
}

func validateClientConfig(cc *apiextensionsv1.WebhookClientConfig, fld *field.Path) field.ErrorList {
	if cc == nil {
		return field.ErrorList{field.Required(fld, "required when strategy is set to Webhook")}
	}
	var errs field.ErrorList
	switch {
	case (cc.URL == nil) == (cc.Service == nil):
		errs = append(errs, field.Required(fld, "exactly one of url or service is required"))
	case cc.URL != nil:
		u, err := url.Parse(*cc.URL)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(fld.Child("url"), *cc.URL, "url must be a valid URL: "+err.Error()))
		case u.Scheme != "https":
			errs = append(errs, field.Invalid(fld.Child("url"), *cc.URL, "'https' is the only allowed URL scheme"))
		case u.Host == "":
			errs = append(errs, field.Invalid(fld.Child("url"), *cc.URL, "host must be specified"))
		case u.User != nil:
			errs = append(errs, field.Invalid(fld.Child("url"), *cc.URL, "user information is not permitted in the URL"))
		case u.Fragment != "" || u.RawQuery != "":
			errs = append(errs, field.Invalid(fld.Child("url"), *cc.URL, "fragments and query parameters are not permitted in the URL"))
		}
	default:
		svc, sf := cc.Service, fld.Child("service")
		if svc.Name == "" {
			errs = append(errs, field.Required(sf.Child("name"), "service name is required"))
		}
		if svc.Namespace == "" {
			errs = append(errs, field.Required(sf.Child("namespace"), "service namespace is required"))
		}
		if svc.Port != nil && (*svc.Port < 1 || *svc.Port > 65535) {
			errs = append(errs, field.Invalid(sf.Child("port"), *svc.Port, "port is not valid: must be between 1 and 65535, inclusive"))
		}
		if svc.Path != nil && !strings.HasPrefix(*svc.Path, "/") {
			errs = append(errs, field.Invalid(sf.Child("path"), *svc.Path, "must start with a '/'"))
		}
	}
	return errs
}

func validateStatus(c *CRD, fld *field.Path) field.ErrorList {
	errs := validateNames(&c.Status.AcceptedNames, fld.Child("acceptedNames"))
	versions := map[string]bool{}
	for _, v := range c.Spec.Versions {
		versions[v.Name] = true
	}
	for i, v := range c.Status.StoredVersions {
		if !versions[v] {
			errs = append(errs, field.Invalid(fld.Child("storedVersions").Index(i), v, "must appear in spec.versions"))
		}
	}
	if sv := StorageVersion(c); sv != "" && len(c.Status.StoredVersions) > 0 && !slices.Contains(c.Status.StoredVersions, sv) {
		errs = append(errs, field.Invalid(fld.Child("storedVersions"), c.Status.StoredVersions, "must have the storage version "+sv))
	}
	return errs
}
