package apiserver

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kplane/kplane/pkg/storage/memory"
)

// statusGVK is the kind a Status is encoded with, in every group.
var statusGVK = schema.GroupVersionKind{Version: "v1", Kind: "Status"}

// clientGoProtobufAccept is the Accept header of a client-go client
// configured with ContentType protobuf.
const clientGoProtobufAccept = protobufType + ", */*"

// protobufScheme is a scheme of the types these tests decode, built from
// k8s.io/api as a client's would be.
func protobufScheme(t testing.TB) *runtime.Scheme {
	t.Helper()
	sch := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, appsv1.AddToScheme, policyv1.AddToScheme, autoscalingv1.AddToScheme, authenticationv1.AddToScheme, metav1.AddMetaToScheme,
	} {
		if err := add(sch); err != nil {
			t.Fatal(err)
		}
	}
	return sch
}

// decodePB decodes a protobuf answer with k8s.io/apimachinery's protobuf
// serializer (what client-go uses), after checking its code and
// Content-Type, and returns the object and the kind its envelope names.
func decodePB(t testing.TB, r response, code int) (runtime.Object, schema.GroupVersionKind) {
	t.Helper()
	if r.code != code {
		t.Fatalf("got %d, want %d: %q", r.code, code, r.body)
	}
	if ct := r.header.Get("Content-Type"); ct != protobufType {
		t.Fatalf("Content-Type %q, want %q: %q", ct, protobufType, r.body)
	}
	sch := protobufScheme(t)
	obj, gvk, err := protobuf.NewSerializer(sch, sch).Decode(r.body, nil, nil)
	if err != nil {
		t.Fatalf("decode protobuf: %v", err)
	}
	return obj, *gvk
}

// expectKind fails unless the envelope named want.
func expectKind(t testing.TB, got schema.GroupVersionKind, want schema.GroupVersionKind) {
	t.Helper()
	if got != want {
		t.Fatalf("envelope kind %v, want %v", got, want)
	}
}

// TestEncodeProtobufIsApimachinerys checks encodeProtobuf and
// encodeProtobufEvent write exactly the bytes of k8s.io/apimachinery's
// protobuf serializer and of a marshaled, length-delimited WatchEvent.
func TestEncodeProtobufIsApimachinerys(t *testing.T) {
	sch := protobufScheme(t)
	pod := testPod("p", map[string]string{"a": "b"})
	pod.Namespace, pod.ResourceVersion = "ns", "12"
	pod.TypeMeta = metav1.TypeMeta{}
	before := pod.DeepCopy()
	gvk := corev1.SchemeGroupVersion.WithKind("Pod")
	got, err := encodeProtobuf(pod, gvk)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	typed := pod.DeepCopy()
	typed.SetGroupVersionKind(gvk)
	if err := protobuf.NewSerializer(sch, sch).Encode(typed, &want); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("encodeProtobuf differs from apimachinery's:\n got %x\nwant %x", got, want.Bytes())
	}
	if diff := cmp.Diff(before, pod); diff != "" {
		t.Errorf("encodeProtobuf changed the object:\n%s", diff)
	}
	for _, typ := range []watch.EventType{watch.Added, watch.Bookmark, watch.EventType(bytes.Repeat([]byte("x"), 300))} {
		frame, err := encodeProtobufEvent(typ, pod, gvk)
		if err != nil {
			t.Fatal(err)
		}
		ev := metav1.WatchEvent{Type: string(typ), Object: runtime.RawExtension{Raw: want.Bytes()}}
		body, err := ev.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		wantFrame := binary.BigEndian.AppendUint32(nil, uint32(len(body)))
		wantFrame = append(wantFrame, body...)
		if !bytes.Equal(frame, wantFrame) {
			t.Fatalf("%.10s: frame differs:\n got %x\nwant %x", typ, frame, wantFrame)
		}
	}
}

// TestProtobufVerbs runs every verb on built-in resources as a client-go
// client configured for protobuf does, decoding each answer with
// apimachinery's protobuf serializer.
func TestProtobufVerbs(t *testing.T) {
	e := newTestEnv(t)
	podGVK := corev1.SchemeGroupVersion.WithKind("Pod")
	pbBody := func(obj runtime.Object, gvk schema.GroupVersionKind) []byte {
		data, err := encodeProtobuf(obj, gvk)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	pb := func(method, path string, body []byte, contentType string) response {
		t.Helper()
		h := []string{"Accept", clientGoProtobufAccept}
		if body != nil {
			h = append(h, "Content-Type", contentType)
		}
		return e.do(method, path, body, h...)
	}

	obj, gvk := decodePB(t, pb("POST", podPath("default", ""), pbBody(testPod("p", map[string]string{"a": "b"}), podGVK), protobufType), http.StatusCreated)
	expectKind(t, gvk, podGVK)
	created := obj.(*corev1.Pod)
	if created.Name != "p" || created.UID == "" || created.Labels["a"] != "b" {
		t.Fatalf("create: %+v", created.ObjectMeta)
	}

	obj, gvk = decodePB(t, pb("GET", podPath("default", "p"), nil, ""), http.StatusOK)
	expectKind(t, gvk, podGVK)
	if got := obj.(*corev1.Pod); got.ResourceVersion != created.ResourceVersion || got.Spec.Containers[0].Image != created.Spec.Containers[0].Image {
		t.Fatalf("get: %+v", got)
	}

	e.mustCreate(podPath("default", ""), testPod("q", nil), nil)
	obj, gvk = decodePB(t, pb("GET", podPath("default", ""), nil, ""), http.StatusOK)
	expectKind(t, gvk, corev1.SchemeGroupVersion.WithKind("PodList"))
	if list := obj.(*corev1.PodList); len(list.Items) != 2 || list.ResourceVersion == "" || list.Items[0].Name != "p" {
		t.Fatalf("list: %+v", list)
	}

	created.Labels["a"] = "c"
	obj, _ = decodePB(t, pb("PUT", podPath("default", "p"), pbBody(created, podGVK), protobufType), http.StatusOK)
	updated := obj.(*corev1.Pod)
	if updated.Labels["a"] != "c" || updated.ResourceVersion == created.ResourceVersion {
		t.Fatalf("update: %+v", updated.ObjectMeta)
	}

	obj, gvk = decodePB(t, pb("PATCH", podPath("default", "p"), []byte(`{"metadata":{"labels":{"m":"1"}}}`), "application/merge-patch+json"), http.StatusOK)
	expectKind(t, gvk, podGVK)
	if got := obj.(*corev1.Pod); got.Labels["m"] != "1" {
		t.Fatalf("patch: %+v", got.ObjectMeta)
	}

	apply := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","labels":{"applied":"yes"}}}`
	obj, _ = decodePB(t, pb("PATCH", podPath("default", "p")+"?fieldManager=test", []byte(apply), "application/apply-patch+yaml"), http.StatusOK)
	if got := obj.(*corev1.Pod); got.Labels["applied"] != "yes" || len(got.ManagedFields) == 0 {
		t.Fatalf("apply: %+v", got.ObjectMeta)
	}

	obj, _ = decodePB(t, pb("GET", podPath("default", "p"), nil, ""), http.StatusOK)
	withStatus := obj.(*corev1.Pod)
	withStatus.Status.Message = "from protobuf"
	obj, gvk = decodePB(t, pb("PUT", podPath("default", "p")+"/status", pbBody(withStatus, podGVK), protobufType), http.StatusOK)
	expectKind(t, gvk, podGVK)
	if got := obj.(*corev1.Pod); got.Status.Message != "from protobuf" {
		t.Fatalf("status update: %+v", got.Status)
	}

	binding := &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: "q"}, Target: corev1.ObjectReference{Kind: "Node", Name: "node-a"}}
	obj, gvk = decodePB(t, pb("POST", podPath("default", "q")+"/binding", pbBody(binding, corev1.SchemeGroupVersion.WithKind("Binding")), protobufType), http.StatusCreated)
	expectKind(t, gvk, statusGVK)
	if st := obj.(*metav1.Status); st.Status != metav1.StatusSuccess || st.Code != http.StatusCreated {
		t.Fatalf("binding: %+v", st)
	}

	e.mustCreate(deployPath("default", ""), testDeployment("d", 2), nil)
	scaleGVK := autoscalingv1.SchemeGroupVersion.WithKind("Scale")
	obj, gvk = decodePB(t, pb("GET", deployPath("default", "d")+"/scale", nil, ""), http.StatusOK)
	expectKind(t, gvk, scaleGVK)
	scale := obj.(*autoscalingv1.Scale)
	if scale.Spec.Replicas != 2 || scale.Name != "d" {
		t.Fatalf("scale: %+v", scale)
	}
	scale.Spec.Replicas = 5
	obj, gvk = decodePB(t, pb("PUT", deployPath("default", "d")+"/scale", pbBody(scale, scaleGVK), protobufType), http.StatusOK)
	expectKind(t, gvk, scaleGVK)
	if got := obj.(*autoscalingv1.Scale); got.Spec.Replicas != 5 {
		t.Fatalf("scale update: %+v", got)
	}

	e.mustCreate(podPath("default", ""), testPod("ev", nil), nil)
	eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "ev", Namespace: "default"}}
	obj, gvk = decodePB(t, pb("POST", podPath("default", "ev")+"/eviction", pbBody(eviction, policyv1.SchemeGroupVersion.WithKind("Eviction")), protobufType), http.StatusCreated)
	expectKind(t, gvk, statusGVK)
	if st := obj.(*metav1.Status); st.Status != metav1.StatusSuccess {
		t.Fatalf("eviction: %+v", st)
	}

	// A delete answers with the object (pods) or a Status (the others).
	obj, gvk = decodePB(t, pb("DELETE", podPath("default", "q"), nil, ""), http.StatusOK)
	expectKind(t, gvk, podGVK)
	if got := obj.(*corev1.Pod); got.Name != "q" {
		t.Fatalf("delete pod: %+v", got.ObjectMeta)
	}
	e.mustCreate("/api/v1/namespaces/default/configmaps", &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm"}}, nil)
	obj, gvk = decodePB(t, pb("DELETE", "/api/v1/namespaces/default/configmaps/cm", nil, ""), http.StatusOK)
	expectKind(t, gvk, statusGVK)
	if st := obj.(*metav1.Status); st.Status != metav1.StatusSuccess || st.Details.Name != "cm" || st.Details.Kind != "configmaps" {
		t.Fatalf("delete configmap: %+v", st)
	}
	obj, gvk = decodePB(t, pb("DELETE", podPath("default", ""), nil, ""), http.StatusOK)
	expectKind(t, gvk, corev1.SchemeGroupVersion.WithKind("PodList"))
	// q, deleted gracefully above, is still there.
	if list := obj.(*corev1.PodList); len(list.Items) != 2 || list.Items[0].Name != "p" || list.Items[1].DeletionTimestamp == nil {
		t.Fatalf("deletecollection: %d items", len(list.Items))
	}
}

// TestProtobufTokenRequest checks serviceaccounts/token answers a
// TokenRequest in protobuf, and a SelfSubjectReview made with that
// token is protobuf too.
func TestProtobufTokenRequest(t *testing.T) {
	e, _ := newTokenEnv(t)
	admin := e.client(e.user("admin"))
	e.do(admin, "POST", saPath("default", ""), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}).expect(t, http.StatusCreated, "")
	r := e.do(admin, "POST", saPath("default", "builder")+"/token", tokenRequest(authenticationv1.TokenRequestSpec{}), "Accept", clientGoProtobufAccept)
	obj, gvk := decodePB(t, r, http.StatusCreated)
	expectKind(t, gvk, tokenRequestGVK)
	tr := obj.(*authenticationv1.TokenRequest)
	if tr.Status.Token == "" || tr.Name != "builder" {
		t.Fatalf("token request: %+v", tr)
	}
	ssrGVK := authenticationv1.SchemeGroupVersion.WithKind("SelfSubjectReview")
	review, err := encodeProtobuf(&authenticationv1.SelfSubjectReview{}, ssrGVK)
	if err != nil {
		t.Fatal(err)
	}
	r = e.do(e.client(), "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", string(review), append(bearer(tr.Status.Token), "Content-Type", protobufType, "Accept", clientGoProtobufAccept)...)
	obj, gvk = decodePB(t, r, http.StatusCreated)
	expectKind(t, gvk, ssrGVK)
	if got := obj.(*authenticationv1.SelfSubjectReview); got.Status.UserInfo.Username != "system:serviceaccount:default:builder" {
		t.Fatalf("self subject review: %+v", got.Status)
	}
}

// TestProtobufErrorsAndViews checks the answers kube-apiserver gives in
// protobuf besides objects: errors (negotiated like the objects, but
// without transformations), PartialObjectMetadata(List), and the 406 for
// a Table in protobuf, which is JSON since the client accepts nothing
// else.
func TestProtobufErrorsAndViews(t *testing.T) {
	e := newTestEnv(t)
	e.mustCreate(podPath("default", ""), testPod("p", nil), nil)

	obj, gvk := decodePB(t, e.do("GET", podPath("default", "missing"), nil, "Accept", clientGoProtobufAccept), http.StatusNotFound)
	expectKind(t, gvk, statusGVK)
	if st := obj.(*metav1.Status); st.Reason != metav1.StatusReasonNotFound || st.Code != 404 || st.Details.Name != "missing" {
		t.Fatalf("not found: %+v", st)
	}
	obj, _ = decodePB(t, e.do("POST", podPath("default", ""), testPod("p", nil), "Accept", clientGoProtobufAccept), http.StatusConflict)
	if st := obj.(*metav1.Status); st.Reason != metav1.StatusReasonAlreadyExists {
		t.Fatalf("already exists: %+v", st)
	}
	obj, _ = decodePB(t, e.do("GET", "/api/v1/nothing", nil, "Accept", clientGoProtobufAccept), http.StatusNotFound)
	if st := obj.(*metav1.Status); st.Reason != metav1.StatusReasonNotFound {
		t.Fatalf("unknown path: %+v", st)
	}

	metaList := protobufType + ";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1," + protobufType + ";as=PartialObjectMetadata;g=meta.k8s.io;v=v1," + protobufType
	obj, gvk = decodePB(t, e.do("GET", podPath("default", ""), nil, "Accept", metaList), http.StatusOK)
	expectKind(t, gvk, metav1.SchemeGroupVersion.WithKind("PartialObjectMetadataList"))
	if l := obj.(*metav1.PartialObjectMetadataList); len(l.Items) != 1 || l.Items[0].Name != "p" || l.ResourceVersion == "" {
		t.Fatalf("metadata list: %+v", l)
	}
	obj, gvk = decodePB(t, e.do("GET", podPath("default", "p"), nil, "Accept", protobufType+";as=PartialObjectMetadata;g=meta.k8s.io;v=v1"), http.StatusOK)
	expectKind(t, gvk, metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata"))
	if m := obj.(*metav1.PartialObjectMetadata); m.Name != "p" || m.UID == "" {
		t.Fatalf("metadata: %+v", m)
	}
	// An error on a metadata request is a Status, in protobuf.
	obj, _ = decodePB(t, e.do("GET", podPath("default", "missing"), nil, "Accept", metaList), http.StatusNotFound)
	if st := obj.(*metav1.Status); st.Reason != metav1.StatusReasonNotFound {
		t.Fatalf("metadata not found: %+v", st)
	}

	// No Table in protobuf: with JSON beside it, a JSON Table ...
	table := protobufType + ";as=Table;g=meta.k8s.io;v=v1"
	r := e.do("GET", podPath("default", ""), nil, "Accept", table+",application/json;as=Table;g=meta.k8s.io;v=v1")
	if r.code != 200 || r.header.Get("Content-Type") != "application/json" || !bytes.Contains(r.body, []byte(`"kind":"Table"`)) {
		t.Fatalf("table fallback: %d %s %s", r.code, r.header.Get("Content-Type"), r.body)
	}
	// ... alone, a 406 Status in JSON, the only encoding left.
	r = e.do("GET", podPath("default", ""), nil, "Accept", table)
	r.expect(t, http.StatusNotAcceptable, metav1.StatusReasonNotAcceptable)
	if r.header.Get("Content-Type") != "application/json" {
		t.Fatalf("406 Content-Type %q", r.header.Get("Content-Type"))
	}
	if st := r.status(t); st.Message != "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf" {
		t.Fatalf("406 message %q", st.Message)
	}
	// YAML has no watch framing.
	r = e.do("GET", podPath("default", "")+"?watch=true", nil, "Accept", "application/yaml")
	if r.code != http.StatusNotAcceptable || r.header.Get("Content-Type") != "application/yaml" {
		t.Fatalf("yaml watch: %d %s %s", r.code, r.header.Get("Content-Type"), r.body)
	}
}

// TestProtobufCustomResources checks custom resources, which have no
// protobuf schema: a client that accepts JSON too gets JSON, one that
// accepts protobuf only a 406 (its Status in protobuf, which errors may
// use), and metadata views are protobuf.
func TestProtobufCustomResources(t *testing.T) {
	e := newTestEnv(t)
	e.runControllers()
	e.createCRD(testCRD())
	path := "/apis/example.com/v1/namespaces/default/widgets"
	e.mustCreate(path, map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "w"}}, nil)

	r := e.do("GET", path+"/w", nil, "Accept", clientGoProtobufAccept)
	if r.code != 200 || r.header.Get("Content-Type") != "application/json" || !bytes.Contains(r.body, []byte(`"kind":"Widget"`)) {
		t.Fatalf("protobuf or JSON: %d %s %s", r.code, r.header.Get("Content-Type"), r.body)
	}
	r = e.do("POST", path, map[string]any{"apiVersion": "example.com/v1", "kind": "Widget", "metadata": map[string]any{"name": "x"}}, "Accept", protobufType)
	obj, _ := decodePB(t, r, http.StatusNotAcceptable)
	if st := obj.(*metav1.Status); st.Reason != metav1.StatusReasonNotAcceptable {
		t.Fatalf("protobuf only: %+v", st)
	}
	// Nothing was created: negotiation comes first.
	e.do("GET", path+"/x", nil).expect(t, http.StatusNotFound, metav1.StatusReasonNotFound)

	obj, gvk := decodePB(t, e.do("GET", path, nil, "Accept", protobufType+";as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"), http.StatusOK)
	expectKind(t, gvk, metav1.SchemeGroupVersion.WithKind("PartialObjectMetadataList"))
	if l := obj.(*metav1.PartialObjectMetadataList); len(l.Items) != 1 || l.Items[0].Name != "w" {
		t.Fatalf("metadata list: %+v", l)
	}
	pw := e.pbWatch(path+"?watch=true", protobufType+";as=PartialObjectMetadata;g=meta.k8s.io;v=v1")
	ev := pw.next(t)
	if m, ok := ev.Object.(*metav1.PartialObjectMetadata); ev.Type != watch.Added || !ok || m.Name != "w" {
		t.Fatalf("metadata watch: %s %T", ev.Type, ev.Object)
	}
	r = e.do("GET", path+"?watch=true", nil, "Accept", protobufType)
	if r.code != http.StatusNotAcceptable {
		t.Fatalf("protobuf watch of a custom resource: %d", r.code)
	}
}

// pbWatchStream is an open protobuf watch, decoded frame by frame as
// client-go does: length-delimited WatchEvents in plain protobuf, each
// object in the protobuf envelope.
type pbWatchStream struct {
	events      <-chan watch.Event
	contentType string
	code        int
}

func (e *testEnv) pbWatch(path, accept string) *pbWatchStream {
	e.t.Helper()
	sch := protobufScheme(e.t)
	resp, events := streamEvents(e, path, []string{"Accept", accept}, func(body io.Reader) func() (watch.Event, error) {
		frames := protobuf.LengthDelimitedFramer.NewFrameReader(io.NopCloser(body))
		dec := streaming.NewDecoder(frames, protobuf.NewRawSerializer(sch, sch))
		objects := protobuf.NewSerializer(sch, sch)
		return func() (watch.Event, error) {
			var we metav1.WatchEvent
			if _, _, err := dec.Decode(nil, &we); err != nil {
				return watch.Event{}, err
			}
			obj, _, err := objects.Decode(we.Object.Raw, nil, nil)
			if err != nil {
				e.t.Errorf("decode watch object: %v", err)
				return watch.Event{}, err
			}
			return watch.Event{Type: watch.EventType(we.Type), Object: obj}, nil
		}
	})
	return &pbWatchStream{events: events, contentType: resp.Header.Get("Content-Type"), code: resp.StatusCode}
}

func (w *pbWatchStream) next(t testing.TB) watch.Event {
	t.Helper()
	return nextOn(t, w.events)
}

// expect reads the next event and checks its type and, for a Pod, its name.
func (w *pbWatchStream) expect(t testing.TB, typ watch.EventType, name string) watch.Event {
	t.Helper()
	ev := w.next(t)
	if ev.Type != typ {
		t.Fatalf("got %s %T, want %s", ev.Type, ev.Object, typ)
	}
	if p, ok := ev.Object.(*corev1.Pod); name != "" && (!ok || p.Name != name) {
		t.Fatalf("got %s %T %v, want %s", ev.Type, ev.Object, ev.Object, name)
	}
	return ev
}

// TestProtobufWatch decodes protobuf watch streams frame by frame: asked
// for with stream=watch or, as client-go does, with the plain media type.
func TestProtobufWatch(t *testing.T) {
	for _, accept := range []string{protobufType + ";stream=watch", clientGoProtobufAccept} {
		t.Run(accept, func(t *testing.T) {
			e := newTestEnv(t)
			e.mustCreate(podPath("default", ""), testPod("a", nil), nil)
			w := e.pbWatch(podPath("default", "")+"?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true", accept)
			if w.code != 200 || w.contentType != protobufType+";stream=watch" {
				t.Fatalf("code %d, Content-Type %q", w.code, w.contentType)
			}
			w.expect(t, watch.Added, "a")
			bm := w.expect(t, watch.Bookmark, "").Object.(*corev1.Pod)
			if bm.Annotations[metav1.InitialEventsAnnotationKey] != "true" || bm.ResourceVersion == "" {
				t.Fatalf("initial-events-end bookmark %+v", bm.ObjectMeta)
			}
			e.mustCreate(podPath("default", ""), testPod("b", nil), nil)
			w.expect(t, watch.Added, "b")
			e.do("PATCH", podPath("default", "b"), `{"metadata":{"labels":{"x":"y"}}}`, "Content-Type", "application/merge-patch+json").expect(t, 200, "")
			if p := w.expect(t, watch.Modified, "b").Object.(*corev1.Pod); p.Labels["x"] != "y" {
				t.Fatalf("modified %+v", p.ObjectMeta)
			}
			e.do("DELETE", podPath("default", "b"), nil).expect(t, 200, "")
			w.expect(t, watch.Deleted, "b")
		})
	}
}

// TestProtobufWatchJSONAndProtobufSeeTheSame checks a JSON and a protobuf
// watcher of the same changes get the same objects: the shared event
// objects are not changed by either encoding.
func TestProtobufWatchJSONAndProtobufSeeTheSame(t *testing.T) {
	e := newTestEnv(t)
	rv := listRV(t, e, podPath("default", ""))
	pw := e.pbWatch(podPath("default", "")+"?watch=true&resourceVersion="+rv, protobufType)
	jw := e.watch(podPath("default", "") + "?watch=true&resourceVersion=" + rv)
	var created corev1.Pod
	e.mustCreate(podPath("default", ""), testPod("a", map[string]string{"k": "v"}), &created)
	got := pw.expect(t, watch.Added, "a").Object.(*corev1.Pod)
	jev := jw.expectEvent(t, "ADDED", "a")
	created.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}
	if diff := cmp.Diff(&created, got); diff != "" {
		t.Fatalf("protobuf watch object differs from the created one (-want +got):\n%s", diff)
	}
	if jev.Kind != "Pod" || jev.APIVersion != "v1" || jev.UID != created.UID {
		t.Fatalf("JSON watch object %+v", jev)
	}
}

// TestProtobufWatchErrors checks the Error events of a protobuf watch: a
// too old resourceVersion is a 200 stream holding one ERROR frame whose
// object is a 410 Status.
func TestProtobufWatchErrors(t *testing.T) {
	e := newTestEnvWithStorage(t, memory.Config{HistoryRevisions: 3})
	rv := listRV(t, e, podPath("default", ""))
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		e.mustCreate(podPath("default", ""), testPod(n, nil), nil)
	}
	w := e.pbWatch(podPath("default", "")+"?watch=true&resourceVersion="+rv, protobufType)
	if w.code != 200 || w.contentType != protobufType+";stream=watch" {
		t.Fatalf("code %d, Content-Type %q", w.code, w.contentType)
	}
	ev := w.expect(t, watch.Error, "")
	st, ok := ev.Object.(*metav1.Status)
	if !ok || st.Code != http.StatusGone || st.Reason != metav1.StatusReasonExpired || st.Status != metav1.StatusFailure {
		t.Fatalf("error event %T %+v", ev.Object, ev.Object)
	}
	select {
	case ev, ok := <-w.events:
		if ok {
			t.Fatalf("event after the error: %s", ev.Type)
		}
	case <-time.After(eventWait):
		t.Fatal("watch not closed after its error")
	}
}

// TestProtoEventCache checks an event object is encoded once per kind and
// view while remembered, and again once pushed out by newer ones.
func TestProtoEventCache(t *testing.T) {
	var c protoEventCache
	encodes := map[protoEventKey]int{}
	get := func(k protoEventKey) []byte {
		t.Helper()
		data, err := c.envelope(k, func() ([]byte, error) {
			encodes[k]++
			return []byte(k.gvk.Kind), nil
		})
		if err != nil || string(data) != k.gvk.Kind {
			t.Fatalf("envelope: %q, %v", data, err)
		}
		return data
	}
	pod := testPod("p", nil)
	podKey := protoEventKey{obj: pod, gvk: corev1.SchemeGroupVersion.WithKind("Pod")}
	metaKey := protoEventKey{obj: pod, gvk: podKey.gvk, f: format{media: mediaProtobuf, view: viewMetadata, version: "v1"}}
	otherKind := protoEventKey{obj: pod, gvk: corev1.SchemeGroupVersion.WithKind("Other")}
	for range 3 {
		get(podKey)
		get(metaKey)
		get(otherKind)
	}
	if encodes[podKey] != 1 || encodes[metaKey] != 1 || encodes[otherKind] != 1 {
		t.Fatalf("encodes %v, want one each", encodes)
	}
	if _, err := c.envelope(protoEventKey{obj: testPod("bad", nil)}, func() ([]byte, error) { return nil, io.ErrUnexpectedEOF }); err != io.ErrUnexpectedEOF {
		t.Fatalf("encode error: %v", err)
	}
	for i := range protoEventCacheSize {
		get(protoEventKey{obj: testPod(fmt.Sprint(i), nil), gvk: podKey.gvk})
	}
	if len(c.entries) != protoEventCacheSize || len(c.ring) != protoEventCacheSize {
		t.Fatalf("%d entries, ring of %d; want %d", len(c.entries), len(c.ring), protoEventCacheSize)
	}
	get(podKey)
	if encodes[podKey] != 2 {
		t.Fatalf("an evicted object was not encoded again: %d encodes", encodes[podKey])
	}
}
