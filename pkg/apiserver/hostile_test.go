package apiserver

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hostileCase is one malformed or unusual request and kube-apiserver's
// answer to it: the code, the reason and (when set) a message fragment.
type hostileCase struct {
	name    string
	method  string
	path    string
	body    any
	headers []string
	code    int
	reason  metav1.StatusReason
	message string
}

func runHostile(t *testing.T, e *testEnv, cases []hostileCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := e.do(tc.method, tc.path, tc.body, tc.headers...)
			r.expect(t, tc.code, tc.reason)
			if tc.message != "" {
				if st := r.status(t); !strings.Contains(st.Message, tc.message) {
					t.Fatalf("message %q does not contain %q", st.Message, tc.message)
				}
			}
		})
	}
}

// TestHostileQueries covers malformed list, watch, get and delete
// parameters: each is a 4xx worded as kube-apiserver words it (or the
// answer kube-apiserver gives when it tolerates the value), never a 409
// or a 5xx.
func TestHostileQueries(t *testing.T) {
	e := newTestEnv(t)
	e.mustCreate(podPath("default", ""), testPod("a", nil), nil)
	pods := podPath("default", "")
	rvAbc := `invalid resource version: resourceVersion: Invalid value: "abc": strconv.ParseUint: parsing "abc": invalid syntax`
	runHostile(t, e, []hostileCase{
		{name: "get resourceVersion abc", method: "GET", path: podPath("default", "a") + "?resourceVersion=abc", code: 400, reason: metav1.StatusReasonBadRequest, message: rvAbc},
		{name: "get resourceVersion negative", method: "GET", path: podPath("default", "a") + "?resourceVersion=-1", code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid resource version"},
		{name: "list resourceVersion abc", method: "GET", path: pods + "?resourceVersion=abc", code: 400, reason: metav1.StatusReasonBadRequest, message: rvAbc},
		{name: "watch resourceVersion abc", method: "GET", path: pods + "?watch=true&resourceVersion=abc", code: 400, reason: metav1.StatusReasonBadRequest, message: rvAbc},
		{name: "label selector", method: "GET", path: pods + "?labelSelector=" + url.QueryEscape("a==b==c"), code: 400, reason: metav1.StatusReasonBadRequest, message: "found '==', expected: ',' or 'end of string'"},
		{name: "label selector open set", method: "GET", path: pods + "?labelSelector=" + url.QueryEscape("a in (b"), code: 400, reason: metav1.StatusReasonBadRequest, message: "unable to parse requirement: found '', expected: ',' or ')'"},
		{name: "field selector", method: "GET", path: pods + "?fieldSelector=" + url.QueryEscape("a==b==c"), code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid field selector: unescaped character in value: 61"},
		{name: "field selector without operator", method: "GET", path: pods + "?fieldSelector=a", code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid selector: 'a'; can't understand 'a'"},
		{name: "field label", method: "GET", path: pods + "?fieldSelector=x%3Dy", code: 400, reason: metav1.StatusReasonBadRequest, message: "field label not supported: x"},
		{name: "limit abc", method: "GET", path: pods + "?limit=abc", code: 400, reason: metav1.StatusReasonBadRequest, message: `strconv.ParseInt: parsing "abc": invalid syntax`},
		{name: "limit overflows", method: "GET", path: pods + "?limit=99999999999999999999", code: 400, reason: metav1.StatusReasonBadRequest, message: "value out of range"},
		{name: "negative limit lists everything", method: "GET", path: pods + "?limit=-1", code: 200},
		{name: "continue with resourceVersion", method: "GET", path: pods + "?limit=1&continue=x&resourceVersion=5", code: 400, reason: metav1.StatusReasonBadRequest, message: "specifying resource version is not allowed when using continue"},
		{name: "resourceVersionMatch without resourceVersion", method: "GET", path: pods + "?resourceVersionMatch=NotOlderThan", code: 422, reason: metav1.StatusReasonInvalid, message: "resourceVersionMatch is forbidden unless resourceVersion is provided"},
		{name: "negative timeoutSeconds ends the watch at once", method: "GET", path: pods + "?watch=true&timeoutSeconds=-5", code: 200},
		{name: "timeoutSeconds abc", method: "GET", path: pods + "?watch=true&timeoutSeconds=abc", code: 400, reason: metav1.StatusReasonBadRequest, message: `strconv.ParseInt: parsing "abc": invalid syntax`},
		// Booleans read as kube-apiserver reads them: anything but "0" and
		// "false" is true, so watch=yes is a watch (and its options are
		// checked as a watch's).
		{name: "watch=yes is a watch", method: "GET", path: pods + "?watch=yes&sendInitialEvents=true", code: 422, reason: metav1.StatusReasonInvalid, message: "sendInitialEvents requires setting resourceVersionMatch"},
		{name: "watch=False is a list", method: "GET", path: pods + "?watch=False&sendInitialEvents=true", code: 422, reason: metav1.StatusReasonInvalid, message: "sendInitialEvents is forbidden for list"},
		{name: "allowWatchBookmarks abc", method: "GET", path: pods + "?allowWatchBookmarks=abc", code: 200},
		{name: "table includeObject", method: "GET", path: pods + "?includeObject=Bogus", headers: []string{"Accept", "application/json;as=Table;v=v1;g=meta.k8s.io"}, code: 400, reason: metav1.StatusReasonBadRequest,
			message: `Unable to convert to Table as requested: includeObject: Invalid value: "Bogus"`},
		{name: "gracePeriodSeconds abc", method: "DELETE", path: podPath("default", "a") + "?gracePeriodSeconds=abc", code: 400, reason: metav1.StatusReasonBadRequest, message: `strconv.ParseInt: parsing "abc": invalid syntax`},
	})
	// Nothing above deleted the pod.
	e.do("GET", podPath("default", "a"), nil).expect(t, 200, "")
}

// TestHostileBodies covers malformed and unusual request bodies: each is
// refused with kube-apiserver's code, reason and wording, and none of them
// changes what is stored.
func TestHostileBodies(t *testing.T) {
	e := newTestEnv(t)
	var stored corev1.Pod
	e.mustCreate(podPath("default", ""), testPod("a", nil), &stored)
	pods, a := podPath("default", ""), podPath("default", "a")
	merge := []string{"Content-Type", "application/merge-patch+json"}
	runHostile(t, e, []hostileCase{
		{name: "malformed JSON", method: "POST", path: pods, body: `{"apiVersion":`, code: 400, reason: metav1.StatusReasonBadRequest,
			message: `the object provided is unrecognized (must be of type Pod): couldn't get version/kind; json parse error: unexpected end of JSON input ({"apiVersion":)`},
		{name: "empty body", method: "POST", path: pods, body: "", code: 400, reason: metav1.StatusReasonBadRequest, message: "(<empty>)"},
		{name: "JSON array", method: "POST", path: pods, body: `[1,2]`, code: 400, reason: metav1.StatusReasonBadRequest, message: "the object provided is unrecognized (must be of type Pod)"},
		{name: "malformed YAML", method: "POST", path: pods, body: "a: [", headers: []string{"Content-Type", "application/yaml"}, code: 400, reason: metav1.StatusReasonBadRequest, message: "the object provided is unrecognized (must be of type Pod): yaml: line 1"},
		{name: "wrong field type", method: "POST", path: pods, body: `{"metadata":{"name":"b"},"spec":{"containers":"x"}}`, code: 400, reason: metav1.StatusReasonBadRequest,
			message: `Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field`},
		{name: "wrong API version", method: "POST", path: pods, body: `{"apiVersion":"apps/v1","kind":"Pod","metadata":{"name":"b"}}`, code: 400, reason: metav1.StatusReasonBadRequest,
			message: "the API version in the data (apps/v1) does not match the expected API version (v1)"},
		{name: "update resourceVersion abc", method: "PUT", path: a, body: `{"metadata":{"name":"a","resourceVersion":"abc"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, code: 422, reason: metav1.StatusReasonInvalid,
			message: `metadata.resourceVersion: Invalid value: "abc"`},
		{name: "update uid", method: "PUT", path: a, body: `{"metadata":{"name":"a","uid":"other"},"spec":{"containers":[{"name":"c","image":"i"}]}}`, code: 409, reason: metav1.StatusReasonConflict,
			message: "Precondition failed: UID in precondition: other"},
		{name: "patch resourceVersion abc", method: "PATCH", path: a, body: `{"metadata":{"resourceVersion":"abc"}}`, headers: merge, code: 422, reason: metav1.StatusReasonInvalid, message: `metadata.resourceVersion: Invalid value: "abc"`},
		{name: "patch uid", method: "PATCH", path: a, body: `{"metadata":{"uid":"other"}}`, headers: merge, code: 422, reason: metav1.StatusReasonInvalid, message: `metadata.uid: Invalid value: "other": field is immutable`},
		{name: "patch name", method: "PATCH", path: a, body: `{"metadata":{"name":"b"}}`, headers: merge, code: 400, reason: metav1.StatusReasonBadRequest, message: "the name of the object (b) does not match the name on the URL (a)"},
		{name: "JSON patch copy bomb", method: "PATCH", path: a, body: copyBomb(40), headers: []string{"Content-Type", "application/json-patch+json"}, code: 422, reason: metav1.StatusReasonInvalid},
		{name: "fieldManager too long", method: "POST", path: pods + "?fieldManager=" + strings.Repeat("m", 129), body: `{"metadata":{"name":"b"}}`, headers: nil, code: 422, reason: metav1.StatusReasonInvalid, message: "fieldManager: Too long"},
		{name: "fieldManager unprintable", method: "PUT", path: a + "?fieldManager=%01", body: `{"metadata":{"name":"a"}}`, code: 422, reason: metav1.StatusReasonInvalid, message: "fieldManager: Invalid value"},
		{name: "force on a merge patch", method: "PATCH", path: a + "?force=true", body: `{}`, headers: merge, code: 422, reason: metav1.StatusReasonInvalid, message: "force: Forbidden: may not be specified for non-apply patch"},
		{name: "delete with another kind as body", method: "DELETE", path: a, body: `{"apiVersion":"v1","kind":"Pod"}`, code: 400, reason: metav1.StatusReasonBadRequest, message: "invalid DeleteOptions"},
		{name: "delete with malformed body", method: "DELETE", path: a, body: `{"x":`, code: 400, reason: metav1.StatusReasonBadRequest},
	})
	var got corev1.Pod
	e.do("GET", a, nil).decode(t, &got)
	if got.ResourceVersion != stored.ResourceVersion || got.UID != stored.UID {
		t.Errorf("pod changed by refused requests: resourceVersion %s -> %s, uid %s -> %s", stored.ResourceVersion, got.ResourceVersion, stored.UID, got.UID)
	}
	var list corev1.PodList
	e.do("GET", pods, nil).decode(t, &list)
	if len(list.Items) != 1 {
		t.Errorf("refused requests left %d pods, want 1", len(list.Items))
	}
}

// copyBomb is a JSON patch whose copies double the object n times.
func copyBomb(n int) string {
	var b strings.Builder
	b.WriteString(`[{"op":"add","path":"/metadata/annotations","value":{"x":"` + strings.Repeat("x", 1024) + `"}}`)
	for i := range n {
		fmt.Fprintf(&b, `,{"op":"copy","from":"/metadata/annotations","path":"/metadata/annotations/k%d"}`, i)
	}
	b.WriteString("]")
	return b.String()
}

// TestHostileRoutes covers methods and paths the server does not serve.
func TestHostileRoutes(t *testing.T) {
	e := newTestEnv(t)
	e.mustCreate(podPath("default", ""), testPod("a", nil), nil)
	const notAllowed = "the server does not allow this method on the requested resource"
	runHostile(t, e, []hostileCase{
		{name: "PUT on a collection", method: "PUT", path: podPath("default", ""), body: `{}`, code: 405, reason: metav1.StatusReasonMethodNotAllowed, message: notAllowed},
		{name: "POST on an object", method: "POST", path: podPath("default", "a"), body: `{}`, code: 405, reason: metav1.StatusReasonMethodNotAllowed, message: notAllowed},
		{name: "TRACE", method: "TRACE", path: podPath("default", ""), code: 405, reason: metav1.StatusReasonMethodNotAllowed, message: notAllowed},
		{name: "DELETE on a status", method: "DELETE", path: podPath("default", "a") + "/status", code: 405, reason: metav1.StatusReasonMethodNotAllowed, message: notAllowed},
		{name: "DELETE on all namespaces", method: "DELETE", path: "/api/v1/pods", code: 405, reason: metav1.StatusReasonMethodNotAllowed, message: notAllowed},
		{name: "GET of a namespaced object without its namespace", method: "GET", path: "/api/v1/pods/a", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "empty namespace segment lists nothing", method: "GET", path: "/api/v1/namespaces//pods", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "empty namespace segment deletes nothing", method: "DELETE", path: "/api/v1/namespaces//pods", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "double slash", method: "GET", path: "/api/v1//namespaces/default/pods", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "NUL in a name", method: "GET", path: podPath("default", "%00"), code: 404, reason: metav1.StatusReasonNotFound},
		{name: "invalid UTF-8 in a name", method: "DELETE", path: podPath("default", "%FF"), code: 404, reason: metav1.StatusReasonNotFound},
		{name: "NUL in a namespace", method: "GET", path: podPath("%00", "a"), code: 404, reason: metav1.StatusReasonNotFound},
		{name: "create in a NUL namespace", method: "POST", path: podPath("%00", ""), body: `{"metadata":{"name":"b"}}`, code: 404, reason: metav1.StatusReasonNotFound, message: `namespaces "\x00" not found`},
		{name: "list in a NUL namespace", method: "GET", path: podPath("%00", ""), code: 400, reason: metav1.StatusReasonBadRequest},
		{name: "unknown resource", method: "GET", path: "/api/v1/foos", code: 404, reason: metav1.StatusReasonNotFound, message: "the server could not find the requested resource"},
		{name: "unknown subresource", method: "GET", path: podPath("default", "a") + "/bogus", code: 404, reason: metav1.StatusReasonNotFound},
		{name: "encoded slash in a name", method: "GET", path: podPath("default", "a%2Fb"), code: 404, reason: metav1.StatusReasonNotFound},
		{name: "dot-dot name", method: "GET", path: podPath("default", "%2E%2E"), code: 400, reason: metav1.StatusReasonBadRequest},
	})
	// A resourceVersion the store has not reached is a 504 that client-go
	// retries after the Retry-After delay.
	r := e.do("GET", podPath("default", "")+"?resourceVersion=99999999&resourceVersionMatch=NotOlderThan", nil)
	r.expect(t, 504, metav1.StatusReasonTimeout)
	if got := r.header.Get("Retry-After"); got != "1" {
		t.Errorf("Retry-After = %q, want 1", got)
	}
}

// FuzzRequestPath sends arbitrary methods, paths and queries: the answer
// is never a 5xx, and a refused request writes nothing.
func FuzzRequestPath(f *testing.F) {
	s, backend := fuzzServer(f)
	if rec := serve(s, "POST", podPath("default", ""), "application/json", []byte(`{"metadata":{"name":"seed"},"spec":{"containers":[{"name":"c","image":"i"}]}}`)); rec.Code != 201 {
		f.Fatalf("seed: %d %s", rec.Code, rec.Body)
	}
	for _, p := range []string{
		"/api/v1/namespaces/default/pods/seed", "/api/v1/namespaces//pods", "/api/v1/namespaces/%00/pods/seed",
		"/api/v1/namespaces/default/pods/seed/status?resourceVersion=abc", "/api/v1/watch/namespaces/default/pods?timeoutSeconds=-1",
		"/apis/apps/v1/namespaces/default/deployments/x/scale", "/api/v1/pods?limit=-1&continue=%ff", "/api/v1/namespaces/default/pods/..",
		"/api/v1/namespaces/default/pods/a%2Fb", "/api/v1/namespaces/default/pods/seed/binding", "/version/", "/apis/apps", "/openapi/v3/api/v1",
	} {
		for m := range uint8(5) {
			f.Add(m, p, []byte(`{"metadata":{"name":"seed"}}`))
		}
	}
	methods := []string{"GET", "POST", "PUT", "PATCH", "DELETE"}
	f.Fuzz(func(t *testing.T, m uint8, target string, body []byte) {
		u, err := url.Parse(target)
		if err != nil || u.Scheme != "" || u.Host != "" || !strings.HasPrefix(u.Path, "/") || strings.Contains(target, "watch") {
			t.Skip() // not a request path; watches would block the fuzzer
		}
		u.RawQuery = strings.ReplaceAll(u.RawQuery, "watch", "")
		before, err := backend.CurrentRevision(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		method := methods[int(m)%len(methods)]
		ct := "application/json"
		if method == "PATCH" {
			ct = "application/merge-patch+json"
		}
		req := httptest.NewRequest(method, "/", bytes.NewReader(body))
		req.URL = u
		req.RequestURI = u.RequestURI()
		req.Header.Set("Content-Type", ct)
		rec := httptest.NewRecorder()
		s.Handler().ServeHTTP(rec, req)
		if rec.Code >= 500 {
			t.Fatalf("%s %s: %d %s", method, target, rec.Code, rec.Body)
		}
		after, err := backend.CurrentRevision(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if rec.Code >= 300 && after != before {
			t.Fatalf("%s %s: refused (%d) but wrote: revision %d -> %d", method, target, rec.Code, before, after)
		}
		if rec.Code < 300 && method != "GET" {
			// Put the seed back as it was and keep the store small.
			serve(s, "DELETE", podPath("default", "")+"?fieldSelector=metadata.name!%3Dseed", "", nil)
			serve(s, "POST", podPath("default", ""), "application/json", []byte(`{"metadata":{"name":"seed"},"spec":{"containers":[{"name":"c","image":"i"}]}}`))
		}
	})
}
