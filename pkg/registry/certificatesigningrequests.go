package registry

import (
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/clock"
)

// approvalSubresource is the subresource through which a
// CertificateSigningRequest is approved or denied.
const approvalSubresource = "approval"

// certificateData stands for the certificate bytes in error messages.
const certificateData = "<certificate data>"

// validKeyUsages are the usages a CertificateSigningRequest may ask for.
var validKeyUsages = []string{
	string(certificatesv1.UsageSigning), string(certificatesv1.UsageDigitalSignature), string(certificatesv1.UsageContentCommitment),
	string(certificatesv1.UsageKeyEncipherment), string(certificatesv1.UsageKeyAgreement), string(certificatesv1.UsageDataEncipherment),
	string(certificatesv1.UsageCertSign), string(certificatesv1.UsageCRLSign), string(certificatesv1.UsageEncipherOnly),
	string(certificatesv1.UsageDecipherOnly), string(certificatesv1.UsageAny), string(certificatesv1.UsageServerAuth),
	string(certificatesv1.UsageClientAuth), string(certificatesv1.UsageCodeSigning), string(certificatesv1.UsageEmailProtection),
	string(certificatesv1.UsageSMIME), string(certificatesv1.UsageIPsecEndSystem), string(certificatesv1.UsageIPsecTunnel),
	string(certificatesv1.UsageIPsecUser), string(certificatesv1.UsageTimestamping), string(certificatesv1.UsageOCSPSigning),
	string(certificatesv1.UsageMicrosoftSGC), string(certificatesv1.UsageNetscapeSGC),
}

// csrStrategy is the CertificateSigningRequest strategy: the generic one
// plus the approval subresource.
type csrStrategy struct {
	*Resource[*certificatesv1.CertificateSigningRequest]
	// clock stamps the conditions written without timestamps.
	clock clock.PassiveClock
}

var (
	_ Subresourcer    = csrStrategy{}
	_ RequestorSetter = csrStrategy{}
)

// CertificateSigningRequests is certificates.k8s.io/v1
// certificatesigningrequests: an immutable request for a certificate, a
// status subresource through which a signer issues it, and an approval
// subresource through which it is approved or denied. Only the approval
// subresource changes the Approved and Denied conditions.
func CertificateSigningRequests() Strategy {
	return newCSRStrategy(clock.RealClock{})
}

// newCSRStrategy is the CertificateSigningRequest strategy stamping
// conditions with clk's time.
func newCSRStrategy(clk clock.PassiveClock) csrStrategy {
	s := csrStrategy{clock: clk}
	s.Resource = &Resource[*certificatesv1.CertificateSigningRequest]{
		Meta: Info{
			GVK:      certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"),
			Resource: "certificatesigningrequests", Singular: "certificatesigningrequest", ShortNames: []string{"csr"},
			Status: true,
		},
		NewFunc:     func() *certificatesv1.CertificateSigningRequest { return &certificatesv1.CertificateSigningRequest{} },
		NewListFunc: func() runtime.Object { return &certificatesv1.CertificateSigningRequestList{} },
		CopyStatus:  func(dst, src *certificatesv1.CertificateSigningRequest) { dst.Status = src.Status },
		ResetForStatus: func(c, old *certificatesv1.CertificateSigningRequest) {
			c.Spec = old.Spec
			c.Status.Conditions = mergeConditions(c.Status.Conditions, old.Status.Conditions)
		},
		ResetStatus: func(c *certificatesv1.CertificateSigningRequest) {
			c.Status = certificatesv1.CertificateSigningRequestStatus{}
		},
		ValidateFunc: validateCSR,
		Fields: func(c *certificatesv1.CertificateSigningRequest) fields.Set {
			return fields.Set{"spec.signerName": c.Spec.SignerName}
		},
		ValidateUpdateFunc: func(c, old *certificatesv1.CertificateSigningRequest) field.ErrorList {
			if len(old.Status.Certificate) > 0 && string(c.Status.Certificate) != string(old.Status.Certificate) {
				return field.ErrorList{field.Invalid(field.NewPath("status", "certificate"), certificateData, "updates may not modify existing certificate content")}
			}
			return nil
		},
	}
	return s
}

// PrepareForStatusUpdate implements Strategy: the generic status write,
// then the new conditions stamped.
func (s csrStrategy) PrepareForStatusUpdate(obj, old runtime.Object) runtime.Object {
	out := s.Resource.PrepareForStatusUpdate(obj, old)
	s.stampConditions(s.cast(out), s.cast(old))
	return out
}

// stampConditions sets the times a client left out of c's conditions: the
// update time is now, and the transition time is that of the same
// condition in old, or now if it is new or changed status.
func (s csrStrategy) stampConditions(c, old *certificatesv1.CertificateSigningRequest) {
	now := metav1.NewTime(s.clock.Now())
	for i := range c.Status.Conditions {
		cond := &c.Status.Conditions[i]
		if cond.LastUpdateTime.IsZero() {
			cond.LastUpdateTime = now
		}
		if !cond.LastTransitionTime.IsZero() {
			continue
		}
		cond.LastTransitionTime = now
		for _, o := range old.Status.Conditions {
			if o.Type == cond.Type && o.Status == cond.Status && !o.LastTransitionTime.IsZero() {
				cond.LastTransitionTime = o.LastTransitionTime
				break
			}
		}
	}
}

// PrepareForUpdate implements Strategy: a write through the main resource
// changes neither the spec, which never changes, nor the status.
func (s csrStrategy) PrepareForUpdate(obj, old runtime.Object) {
	s.Resource.PrepareForUpdate(obj, old)
	s.cast(obj).Spec = *s.cast(old).Spec.DeepCopy()
}

// SetRequestor implements RequestorSetter: the request is the caller's,
// whoever the client says made it.
func (s csrStrategy) SetRequestor(obj runtime.Object, user authenticationv1.UserInfo) {
	c := s.cast(obj)
	c.Spec.Username, c.Spec.UID, c.Spec.Groups, c.Spec.Extra = user.Username, user.UID, user.Groups, nil
	for k, v := range user.Extra {
		if c.Spec.Extra == nil {
			c.Spec.Extra = map[string]certificatesv1.ExtraValue{}
		}
		c.Spec.Extra[k] = certificatesv1.ExtraValue(v)
	}
}

// Subresources implements Subresourcer.
func (csrStrategy) Subresources() []string { return []string{approvalSubresource} }

// PrepareForSubresourceUpdate implements Subresourcer: an approval write
// changes only the Approved and Denied conditions.
func (s csrStrategy) PrepareForSubresourceUpdate(subresource string, obj, old runtime.Object) runtime.Object {
	c, o := s.cast(obj), s.cast(old)
	out := o.DeepCopy()
	out.ObjectMeta = *c.ObjectMeta.DeepCopy()
	out.Generation = o.Generation
	if subresource == approvalSubresource {
		out.Status.Conditions = mergeConditions(o.Status.Conditions, c.Status.Conditions)
		s.stampConditions(out, o)
	}
	return out
}

// isApproval reports whether t is Approved or Denied.
func isApproval(t certificatesv1.RequestConditionType) bool {
	return t == certificatesv1.CertificateApproved || t == certificatesv1.CertificateDenied
}

// mergeConditions returns the conditions of others that are not approval
// conditions, followed by the approval conditions of approvals.
func mergeConditions(others, approvals []certificatesv1.CertificateSigningRequestCondition) []certificatesv1.CertificateSigningRequestCondition {
	var out []certificatesv1.CertificateSigningRequestCondition
	for _, c := range others {
		if !isApproval(c.Type) {
			out = append(out, c)
		}
	}
	for _, c := range approvals {
		if isApproval(c.Type) {
			out = append(out, c)
		}
	}
	return out
}

func validateCSR(c *certificatesv1.CertificateSigningRequest) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	if err := checkCertificateRequest(c.Spec.Request); err != nil {
		errs = append(errs, field.Invalid(spec.Child("request"), c.Spec.Request, err.Error()))
	}
	if len(c.Spec.Usages) == 0 {
		errs = append(errs, field.Required(spec.Child("usages"), ""))
	}
	seen := map[certificatesv1.KeyUsage]bool{}
	for i, u := range c.Spec.Usages {
		if !slices.Contains(validKeyUsages, string(u)) {
			sorted := slices.Clone(validKeyUsages)
			slices.Sort(sorted)
			errs = append(errs, field.NotSupported(spec.Child("usages").Index(i), u, sorted))
		}
		if seen[u] {
			errs = append(errs, field.Duplicate(spec.Child("usages").Index(i), u))
		}
		seen[u] = true
	}
	if c.Spec.SignerName == "kubernetes.io/legacy-unknown" {
		errs = append(errs, field.Invalid(spec.Child("signerName"), c.Spec.SignerName, "the legacy signerName is not allowed via this API version"))
	} else {
		errs = append(errs, validateSignerName(c.Spec.SignerName, spec.Child("signerName"))...)
	}
	if c.Spec.ExpirationSeconds != nil && *c.Spec.ExpirationSeconds < 600 {
		errs = append(errs, field.Invalid(spec.Child("expirationSeconds"), *c.Spec.ExpirationSeconds, "may not specify a duration less than 600 seconds (10 minutes)"))
	}
	errs = append(errs, validateCSRConditions(c.Status.Conditions, field.NewPath("status", "conditions"))...)
	if len(c.Status.Certificate) > 0 {
		if err := checkCertificates(c.Status.Certificate); err != nil {
			errs = append(errs, field.Invalid(field.NewPath("status", "certificate"), certificateData, err.Error()))
		}
	}
	return errs
}

// checkCertificateRequest parses a PEM-encoded PKCS#10 request and checks
// its signature.
func checkCertificateRequest(data []byte) error {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE REQUEST" {
		return errors.New("PEM block type must be CERTIFICATE REQUEST")
	}
	req, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		return err
	}
	return req.CheckSignature()
}

// checkCertificates checks an issued certificate chain: CERTIFICATE PEM
// blocks only, without headers, each parsing.
func checkCertificates(data []byte) error {
	blocks := 0
	for {
		block, rest := pem.Decode(data)
		if block == nil {
			break
		}
		if block.Type != "CERTIFICATE" {
			return fmt.Errorf("only CERTIFICATE PEM blocks are allowed, found %q", block.Type)
		}
		if len(block.Headers) != 0 {
			return errors.New("no PEM block headers are permitted")
		}
		blocks++
		certs, err := x509.ParseCertificates(block.Bytes)
		if err != nil {
			return err
		}
		if len(certs) == 0 {
			return errors.New("found CERTIFICATE PEM block containing 0 certificates")
		}
		data = rest
	}
	if blocks == 0 {
		return errors.New("must contain at least one CERTIFICATE PEM block")
	}
	return nil
}

// validateSignerName checks a signer name: a domain of at least two DNS
// labels, a slash, then a path of dot-separated DNS subdomains.
func validateSignerName(name string, fld *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fld, "")}
	}
	parts := strings.Split(name, "/")
	if len(parts) != 2 {
		return field.ErrorList{field.Invalid(fld, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	domain, path := parts[0], parts[1]
	var errs field.ErrorList
	if len(domain) > validation.DNS1123SubdomainMaxLength {
		errs = append(errs, field.TooLong(fld, domain, validation.DNS1123SubdomainMaxLength))
	}
	labels := strings.Split(domain, ".")
	for _, l := range labels {
		if msgs := validation.IsDNS1123Label(l); len(msgs) > 0 {
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(fld, domain, fmt.Sprintf("validating label %q: %s", l, msg)))
			}
			// The other labels would only repeat the message.
			break
		}
	}
	if len(labels) < 2 {
		errs = append(errs, field.Invalid(fld, domain, "should be a domain with at least two segments separated by dots"))
	}
	for _, p := range strings.Split(path, ".") {
		if msgs := validation.IsDNS1123Subdomain(p); len(msgs) > 0 {
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(fld, path, fmt.Sprintf("validating component %q: %s", p, msg)))
			}
			break
		}
	}
	return errs
}

// validateCSRConditions checks the conditions: typed, no type twice,
// Approved and Denied only True and never both.
func validateCSRConditions(conds []certificatesv1.CertificateSigningRequestCondition, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[certificatesv1.RequestConditionType]bool{}
	approved, denied := false, false
	for i, c := range conds {
		cf := fld.Index(i)
		if c.Type == "" {
			errs = append(errs, field.Required(cf.Child("type"), ""))
		}
		allowed := []string{string(corev1.ConditionFalse), string(corev1.ConditionTrue), string(corev1.ConditionUnknown)}
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
			allowed = []string{string(corev1.ConditionTrue)}
		case certificatesv1.CertificateDenied:
			denied = true
			allowed = []string{string(corev1.ConditionTrue)}
		}
		if !slices.Contains(allowed, string(c.Status)) {
			errs = append(errs, field.NotSupported(cf.Child("status"), c.Status, allowed))
		}
		if seen[c.Type] {
			errs = append(errs, field.Duplicate(cf.Child("type"), c.Type))
		}
		seen[c.Type] = true
	}
	if approved && denied {
		errs = append(errs, field.Invalid(fld, conds, "Approved and Denied conditions are mutually exclusive"))
	}
	return errs
}
