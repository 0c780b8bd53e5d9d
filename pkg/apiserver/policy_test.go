package apiserver

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"slices"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestSystemPriorityClasses(t *testing.T) {
	e := newTestEnv(t)
	var list schedulingv1.PriorityClassList
	e.do("GET", "/apis/scheduling.k8s.io/v1/priorityclasses", nil).decode(t, &list)
	got := map[string]int32{}
	for _, pc := range list.Items {
		got[pc.Name] = pc.Value
		if pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != "PreemptLowerPriority" {
			t.Errorf("%s: preemptionPolicy %v", pc.Name, pc.PreemptionPolicy)
		}
	}
	if len(got) != 2 || got["system-cluster-critical"] != 2000000000 || got["system-node-critical"] != 2000001000 {
		t.Errorf("priority classes %v", got)
	}
	r := e.do("POST", "/apis/scheduling.k8s.io/v1/priorityclasses", &schedulingv1.PriorityClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"},
		ObjectMeta: metav1.ObjectMeta{Name: "system-mine"}, Value: 5,
	})
	r.expect(t, 422, metav1.StatusReasonInvalid)
	if !strings.Contains(string(r.body), "reserved for system use only") {
		t.Errorf("answer %s", r.body)
	}
	r = e.do("DELETE", "/apis/scheduling.k8s.io/v1/priorityclasses/system-node-critical", nil)
	r.expect(t, 403, metav1.StatusReasonForbidden)
	if !strings.Contains(string(r.body), "this is a system priority class and cannot be deleted") {
		t.Errorf("answer %s", r.body)
	}
	e.mustCreate("/apis/scheduling.k8s.io/v1/priorityclasses", &schedulingv1.PriorityClass{
		TypeMeta:   metav1.TypeMeta{APIVersion: "scheduling.k8s.io/v1", Kind: "PriorityClass"},
		ObjectMeta: metav1.ObjectMeta{Name: "batch"}, Value: 100,
	}, nil)
	e.do("DELETE", "/apis/scheduling.k8s.io/v1/priorityclasses/batch", nil).expect(t, 200, "")
}

func TestRoleBindingRoleRefImmutableOverHTTP(t *testing.T) {
	e := newTestEnv(t)
	path := "/apis/rbac.authorization.k8s.io/v1/namespaces/default/rolebindings"
	var created rbacv1.RoleBinding
	e.mustCreate(path, &rbacv1.RoleBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "RoleBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "read"},
		RoleRef:    rbacv1.RoleRef{Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: "User", Name: "alice"}},
	}, &created)
	if created.RoleRef.APIGroup != rbacv1.GroupName || created.Subjects[0].APIGroup != rbacv1.GroupName {
		t.Errorf("not defaulted: %+v %+v", created.RoleRef, created.Subjects)
	}
	created.RoleRef.Name = "edit"
	r := e.do("PUT", path+"/read", &created)
	r.expect(t, 422, metav1.StatusReasonInvalid)
	if !strings.Contains(string(r.body), "cannot change roleRef") {
		t.Errorf("answer %s", r.body)
	}
}

func TestPodDisruptionBudgetStatusOverHTTP(t *testing.T) {
	e := newTestEnv(t)
	path := "/apis/policy/v1/namespaces/default/poddisruptionbudgets"
	two := intstr.FromInt32(2)
	var created policyv1.PodDisruptionBudget
	e.mustCreate(path, &policyv1.PodDisruptionBudget{
		TypeMeta:   metav1.TypeMeta{APIVersion: "policy/v1", Kind: "PodDisruptionBudget"},
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &two, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status:     policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 9},
	}, &created)
	if created.Status.DisruptionsAllowed != 0 || created.Generation != 1 {
		t.Fatalf("created status %+v, generation %d", created.Status, created.Generation)
	}
	created.Status.DisruptionsAllowed = 1
	created.Spec.MinAvailable = nil
	var updated policyv1.PodDisruptionBudget
	e.do("PUT", path+"/web/status", &created).decode(t, &updated)
	if updated.Status.DisruptionsAllowed != 1 || updated.Spec.MinAvailable == nil {
		t.Errorf("status write: spec %+v, status %+v", updated.Spec, updated.Status)
	}
}

func TestCSRApprovalOverHTTP(t *testing.T) {
	e := newTestEnv(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "alice"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	path := "/apis/certificates.k8s.io/v1/certificatesigningrequests"
	var created certificatesv1.CertificateSigningRequest
	e.mustCreate(path, &certificatesv1.CertificateSigningRequest{
		TypeMeta:   metav1.TypeMeta{APIVersion: "certificates.k8s.io/v1", Kind: "CertificateSigningRequest"},
		ObjectMeta: metav1.ObjectMeta{Name: "alice"},
		Spec: certificatesv1.CertificateSigningRequestSpec{
			Username:   "someone-else",
			Groups:     []string{"system:masters"},
			Request:    pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}),
			SignerName: "kubernetes.io/kube-apiserver-client",
			Usages:     []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth},
		},
	}, &created)
	// The requestor is the caller (anonymous here), not what the client said.
	if created.Spec.Username != "system:anonymous" || !slices.Equal(created.Spec.Groups, []string{"system:unauthenticated"}) {
		t.Errorf("requestor %q %v", created.Spec.Username, created.Spec.Groups)
	}

	approved := certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateApproved, Status: corev1.ConditionTrue, Reason: "KubectlApprove"}
	// Through the status subresource the approval is dropped.
	viaStatus := created.DeepCopy()
	viaStatus.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approved}
	var afterStatus certificatesv1.CertificateSigningRequest
	e.do("PUT", path+"/alice/status", viaStatus).decode(t, &afterStatus)
	if len(afterStatus.Status.Conditions) != 0 {
		t.Errorf("status write approved: %+v", afterStatus.Status.Conditions)
	}
	// Through approval it is kept.
	afterStatus.Status.Conditions = []certificatesv1.CertificateSigningRequestCondition{approved}
	var afterApproval certificatesv1.CertificateSigningRequest
	r := e.do("PUT", path+"/alice/approval", &afterStatus)
	r.expect(t, 200, "")
	r.decode(t, &afterApproval)
	if len(afterApproval.Status.Conditions) != 1 || afterApproval.Status.Conditions[0].Type != certificatesv1.CertificateApproved {
		t.Errorf("approval write: %+v", afterApproval.Status.Conditions)
	}
	// Denying as well is refused.
	afterApproval.Status.Conditions = append(afterApproval.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{Type: certificatesv1.CertificateDenied, Status: corev1.ConditionTrue})
	r = e.do("PUT", path+"/alice/approval", &afterApproval)
	r.expect(t, 422, metav1.StatusReasonInvalid)
	if !strings.Contains(string(r.body), "Approved and Denied conditions are mutually exclusive") {
		t.Errorf("answer %s", r.body)
	}
	// The subresource is listed in discovery, and other resources have none.
	var list metav1.APIResourceList
	e.do("GET", "/apis/certificates.k8s.io/v1", nil).decode(t, &list)
	var names []string
	for _, res := range list.APIResources {
		names = append(names, res.Name)
	}
	if !slices.Contains(names, "certificatesigningrequests/approval") {
		t.Errorf("discovery %v", names)
	}
	e.do("PUT", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/web/approval", &afterApproval).expect(t, 404, metav1.StatusReasonNotFound)
}

func TestCSRApprovalInOpenAPI(t *testing.T) {
	e := newTestEnv(t)
	r := e.do("GET", "/openapi/v3/apis/certificates.k8s.io/v1", nil)
	r.expect(t, 200, "")
	var doc struct {
		Paths map[string]struct {
			Put struct {
				OperationID string `json:"operationId"`
			} `json:"put"`
		} `json:"paths"`
	}
	r.decode(t, &doc)
	item, ok := doc.Paths["/apis/certificates.k8s.io/v1/certificatesigningrequests/{name}/approval"]
	if !ok {
		t.Fatalf("no approval path among %d paths", len(doc.Paths))
	}
	if got := item.Put.OperationID; got != "replaceCertificatesV1CertificateSigningRequestApproval" {
		t.Errorf("put operation %q", got)
	}
}
