package apiserver

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The pod subresources a kubelet serves are 404s that say why.
func TestKubeletSubresources(t *testing.T) {
	e := newTestEnv(t)
	e.mustCreate(podPath("default", ""), testPod("p", nil), nil)
	for _, tc := range []struct{ method, sub string }{
		{"GET", "log"}, {"POST", "exec"}, {"GET", "exec"}, {"POST", "attach"}, {"POST", "portforward"}, {"GET", "proxy"},
	} {
		r := e.do(tc.method, podPath("default", "p")+"/"+tc.sub, nil)
		r.expect(t, 404, metav1.StatusReasonNotFound)
		if st := r.status(t); !strings.Contains(st.Message, "pods/"+tc.sub+" is not served: kplane runs no kubelet") {
			t.Errorf("%s %s: %q", tc.method, tc.sub, st.Message)
		}
	}
	// Other unknown subresources, and the same names on other resources,
	// stay plain 404s.
	for _, path := range []string{podPath("default", "p") + "/bogus", "/api/v1/namespaces/default/configmaps/c/log"} {
		r := e.do("GET", path, nil)
		r.expect(t, 404, metav1.StatusReasonNotFound)
		if st := r.status(t); st.Message != "the server could not find the requested resource" {
			t.Errorf("%s: %q", path, st.Message)
		}
	}
}
