package registry

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// testCSRPEM returns a freshly signed PEM certificate request.
func testCSRPEM(t testing.TB) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// testCertPEM returns a self-signed PEM certificate.
func testCertPEM(t testing.TB) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "alice"}, NotBefore: time.Unix(0, 0), NotAfter: time.Unix(1<<32, 0)}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

func csr(t testing.TB) *certificatesv1.CertificateSigningRequest {
	return &certificatesv1.CertificateSigningRequest{
		ObjectMeta: metav1.ObjectMeta{Name: "alice"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Request:    testCSRPEM(t),
			SignerName: "kubernetes.io/kube-apiserver-client",
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
		},
	}
}

func TestCSRValidation(t *testing.T) {
	st := CertificateSigningRequests()
	tests := []struct {
		name string
		edit func(*certificatesv1.CertificateSigningRequest)
		want []string // "field: detail"
	}{
		{"valid", func(*certificatesv1.CertificateSigningRequest) {}, nil},
		{"not PEM", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = []byte("hello") },
			[]string{"spec.request: PEM block type must be CERTIFICATE REQUEST"}},
		{"a certificate, not a request", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Request = testCertPEM(t) },
			[]string{"spec.request: PEM block type must be CERTIFICATE REQUEST"}},
		{"bad signature", func(c *certificatesv1.CertificateSigningRequest) {
			block, _ := pem.Decode(c.Spec.Request)
			block.Bytes[len(block.Bytes)-3] ^= 0xff
			c.Spec.Request = pem.EncodeToMemory(block)
		}, []string{"spec.request: "}},
		{"no signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "" }, []string{"spec.signerName: "}},
		{"unqualified signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "mysigner" },
			[]string{"spec.signerName: must be a fully qualified domain and path of the form 'example.com/signer-name'"}},
		{"one-label domain", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "example/signer" },
			[]string{"spec.signerName: should be a domain with at least two segments separated by dots"}},
		{"legacy signer", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.SignerName = "kubernetes.io/legacy-unknown" },
			[]string{"spec.signerName: the legacy signerName is not allowed via this API version"}},
		{"usages", func(c *certificatesv1.CertificateSigningRequest) {
			c.Spec.Usages = []certificatesv1.KeyUsage{"client auth", "flying", "client auth"}
		}, []string{"spec.usages[1]: supported values: ", "spec.usages[2]: "}},
		{"no usages", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.Usages = nil }, []string{"spec.usages: "}},
		{"short duration", func(c *certificatesv1.CertificateSigningRequest) { c.Spec.ExpirationSeconds = ptr[int32](60) },
			[]string{"spec.expirationSeconds: may not specify a duration less than 600 seconds (10 minutes)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := csr(t)
			tt.edit(c)
			st.PrepareForCreate(c)
			st.Default(c)
			errs := st.Validate(c)
			if len(errs) != len(tt.want) {
				t.Fatalf("errors %v, want %d", errs, len(tt.want))
			}
			for i, e := range errs {
				field, detail, _ := strings.Cut(tt.want[i], ": ")
				if e.Field != field || !strings.Contains(e.Error(), detail) {
					t.Errorf("error %d: %v, want %s with %q", i, e, field, detail)
				}
			}
		})
	}
}

func approved() certificatesv1.CertificateSigningRequestCondition {
	return certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "OK"}
}

// ignoreTimes leaves the condition timestamps out of a comparison.
var ignoreTimes = cmpopts.IgnoreFields(certificatesv1.CertificateSigningRequestCondition{}, "LastUpdateTime", "LastTransitionTime")

func TestCSRConditionTimestamps(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	st := newCSRStrategy(clk)
	old := csr(t)
	w := old.DeepCopy()
	w.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approved()}
	first := st.PrepareForSubresourceUpdate("approval", w, old).(*certificatesv1.CertificateSigningRequest)
	c := first.Status.Conditions[0]
	if !c.LastUpdateTime.Time.Equal(t0) || !c.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("new condition stamped %v / %v, want %v", c.LastUpdateTime, c.LastTransitionTime, t0)
	}
	// Written again later without times: updated now, the transition kept.
	clk.SetTime(t0.Add(time.Hour))
	again := first.DeepCopy()
	again.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approved()}
	second := st.PrepareForSubresourceUpdate("approval", again, first).(*certificatesv1.CertificateSigningRequest)
	c = second.Status.Conditions[0]
	if !c.LastUpdateTime.Time.Equal(t0.Add(time.Hour)) || !c.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("rewritten condition stamped %v / %v", c.LastUpdateTime, c.LastTransitionTime)
	}
	// A condition the client stamped keeps its times, through status too.
	failed := certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue,
		LastUpdateTime: metav1.NewTime(t0.Add(-time.Hour)), LastTransitionTime: metav1.NewTime(t0.Add(-2 * time.Hour))}
	sw := second.DeepCopy()
	sw.Status.Conditions = append(sw.Status.Conditions, failed)
	third := st.PrepareForStatusUpdate(sw, second).(*certificatesv1.CertificateSigningRequest)
	if diff := cmp.Diff([]certificatesv1.CertificateSigningRequestCondition{failed, second.Status.Conditions[0]}, third.Status.Conditions); diff != "" {
		t.Errorf("status write conditions (-want +got):\n%s", diff)
	}
}

func TestCSRApproval(t *testing.T) {
	st := CertificateSigningRequests()
	sr, ok := st.(Subresourcer)
	if !ok || !cmp.Equal(sr.Subresources(), []string{"approval"}) {
		t.Fatalf("subresources: %v", st)
	}
	old := csr(t)
	old.ResourceVersion = "4"
	failed := certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateFailed, Status: corev1.ConditionTrue}
	old.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{failed}

	// The approval subresource changes the approval conditions only.
	w := old.DeepCopy()
	w.Spec.SignerName = "example.com/other"
	w.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approved()}
	w.Status.Certificate = testCertPEM(t)
	w.Labels = map[string]string{"reviewed": "yes"}
	out := sr.PrepareForSubresourceUpdate("approval", w, old).(*certificatesv1.CertificateSigningRequest)
	if diff := cmp.Diff([]certificatesv1.CertificateSigningRequestCondition{failed, approved()}, out.Status.Conditions, ignoreTimes); diff != "" {
		t.Errorf("conditions (-want +got):\n%s", diff)
	}
	if out.Spec.SignerName != old.Spec.SignerName || len(out.Status.Certificate) != 0 || out.Labels["reviewed"] != "yes" {
		t.Errorf("approval write changed spec %q or certificate, or lost labels %v", out.Spec.SignerName, out.Labels)
	}
	if errs := st.ValidateUpdate(out, old); len(errs) != 0 {
		t.Errorf("valid approval: %v", errs)
	}

	// Approved and Denied together are refused.
	both := out.DeepCopy()
	both.Status.Conditions = append(both.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue})
	both = sr.PrepareForSubresourceUpdate("approval", both, old).(*certificatesv1.CertificateSigningRequest)
	errs := st.ValidateUpdate(both, old)
	if len(errs) != 1 || errs[0].Field != "status.conditions" || errs[0].Detail != "Approved and Denied conditions are mutually exclusive" {
		t.Errorf("approved and denied: %v", errs)
	}
	// An approval condition must be True.
	unsure := old.DeepCopy()
	unsure.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionUnknown}}
	unsure = sr.PrepareForSubresourceUpdate("approval", unsure, old).(*certificatesv1.CertificateSigningRequest)
	if got := errorStrings(st.ValidateUpdate(unsure, old)); !cmp.Equal(got, []string{`status.conditions[1].status: Unsupported value: "Unknown": supported values: "True"`}) {
		t.Errorf("unknown approval: %v", got)
	}

	// The status subresource keeps the approval conditions and the spec.
	approvedCSR := out.DeepCopy()
	sw := approvedCSR.DeepCopy()
	sw.Status.Conditions = nil
	sw.Status.Certificate = testCertPEM(t)
	sw.Spec.Usages = nil
	sout := st.PrepareForStatusUpdate(sw, approvedCSR).(*certificatesv1.CertificateSigningRequest)
	if diff := cmp.Diff([]certificatesv1.CertificateSigningRequestCondition{approved()}, sout.Status.Conditions, ignoreTimes); diff != "" {
		t.Errorf("status write conditions (-want +got):\n%s", diff)
	}
	if len(sout.Spec.Usages) != 1 || len(sout.Status.Certificate) == 0 {
		t.Errorf("status write: usages %v, certificate %d bytes", sout.Spec.Usages, len(sout.Status.Certificate))
	}
	if errs := st.ValidateUpdate(sout, approvedCSR); len(errs) != 0 {
		t.Errorf("issuing: %v", errs)
	}
	// Once issued, the certificate stays.
	again := sout.DeepCopy()
	again.Status.Certificate = testCertPEM(t)
	if got := errorStrings(st.ValidateUpdate(again, sout)); !cmp.Equal(got, []string{`status.certificate: Invalid value: "<certificate data>": updates may not modify existing certificate content`}) {
		t.Errorf("reissuing: %v", got)
	}
	bad := approvedCSR.DeepCopy()
	bad.Status.Certificate = testCSRPEM(t)
	if got := errorStrings(st.ValidateUpdate(bad, approvedCSR)); !cmp.Equal(got, []string{`status.certificate: Invalid value: "<certificate data>": only CERTIFICATE PEM blocks are allowed, found "CERTIFICATE REQUEST"`}) {
		t.Errorf("bad certificate: %v", got)
	}

	// The main resource changes neither spec nor status.
	mw := approvedCSR.DeepCopy()
	mw.Spec.SignerName = "example.com/other"
	mw.Status = certificatesv1.CertificateSigningRequestStatus{}
	st.PrepareForUpdate(mw, approvedCSR)
	if mw.Spec.SignerName != approvedCSR.Spec.SignerName || len(mw.Status.Conditions) != 2 {
		t.Errorf("main write: signer %q, conditions %v", mw.Spec.SignerName, mw.Status.Conditions)
	}
}
