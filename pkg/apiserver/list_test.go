package apiserver

import (
	"net/url"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestListSelectors(t *testing.T) {
	e := newTestEnv(t)
	e.mustCreate("/api/v1/namespaces", &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "other"}}, nil)
	bound := testPod("bound", map[string]string{"app": "web"})
	bound.Spec.NodeName = "node-1"
	e.mustCreate(podPath("default", ""), bound, nil)
	e.mustCreate(podPath("default", ""), testPod("free", map[string]string{"app": "db"}), nil)
	e.mustCreate(podPath("other", ""), testPod("elsewhere", map[string]string{"app": "web"}), nil)
	tests := []struct {
		path string
		want []string
	}{
		{"/api/v1/pods", []string{"bound", "free", "elsewhere"}},
		{podPath("default", ""), []string{"bound", "free"}},
		{"/api/v1/pods?labelSelector=" + url.QueryEscape("app=web"), []string{"bound", "elsewhere"}},
		{"/api/v1/pods?labelSelector=" + url.QueryEscape("app in (db)"), []string{"free"}},
		{"/api/v1/pods?fieldSelector=" + url.QueryEscape("spec.nodeName=node-1"), []string{"bound"}},
		{"/api/v1/pods?fieldSelector=" + url.QueryEscape("spec.nodeName="), []string{"free", "elsewhere"}},
		{"/api/v1/pods?fieldSelector=" + url.QueryEscape("metadata.namespace=other"), []string{"elsewhere"}},
		{"/api/v1/pods?fieldSelector=" + url.QueryEscape("status.phase=Pending,metadata.name!=free"), []string{"bound", "elsewhere"}},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			var list corev1.PodList
			r := e.do("GET", tc.path, nil)
			r.expect(t, 200, "")
			r.decode(t, &list)
			if list.Kind != "PodList" || list.APIVersion != "v1" || list.ResourceVersion == "" {
				t.Errorf("list meta %+v %+v", list.TypeMeta, list.ListMeta)
			}
			got := map[string]bool{}
			for _, p := range list.Items {
				got[p.Name] = true
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %v, want %v", got, tc.want)
			}
			for _, n := range tc.want {
				if !got[n] {
					t.Fatalf("got %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestListPagination(t *testing.T) {
	e := newTestEnv(t)
	for _, n := range []string{"a", "b", "c", "d", "e"} {
		e.mustCreate(podPath("default", ""), testPod(n, nil), nil)
	}
	var names []string
	cont := ""
	pages := 0
	for {
		path := podPath("default", "") + "?limit=2"
		if cont != "" {
			path += "&continue=" + url.QueryEscape(cont)
		}
		var list corev1.PodList
		e.do("GET", path, nil).decode(t, &list)
		pages++
		for _, p := range list.Items {
			names = append(names, p.Name)
		}
		if list.Continue == "" {
			break
		}
		cont = list.Continue
		// Writes between pages do not show up: a paged list is one snapshot.
		if pages == 1 {
			e.mustCreate(podPath("default", ""), testPod("z", nil), nil)
		}
	}
	if pages != 3 || len(names) != 5 || names[0] != "a" || names[4] != "e" {
		t.Fatalf("pages %d names %v", pages, names)
	}
}

func TestListErrors(t *testing.T) {
	e := newTestEnv(t)
	tests := []struct {
		path   string
		code   int
		reason metav1.StatusReason
	}{
		{"/api/v1/pods?labelSelector=" + url.QueryEscape("a in ("), 400, metav1.StatusReasonBadRequest},
		{"/api/v1/pods?fieldSelector=" + url.QueryEscape("spec.bogus=1"), 400, metav1.StatusReasonBadRequest},
		{"/api/v1/configmaps?fieldSelector=" + url.QueryEscape("spec.nodeName=x"), 400, metav1.StatusReasonBadRequest},
		{"/api/v1/pods?limit=x", 400, metav1.StatusReasonBadRequest},
		{"/api/v1/pods?continue=garbage", 400, ""},
		{"/api/v1/pods?resourceVersionMatch=Exact", 422, metav1.StatusReasonInvalid},
		{"/api/v1/pods?resourceVersion=abc", 400, metav1.StatusReasonBadRequest},
		{"/api/v1/pods?sendInitialEvents=true", 422, metav1.StatusReasonInvalid},
		{"/api/v1/nodes/n1/status?watch=0", 404, metav1.StatusReasonNotFound},
		{"/api/v1/namespaces/default/nodes", 404, metav1.StatusReasonNotFound},
		{"/apis/nope/v1/things", 404, metav1.StatusReasonNotFound},
		{"/api/v1/namespaces/default/pods/a/log", 404, metav1.StatusReasonNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			r := e.do("GET", tc.path, nil)
			if tc.reason == "" {
				if r.code != 400 && r.code != 410 {
					t.Fatalf("got %d: %s", r.code, r.body)
				}
				return
			}
			r.expect(t, tc.code, tc.reason)
		})
	}
}

func TestListResourceVersionExact(t *testing.T) {
	e := newTestEnv(t)
	var first corev1.Pod
	e.mustCreate(podPath("default", ""), testPod("a", nil), &first)
	e.mustCreate(podPath("default", ""), testPod("b", nil), nil)
	var list corev1.PodList
	e.do("GET", podPath("default", "")+"?resourceVersionMatch=Exact&resourceVersion="+first.ResourceVersion, nil).decode(t, &list)
	if len(list.Items) != 1 || list.ResourceVersion != first.ResourceVersion {
		t.Fatalf("exact list at %s: %d items rv %s", first.ResourceVersion, len(list.Items), list.ResourceVersion)
	}
}
