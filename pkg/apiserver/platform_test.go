package apiserver

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPlatformResourcesServed checks the wiring of the platform families
// through the server: paths, defaults on create, tables, status and
// validation answers.
func TestPlatformResourcesServed(t *testing.T) {
	e := newTestEnv(t)

	sc := &storagev1.StorageClass{
		TypeMeta:    metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "StorageClass"},
		ObjectMeta:  metav1.ObjectMeta{Name: "standard", Annotations: map[string]string{"storageclass.kubernetes.io/is-default-class": "true"}},
		Provisioner: "rancher.io/local-path",
	}
	var created storagev1.StorageClass
	e.mustCreate("/apis/storage.k8s.io/v1/storageclasses", sc, &created)
	if *created.ReclaimPolicy != "Delete" || *created.VolumeBindingMode != "Immediate" {
		t.Fatalf("defaults: %+v", created)
	}
	r := e.do("GET", "/apis/storage.k8s.io/v1/storageclasses", nil, "Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	r.expect(t, 200, "")
	var table metav1.Table
	r.decode(t, &table)
	if len(table.Rows) != 1 || table.Rows[0].Cells[0] != "standard (default)" {
		t.Fatalf("table: %s", r.body)
	}
	created.Provisioner = "other.example.com"
	r = e.do("PUT", "/apis/storage.k8s.io/v1/storageclasses/standard", &created)
	r.expect(t, 422, metav1.StatusReasonInvalid)
	if !strings.Contains(string(r.body), "updates to provisioner are forbidden.") {
		t.Fatalf("immutable provisioner: %s", r.body)
	}

	pv := "pv-1"
	va := &storagev1.VolumeAttachment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "storage.k8s.io/v1", Kind: "VolumeAttachment"},
		ObjectMeta: metav1.ObjectMeta{Name: "va"},
		Spec:       storagev1.VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: "node-1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}},
		Status:     storagev1.VolumeAttachmentStatus{Attached: true},
	}
	var gotVA storagev1.VolumeAttachment
	e.mustCreate("/apis/storage.k8s.io/v1/volumeattachments", va, &gotVA)
	if gotVA.Status.Attached {
		t.Fatal("create kept the status")
	}
	gotVA.Status.Attached = true
	r = e.do("PUT", "/apis/storage.k8s.io/v1/volumeattachments/va/status", &gotVA)
	r.expect(t, 200, "")
	r.decode(t, &gotVA)
	if !gotVA.Status.Attached {
		t.Fatalf("status write: %s", r.body)
	}

	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingWebhookConfiguration"},
		ObjectMeta: metav1.ObjectMeta{Name: "hooks"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name:         "check.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptrTo("https://hooks.example.com/check")},
		}},
	}
	r = e.do("POST", "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", vwc)
	r.expect(t, 422, metav1.StatusReasonInvalid)
	st := r.status(t)
	var causes []string
	for _, c := range st.Details.Causes {
		causes = append(causes, c.Field+": "+c.Message)
	}
	want := "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun|webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1"
	if strings.Join(causes, "|") != want {
		t.Fatalf("causes %q", causes)
	}
	none := admissionregistrationv1.SideEffectClassNone
	vwc.Webhooks[0].SideEffects = &none
	vwc.Webhooks[0].AdmissionReviewVersions = []string{"v1"}
	var gotVWC admissionregistrationv1.ValidatingWebhookConfiguration
	e.mustCreate("/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations", vwc, &gotVWC)
	if h := gotVWC.Webhooks[0]; *h.TimeoutSeconds != 10 || *h.FailurePolicy != "Fail" || *h.MatchPolicy != "Equivalent" {
		t.Fatalf("webhook defaults: %+v", h)
	}

	for _, path := range []string{
		"/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
		"/apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicybindings",
		"/apis/resource.k8s.io/v1/resourceslices?fieldSelector=spec.nodeName%3Dnode-1",
		"/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
		"/apis/storage.k8s.io/v1/namespaces/default/csistoragecapacities",
	} {
		e.do("GET", path, nil).expect(t, 200, "")
	}
}
