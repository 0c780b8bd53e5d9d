package apiserver

import (
	"bufio"
	"context"
	"encoding/json"
	"encoding/pem"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/apiextensions"
)

const crdPath = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"

// runControllers runs the server's controllers until the test ends.
func (e *testEnv) runControllers() {
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = e.server.RunControllers(ctx) })
	e.t.Cleanup(func() { cancel(); wg.Wait() })
}

// testCRD is a namespaced widgets.example.com with versions v1 (storage)
// and v1beta1, status and scale subresources and printer columns.
func testCRD() *apiextensionsv1.CustomResourceDefinition {
	props := map[string]apiextensionsv1.JSONSchemaProps{
		"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"replicas": {Type: "integer"},
			"color":    {Type: "string"},
		}},
		"status": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
			"replicas": {Type: "integer"},
			"selector": {Type: "string"},
		}},
	}
	schema := &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}}
	subs := &apiextensionsv1.CustomResourceSubresources{
		Status: &apiextensionsv1.CustomResourceSubresourceStatus{},
		Scale: &apiextensionsv1.CustomResourceSubresourceScale{
			SpecReplicasPath: ".spec.replicas", StatusReplicasPath: ".status.replicas", LabelSelectorPath: ptr(".status.selector"),
		},
	}
	cols := []apiextensionsv1.CustomResourceColumnDefinition{
		{Name: "Color", Type: "string", JSONPath: ".spec.color"},
		{Name: "Replicas", Type: "integer", JSONPath: ".spec.replicas"},
	}
	return &apiextensionsv1.CustomResourceDefinition{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apiextensions.k8s.io/v1", Kind: "CustomResourceDefinition"},
		ObjectMeta: metav1.ObjectMeta{Name: "widgets.example.com"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "example.com",
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "widgets", Kind: "Widget", ShortNames: []string{"wd"}, Categories: []string{"all"}},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{
				{Name: "v1", Served: true, Storage: true, Schema: schema, Subresources: subs, AdditionalPrinterColumns: cols,
					SelectableFields: []apiextensionsv1.SelectableField{{JSONPath: ".spec.color"}}},
				{Name: "v1beta1", Served: true, Schema: schema, Subresources: subs, Deprecated: true},
			},
		},
	}
}

// createCRD creates crd and waits, by watching it, until it is Established.
func (e *testEnv) createCRD(crd *apiextensionsv1.CustomResourceDefinition) *apiextensionsv1.CustomResourceDefinition {
	e.t.Helper()
	e.mustCreate(crdPath, crd, nil)
	return e.waitCRD(crd.Name, func(c *apiextensionsv1.CustomResourceDefinition) bool {
		return apiextensions.IsConditionTrue(c, apiextensionsv1.Established)
	})
}

// waitCRD watches the CRD name until cond holds, or fails the test after 10s.
func (e *testEnv) waitCRD(name string, cond func(*apiextensionsv1.CustomResourceDefinition) bool) *apiextensionsv1.CustomResourceDefinition {
	e.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.http.URL+crdPath+"?watch=true&fieldSelector=metadata.name="+name, nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	var last string
	for sc.Scan() {
		var ev struct {
			Type   string                                   `json:"type"`
			Object apiextensionsv1.CustomResourceDefinition `json:"object"`
		}
		last = sc.Text()
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			e.t.Fatal(err)
		}
		if ev.Type != "DELETED" && cond(&ev.Object) {
			return &ev.Object
		}
	}
	e.t.Fatalf("CRD %s: condition not met; last event %s", name, last)
	return nil
}

func widget(name string, replicas int64, color string) map[string]any {
	return map[string]any{
		"apiVersion": "example.com/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name},
		"spec":     map[string]any{"replicas": replicas, "color": color},
	}
}

const widgetsPath = "/apis/example.com/v1/namespaces/default/widgets"

func TestCRDStatusAndDiscovery(t *testing.T) {
	e := newTestEnv(t)
	e.runControllers()
	crd := e.createCRD(testCRD())
	if got := crd.Status.AcceptedNames; got.Kind != "Widget" || got.ListKind != "WidgetList" || got.Singular != "widget" || got.Plural != "widgets" {
		t.Errorf("acceptedNames = %+v", got)
	}
	if !apiextensions.IsConditionTrue(crd, apiextensionsv1.NamesAccepted) {
		t.Errorf("NamesAccepted not True: %+v", crd.Status.Conditions)
	}
	if got := crd.Status.StoredVersions; len(got) != 1 || got[0] != "v1" {
		t.Errorf("storedVersions = %v", got)
	}

	var group metav1.APIGroup
	e.get("/apis/example.com").decode(t, &group)
	if group.PreferredVersion.Version != "v1" || len(group.Versions) != 2 {
		t.Errorf("group = %+v", group)
	}
	var list metav1.APIResourceList
	e.get("/apis/example.com/v1beta1").decode(t, &list)
	found := map[string]metav1.APIResource{}
	for _, r := range list.APIResources {
		found[r.Name] = r
	}
	if r := found["widgets"]; r.Kind != "Widget" || !r.Namespaced || len(r.ShortNames) != 1 || r.Categories[0] != "all" {
		t.Errorf("widgets in discovery = %+v", r)
	}
	if _, ok := found["widgets/status"]; !ok {
		t.Errorf("no widgets/status in %v", found)
	}
	if r := found["widgets/scale"]; r.Kind != "Scale" || r.Group != "autoscaling" {
		t.Errorf("widgets/scale = %+v", r)
	}
}

func TestCustomResourceCRUD(t *testing.T) {
	e := newTestEnv(t)
	e.runControllers()
	e.createCRD(testCRD())

	obj := widget("w1", 2, "red")
	obj["status"] = map[string]any{"replicas": int64(9)}
	cr := e.do("POST", widgetsPath, obj)
	if cr.code != 201 {
		t.Fatalf("create: %d %s", cr.code, cr.body)
	}
	created := cr.decodeU(t)
	if created.GetGeneration() != 1 || created.GetUID() == "" || created.GetResourceVersion() == "" {
		t.Errorf("created metadata = %+v", created.Object["metadata"])
	}
	if _, ok := created.Object["status"]; ok {
		t.Errorf("status kept on create with a status subresource: %v", created.Object["status"])
	}

	// Read through the other version: same object, that apiVersion.
	r := e.get("/apis/example.com/v1beta1/namespaces/default/widgets/w1")
	beta := r.decodeU(t)
	if beta.GetAPIVersion() != "example.com/v1beta1" || beta.GetUID() != created.GetUID() {
		t.Errorf("v1beta1 get = %v %v", beta.GetAPIVersion(), beta.GetUID())
	}
	if w := r.header.Get("Warning"); !strings.Contains(w, "example.com/v1beta1 Widget is deprecated") {
		t.Errorf("deprecated version warning = %q", w)
	}

	// A main-resource update changing the spec bumps generation, keeps status.
	upd := created.DeepCopy()
	_ = unstructured.SetNestedField(upd.Object, "blue", "spec", "color")
	upd.Object["status"] = map[string]any{"replicas": int64(5)}
	resp := e.do("PUT", widgetsPath+"/w1", upd.Object)
	if resp.code != 200 {
		t.Fatalf("update: %d %s", resp.code, resp.body)
	}
	updated := resp.decodeU(t)
	if updated.GetGeneration() != 2 {
		t.Errorf("generation after spec change = %d", updated.GetGeneration())
	}
	if _, ok := updated.Object["status"]; ok {
		t.Errorf("main-resource update wrote status: %v", updated.Object["status"])
	}

	// A status write changes status only.
	st := updated.DeepCopy()
	st.Object["status"] = map[string]any{"replicas": int64(2), "selector": "app=w1"}
	_ = unstructured.SetNestedField(st.Object, "green", "spec", "color")
	resp = e.do("PUT", widgetsPath+"/w1/status", st.Object)
	if resp.code != 200 {
		t.Fatalf("status update: %d %s", resp.code, resp.body)
	}
	afterStatus := resp.decodeU(t)
	if c, _, _ := unstructured.NestedString(afterStatus.Object, "spec", "color"); c != "blue" {
		t.Errorf("status write changed spec.color to %q", c)
	}
	if n, _, _ := unstructured.NestedInt64(afterStatus.Object, "status", "replicas"); n != 2 {
		t.Errorf("status.replicas = %d", n)
	}

	// Scale.
	var scale map[string]any
	e.get(widgetsPath+"/w1/scale").decode(t, &scale)
	if spec := scale["spec"].(map[string]any); spec["replicas"] != float64(2) {
		t.Errorf("scale = %v", scale)
	}
	if st := scale["status"].(map[string]any); st["selector"] != "app=w1" {
		t.Errorf("scale status = %v", st)
	}
	resp = e.doType("PATCH", widgetsPath+"/w1/scale", "application/merge-patch+json", `{"spec":{"replicas":7}}`)
	if resp.code != 200 {
		t.Fatalf("scale patch: %d %s", resp.code, resp.body)
	}
	scaled := e.get(widgetsPath + "/w1").decodeU(t)
	if n, _, _ := unstructured.NestedInt64(scaled.Object, "spec", "replicas"); n != 7 {
		t.Errorf("spec.replicas after scale = %d", n)
	}

	// Merge patch works; strategic merge patch is 415.
	resp = e.doType("PATCH", widgetsPath+"/w1", "application/merge-patch+json", `{"metadata":{"labels":{"a":"b"}}}`)
	if resp.code != 200 {
		t.Fatalf("merge patch: %d %s", resp.code, resp.body)
	}
	resp = e.doType("PATCH", widgetsPath+"/w1", "application/strategic-merge-patch+json", `{"metadata":{"labels":{"a":"c"}}}`)
	if resp.code != http.StatusUnsupportedMediaType {
		t.Errorf("strategic merge patch: %d %s", resp.code, resp.body)
	}

	// List: items carry apiVersion and kind; field selector on a selectable field.
	e.mustCreate(widgetsPath, widget("w2", 1, "red"), nil)
	var l unstructured.UnstructuredList
	e.get(widgetsPath+"?fieldSelector=spec.color=red").decode(t, &l)
	if len(l.Items) != 1 || l.Items[0].GetName() != "w2" || l.Items[0].GetAPIVersion() != "example.com/v1" || l.Items[0].GetKind() != "Widget" {
		t.Errorf("list by spec.color=red = %+v", l.Items)
	}
	if l.GetKind() != "WidgetList" {
		t.Errorf("list kind = %q", l.GetKind())
	}
	if r := e.get(widgetsPath + "?fieldSelector=spec.size=1"); r.code != 400 {
		t.Errorf("unknown field selector: %d", r.code)
	}

	// Table with the printer columns.
	var table metav1.Table
	tr := e.doAccept("GET", widgetsPath, "application/json;as=Table;v=v1;g=meta.k8s.io")
	if tr.code != 200 {
		t.Fatalf("table: %d %s", tr.code, tr.body)
	}
	tr.decode(t, &table)
	var names []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "Name,Color,Replicas" || len(table.Rows) != 2 {
		t.Fatalf("table columns %v, %d rows", names, len(table.Rows))
	}
	if table.Rows[0].Cells[0] != "w1" || table.Rows[0].Cells[1] != "blue" || table.Rows[0].Cells[2] != float64(7) {
		t.Errorf("row 0 = %v", table.Rows[0].Cells)
	}

	// Delete.
	if r := e.do("DELETE", widgetsPath+"/w2", nil); r.code != 200 {
		t.Errorf("delete: %d %s", r.code, r.body)
	}
	if r := e.get(widgetsPath + "/w2"); r.code != 404 {
		t.Errorf("get after delete: %d", r.code)
	}
}

func TestCustomResourceBadInput(t *testing.T) {
	e := newTestEnv(t)
	e.runControllers()
	e.createCRD(testCRD())
	for _, tc := range []struct {
		name string
		body string
		code int
	}{
		{"wrong kind", `{"apiVersion":"example.com/v1","kind":"Gadget","metadata":{"name":"x"}}`, 400},
		{"wrong version", `{"apiVersion":"example.com/v2","kind":"Widget","metadata":{"name":"x"}}`, 400},
		{"not JSON", `{"apiVersion":`, 400},
		{"null", `null`, 400},
		{"bad metadata", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":5}}`, 400},
		{"bad name", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"Not_Valid"}}`, 422},
		{"no name", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{}}`, 422},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.doType("POST", widgetsPath, "application/json", tc.body)
			if r.code != tc.code {
				t.Errorf("code %d, want %d: %s", r.code, tc.code, r.body)
			}
		})
	}
	// Strict field validation refuses an unknown metadata field; Warn warns.
	body := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"s","bogus":1}}`
	if r := e.doType("POST", widgetsPath+"?fieldValidation=Strict", "application/json", body); r.code != 400 || !strings.Contains(string(r.body), `unknown field \"metadata.bogus\"`) {
		t.Errorf("strict: %d %s", r.code, r.body)
	}
	r := e.doType("POST", widgetsPath, "application/json", body)
	if r.code != 201 || !strings.Contains(r.header.Get("Warning"), `unknown field \"metadata.bogus\"`) {
		t.Errorf("warn: %d %q", r.code, r.header.Get("Warning"))
	}
	// Cluster-scoped path for a namespaced resource.
	if r := e.get("/apis/example.com/v1/widgets/x"); r.code != 404 {
		t.Errorf("cluster path of a namespaced object: %d", r.code)
	}
}

func TestCRDValidation(t *testing.T) {
	e := newTestEnv(t)
	for _, tc := range []struct {
		name   string
		mutate func(*apiextensionsv1.CustomResourceDefinition)
		field  string
	}{
		{"name mismatch", func(c *apiextensionsv1.CustomResourceDefinition) { c.Name = "gadgets.example.com" }, "metadata.name"},
		{"group without dot", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Name = "widgets.example"
			c.Spec.Group = "example"
		}, "spec.group"},
		{"bad scope", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Scope = "Global" }, "spec.scope"},
		{"two storage versions", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[1].Storage = true }, "spec.versions"},
		{"no versions", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions = nil }, "spec.versions"},
		{"no kind", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Names.Kind = "" }, "spec.names.kind"},
		{"bad plural", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Names.Plural = "Widgets"
			c.Name = "Widgets.example.com"
		}, "spec.names.plural"},
		{"no schema", func(c *apiextensionsv1.CustomResourceDefinition) { c.Spec.Versions[0].Schema = nil }, "spec.versions[0].schema.openAPIV3Schema"},
		{"scale path outside spec", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].Subresources.Scale.SpecReplicasPath = ".status.replicas"
		}, "spec.versions[0].subresources.scale.specReplicasPath"},
		{"bad column type", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].AdditionalPrinterColumns[0].Type = "text"
		}, "spec.versions[0].additionalPrinterColumns[0].type"},
		{"selectable field not in schema", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Versions[0].SelectableFields[0].JSONPath = ".spec.size"
		}, "spec.versions[0].selectableFields[0].jsonPath"},
		{"webhook conversion without webhook", func(c *apiextensionsv1.CustomResourceDefinition) {
			c.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{Strategy: apiextensionsv1.WebhookConverter}
		}, "spec.conversion.webhook"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := testCRD()
			tc.mutate(c)
			r := e.do("POST", crdPath, c)
			if r.code != 422 {
				t.Fatalf("code %d: %s", r.code, r.body)
			}
			var st metav1.Status
			r.decode(t, &st)
			var fields []string
			for _, c := range st.Details.Causes {
				fields = append(fields, c.Field)
			}
			if !strings.Contains(","+strings.Join(fields, ",")+",", ","+tc.field+",") {
				t.Errorf("causes %v do not name %s (%s)", fields, tc.field, st.Message)
			}
		})
	}
	// Group and plural never change; scope does not once established.
	e.runControllers()
	crd := e.createCRD(testCRD())
	crd.Spec.Scope = apiextensionsv1.ClusterScoped
	if r := e.do("PUT", crdPath+"/"+crd.Name, crd); r.code != 422 || !strings.Contains(string(r.body), "spec.scope") {
		t.Errorf("scope change: %d %s", r.code, r.body)
	}
}

func TestCRDNameConflict(t *testing.T) {
	e := newTestEnv(t)
	e.runControllers()
	e.createCRD(testCRD())
	other := testCRD()
	other.Name = "gadgets.example.com"
	other.Spec.Names = apiextensionsv1.CustomResourceDefinitionNames{Plural: "gadgets", Kind: "Widget", ShortNames: []string{"wd"}}
	e.mustCreate(crdPath, other, nil)
	got := e.waitCRD(other.Name, func(c *apiextensionsv1.CustomResourceDefinition) bool {
		return apiextensions.FindCondition(c, apiextensionsv1.NamesAccepted) != nil
	})
	cond := apiextensions.FindCondition(got, apiextensionsv1.NamesAccepted)
	// Each conflict overwrites the reason, as in Kubernetes: the list kind
	// is checked last.
	if cond.Status != apiextensionsv1.ConditionFalse || cond.Reason != "ListKindConflict" || cond.Message != `"WidgetList" is already in use` {
		t.Errorf("NamesAccepted = %+v", cond)
	}
	if apiextensions.IsConditionTrue(got, apiextensionsv1.Established) {
		t.Errorf("conflicting CRD established")
	}
	if r := e.get("/apis/example.com/v1/namespaces/default/gadgets"); r.code != 404 {
		t.Errorf("conflicting CRD served: %d", r.code)
	}
}

func TestCRDDeletion(t *testing.T) {
	e := newTestEnv(t)
	e.runControllers()
	e.createCRD(testCRD())
	e.mustCreate(widgetsPath, widget("w1", 1, "red"), nil)
	held := widget("held", 1, "red")
	held["metadata"].(map[string]any)["finalizers"] = []any{"example.com/hold"}
	e.mustCreate(widgetsPath, held, nil)

	// A watch of the widgets ends once the CRD is gone.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.http.URL+widgetsPath+"?watch=true", nil)
	wresp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer wresp.Body.Close()

	r := e.do("DELETE", crdPath+"/widgets.example.com", nil)
	if r.code != 200 {
		t.Fatalf("delete CRD: %d %s", r.code, r.body)
	}
	var marked apiextensionsv1.CustomResourceDefinition
	r.decode(t, &marked)
	if marked.DeletionTimestamp == nil || !apiextensions.IsConditionTrue(&marked, apiextensionsv1.Terminating) {
		t.Errorf("deleted CRD = %+v", marked.ObjectMeta)
	}
	e.waitCRD("widgets.example.com", func(c *apiextensionsv1.CustomResourceDefinition) bool {
		t := apiextensions.FindCondition(c, apiextensionsv1.Terminating)
		return t != nil && t.Reason == "InstanceDeletionInProgress"
	})
	// The held object waits for its finalizer; creates are refused.
	if r := e.doType("POST", widgetsPath, "application/json", `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"late"}}`); r.code != 405 ||
		!strings.Contains(string(r.body), "create not allowed while custom resource definition is terminating") {
		t.Errorf("create while terminating: %d %s", r.code, r.body)
	}
	if r := e.doType("PATCH", widgetsPath+"/held", "application/merge-patch+json", `{"metadata":{"finalizers":null}}`); r.code != 200 {
		t.Fatalf("drop finalizer: %d %s", r.code, r.body)
	}
	// The cleanup checks again after a second of the server's clock.
	deadline := time.Now().Add(10 * time.Second)
	for e.get(crdPath+"/widgets.example.com").code != 404 {
		if time.Now().After(deadline) {
			t.Fatal("CRD still there")
		}
		e.clock.Step(crdRetryDelay)
		time.Sleep(time.Millisecond) // let the cleanup goroutine see the step
	}
	// The server stops serving them once its watch of CRDs shows the
	// deletion (kube-apiserver's handler follows its CRD informer alike).
	for r := e.get(widgetsPath); r.code != 404; r = e.get(widgetsPath) {
		if time.Now().After(deadline) {
			t.Fatalf("widgets still served: %d", r.code)
		}
		time.Sleep(time.Millisecond) // the server's own watch, not a test goroutine
	}
	// The watch ended.
	sc := bufio.NewScanner(wresp.Body)
	for sc.Scan() {
	}
	if ctx.Err() != nil {
		t.Errorf("watch did not end with the CRD")
	}

	// Created again: fresh and empty.
	e.createCRD(testCRD())
	var l unstructured.UnstructuredList
	e.get(widgetsPath).decode(t, &l)
	if len(l.Items) != 0 {
		t.Errorf("recreated CRD serves %d old objects", len(l.Items))
	}
}

// decodeU decodes an object body keeping integers as int64, as the
// unstructured accessors expect.
func (r response) decodeU(t testing.TB) *unstructured.Unstructured {
	t.Helper()
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(r.body); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
	return u
}

func (e *testEnv) get(path string) response { e.t.Helper(); return e.do("GET", path, nil) }

func (e *testEnv) doType(method, path, contentType, body string) response {
	e.t.Helper()
	return e.do(method, path, body, "Content-Type", contentType)
}

func (e *testEnv) doAccept(method, path, accept string) response {
	e.t.Helper()
	return e.do(method, path, nil, "Accept", accept)
}

func TestCustomResourceWriteOptions(t *testing.T) {
	e := newTestEnv(t)
	e.runControllers()
	e.createCRD(testCRD())
	// dryRun answers as a create would and stores nothing.
	if r := e.do("POST", widgetsPath+"?dryRun=All", widget("dry", 1, "red")); r.code != 201 {
		t.Fatalf("dry run: %d %s", r.code, r.body)
	}
	if r := e.get(widgetsPath + "/dry"); r.code != 404 {
		t.Errorf("dry run stored the object: %d", r.code)
	}
	// A duplicate field is refused with Strict and warned about otherwise.
	dup := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"d"},"spec":{"color":"red","color":"blue"}}`
	if r := e.doType("POST", widgetsPath+"?fieldValidation=Strict", "application/json", dup); r.code != 400 || !strings.Contains(string(r.body), `duplicate field \"spec.color\"`) {
		t.Errorf("strict duplicate: %d %s", r.code, r.body)
	}
	r := e.doType("POST", widgetsPath+"?fieldValidation=Warn", "application/json", dup)
	if r.code != 201 || !strings.Contains(r.header.Get("Warning"), "duplicate field") {
		t.Errorf("warn duplicate: %d %q", r.code, r.header.Get("Warning"))
	}
	// generateName.
	gen := `{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"generateName":"w-"}}`
	r = e.doType("POST", widgetsPath, "application/json", gen)
	if r.code != 201 || !strings.HasPrefix(r.decodeU(t).GetName(), "w-") {
		t.Errorf("generateName: %d %s", r.code, r.body)
	}
	// JSON patch; a patch that breaks the kind is refused and stores nothing.
	e.mustCreate(widgetsPath, widget("p", 1, "red"), nil)
	if r := e.doType("PATCH", widgetsPath+"/p", "application/json-patch+json", `[{"op":"replace","path":"/spec/color","value":"blue"}]`); r.code != 200 {
		t.Fatalf("json patch: %d %s", r.code, r.body)
	}
	if r := e.doType("PATCH", widgetsPath+"/p", "application/json-patch+json", `[{"op":"replace","path":"/kind","value":"Gadget"}]`); r.code != 400 {
		t.Errorf("patch changing kind: %d %s", r.code, r.body)
	}
	if c, _, _ := unstructured.NestedString(e.get(widgetsPath+"/p").decodeU(t).Object, "spec", "color"); c != "blue" {
		t.Errorf("spec.color after patches = %q", c)
	}
	// Finalizers hold a deleted object until they are removed.
	held := widget("f", 1, "red")
	held["metadata"].(map[string]any)["finalizers"] = []any{"example.com/hold"}
	e.mustCreate(widgetsPath, held, nil)
	if r := e.do("DELETE", widgetsPath+"/f", nil); r.code != 200 || r.decodeU(t).GetDeletionTimestamp() == nil {
		t.Fatalf("delete with finalizer: %d %s", r.code, r.body)
	}
	if r := e.doType("PATCH", widgetsPath+"/f", "application/merge-patch+json", `{"metadata":{"finalizers":null}}`); r.code != 200 {
		t.Fatalf("remove finalizer: %d %s", r.code, r.body)
	}
	if r := e.get(widgetsPath + "/f"); r.code != 404 {
		t.Errorf("object with its last finalizer removed: %d", r.code)
	}
}

// schemaCRD is cluster-scoped gizmos.example.com with defaults, an enum,
// bounds and a required field.
const schemaCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"gizmos.example.com"},
"spec":{"group":"example.com","scope":"Cluster","names":{"plural":"gizmos","kind":"Gizmo","listKind":"GizmoCollection"},
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
  "spec":{"type":"object","required":["size"],"properties":{
    "size":{"type":"string","enum":["small","large"]},
    "count":{"type":"integer","minimum":1,"maximum":10,"default":3},
    "labels":{"type":"object","additionalProperties":{"type":"string"}},
    "free":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}}}}}]}}`

func TestCustomResourceSchema(t *testing.T) {
	e := newTestEnv(t)
	e.runControllers()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal([]byte(schemaCRD), &crd); err != nil {
		t.Fatal(err)
	}
	e.createCRD(&crd)
	const path = "/apis/example.com/v1/gizmos"
	gizmo := func(spec string) string {
		return `{"apiVersion":"example.com/v1","kind":"Gizmo","metadata":{"name":"g"},"spec":` + spec + `}`
	}
	for _, tc := range []struct {
		name, spec, msg string
	}{
		{"enum", `{"size":"medium"}`, `spec.size: Unsupported value: \"medium\": supported values: \"small\", \"large\"`},
		{"required", `{}`, `spec.size: Required value`},
		{"type", `{"size":"small","count":"many"}`, `spec.count: Invalid value: \"string\": spec.count in body must be of type integer: \"string\"`},
		{"maximum", `{"size":"small","count":11}`, `spec.count: Invalid value: 11: spec.count in body should be less than or equal to 10`},
		{"map values", `{"size":"small","labels":{"a":1}}`, `spec.labels.a: Invalid value: \"integer\": spec.labels.a in body must be of type string: \"integer\"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.doType("POST", path, "application/json", gizmo(tc.spec))
			if r.code != 422 || !strings.Contains(string(r.body), tc.msg) {
				t.Errorf("%d %s\nwant message %s", r.code, r.body, tc.msg)
			}
		})
	}
	if r := e.get(path + "/g"); r.code != 404 {
		t.Fatalf("an invalid object was stored: %d", r.code)
	}

	// Unknown fields: refused with Strict, pruned with a warning otherwise;
	// preserved where the schema says so. Defaults are filled in.
	body := gizmo(`{"size":"small","extra":1,"free":{"anything":{"goes":true}}}`)
	if r := e.doType("POST", path+"?fieldValidation=Strict", "application/json", body); r.code != 400 || !strings.Contains(string(r.body), `unknown field \"spec.extra\"`) {
		t.Errorf("strict unknown field: %d %s", r.code, r.body)
	}
	r := e.doType("POST", path, "application/json", body)
	if r.code != 201 || !strings.Contains(r.header.Get("Warning"), `unknown field \"spec.extra\"`) {
		t.Fatalf("warn unknown field: %d %q %s", r.code, r.header.Get("Warning"), r.body)
	}
	got := e.get(path + "/g").decodeU(t)
	if _, found, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "extra"); found {
		t.Errorf("spec.extra was stored")
	}
	if v, _, _ := unstructured.NestedBool(got.Object, "spec", "free", "anything", "goes"); !v {
		t.Errorf("preserved field lost: %v", got.Object["spec"])
	}
	if n, _, _ := unstructured.NestedInt64(got.Object, "spec", "count"); n != 3 {
		t.Errorf("default spec.count = %d, want 3", n)
	}
	var gizmos unstructured.UnstructuredList
	if err := gizmos.UnmarshalJSON(e.get(path).body); err != nil || gizmos.GetKind() != "GizmoCollection" {
		t.Errorf("list kind %q (%v), want the CRD's listKind", gizmos.GetKind(), err)
	}
	// An update to an invalid state stores nothing.
	bad := got.DeepCopy()
	_ = unstructured.SetNestedField(bad.Object, "huge", "spec", "size")
	if r := e.do("PUT", path+"/g", bad.Object); r.code != 422 {
		t.Errorf("invalid update: %d %s", r.code, r.body)
	}
	if r := e.doType("PATCH", path+"/g", "application/merge-patch+json", `{"spec":{"count":0}}`); r.code != 422 {
		t.Errorf("invalid patch: %d %s", r.code, r.body)
	}
	if after := e.get(path + "/g").decodeU(t); after.GetResourceVersion() != got.GetResourceVersion() {
		t.Errorf("refused writes changed the object")
	}

	// A default added to the schema later shows on reads of objects
	// stored before it, as Kubernetes defaults what it reads from storage.
	var stored apiextensionsv1.CustomResourceDefinition
	e.get(crdPath+"/gizmos.example.com").decode(t, &stored)
	spec := stored.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"]
	spec.Properties["tier"] = apiextensionsv1.JSONSchemaProps{Type: "string", Default: &apiextensionsv1.JSON{Raw: []byte(`"gold"`)}}
	stored.Spec.Versions[0].Schema.OpenAPIV3Schema.Properties["spec"] = spec
	if r := e.do("PUT", crdPath+"/gizmos.example.com", &stored); r.code != 200 {
		t.Fatalf("update CRD: %d %s", r.code, r.body)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		tier, _, _ := unstructured.NestedString(e.get(path+"/g").decodeU(t).Object, "spec", "tier")
		if tier == "gold" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("default of a new field not applied on read: %q", tier)
		}
		time.Sleep(time.Millisecond) // the server's CRD watch brings the change
	}

	// A schema with a format Kubernetes does not check is accepted with a warning.
	withFormat := strings.Replace(schemaCRD, `"size":{"type":"string",`, `"size":{"type":"string","format":"colour",`, 1)
	withFormat = strings.Replace(withFormat, "gizmos", "gadgets", -1)
	withFormat = strings.Replace(withFormat, `"kind":"Gizmo"`, `"kind":"Gadget"`, 1)
	if r := e.doType("POST", crdPath, "application/json", withFormat); r.code != 201 || r.header.Get("Warning") != `299 - "unrecognized format \"colour\""` {
		t.Errorf("CRD with an unknown format: %d %q %s", r.code, r.header.Get("Warning"), r.body)
	}

	// A CRD with a schema Kubernetes refuses is 422 with its reasons.
	nonStructural := strings.Replace(schemaCRD, `"count":{"type":"integer",`, `"count":{`, 1)
	nonStructural = strings.Replace(nonStructural, "gizmos", "widgets2", -1)
	nonStructural = strings.Replace(nonStructural, `"kind":"Gizmo"`, `"kind":"Widget2"`, 1)
	r = e.doType("POST", crdPath, "application/json", nonStructural)
	if r.code != 422 || !strings.Contains(string(r.body), "spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[count].type: Required value: must not be empty for specified object fields") {
		t.Errorf("non-structural CRD: %d %s", r.code, r.body)
	}
}

// celCRD is scalers.example.com with x-kubernetes-validations rules.
const celCRD = `{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition",
"metadata":{"name":"scalers.example.com"},
"spec":{"group":"example.com","scope":"Namespaced","names":{"plural":"scalers","kind":"Scaler"},
"versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","properties":{
  "spec":{"type":"object",
    "x-kubernetes-validations":[
      {"rule":"self.minReplicas <= self.maxReplicas","message":"minReplicas must not exceed maxReplicas"},
      {"rule":"!has(self.target) || self.target.startsWith('deploy/')","messageExpression":"'target ' + self.target + ' is not a deployment'","reason":"FieldValueForbidden","fieldPath":".target"}],
    "properties":{
      "minReplicas":{"type":"integer"},"maxReplicas":{"type":"integer"},
      "target":{"type":"string","maxLength":64},
      "mode":{"type":"string","x-kubernetes-validations":[{"rule":"self == oldSelf","message":"mode is immutable"}]}}}}}}}]}}`

func TestCustomResourceCELRules(t *testing.T) {
	e := newTestEnv(t)
	e.runControllers()
	var crd apiextensionsv1.CustomResourceDefinition
	if err := json.Unmarshal([]byte(celCRD), &crd); err != nil {
		t.Fatal(err)
	}
	e.createCRD(&crd)
	const path = "/apis/example.com/v1/namespaces/default/scalers"
	scaler := func(name, spec string) string {
		return `{"apiVersion":"example.com/v1","kind":"Scaler","metadata":{"name":"` + name + `"},"spec":` + spec + `}`
	}
	for _, tc := range []struct{ name, spec, msg string }{
		{"message", `{"minReplicas":5,"maxReplicas":2}`, `spec: Invalid value: minReplicas must not exceed maxReplicas`},
		{"messageExpression, reason and fieldPath", `{"minReplicas":1,"maxReplicas":2,"target":"sts/x"}`, `spec.target: Forbidden: target sts/x is not a deployment`},
		{"type error first", `{"minReplicas":"one","maxReplicas":2}`, `some validation rules were not checked because the object was invalid; correct the existing errors to complete validation`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := e.doType("POST", path, "application/json", scaler("bad", tc.spec))
			if r.code != 422 || !strings.Contains(string(r.body), tc.msg) {
				t.Errorf("%d %s\nwant message %s", r.code, r.body, tc.msg)
			}
		})
	}
	// A transition rule: mode may be set on create, never changed.
	if r := e.doType("POST", path, "application/json", scaler("s", `{"minReplicas":1,"maxReplicas":2,"mode":"fast","target":"deploy/web"}`)); r.code != 201 {
		t.Fatalf("valid create: %d %s", r.code, r.body)
	}
	r := e.doType("PATCH", path+"/s", "application/merge-patch+json", `{"spec":{"mode":"slow"}}`)
	if r.code != 422 || !strings.Contains(string(r.body), `spec.mode: Invalid value: \"slow\": mode is immutable`) {
		t.Errorf("changing an immutable field: %d %s", r.code, r.body)
	}
	if r := e.doType("PATCH", path+"/s", "application/merge-patch+json", `{"spec":{"maxReplicas":3}}`); r.code != 200 {
		t.Errorf("a valid change: %d %s", r.code, r.body)
	}

	// CRD writes whose rules do not compile, or reference unknown fields,
	// are refused with the compiler's message.
	for _, tc := range []struct{ name, rule, msg string }{
		{"syntax", `self.minReplicas <=`, "compilation failed"},
		{"unknown field", `self.nope > 0`, "undefined field 'nope'"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bad := strings.Replace(celCRD, `self.minReplicas <= self.maxReplicas`, tc.rule, 1)
			bad = strings.Replace(bad, "scalers", "scalers2", -1)
			bad = strings.Replace(bad, `"kind":"Scaler"`, `"kind":"Scaler2"`, 1)
			r := e.doType("POST", crdPath, "application/json", bad)
			if r.code != 422 || !strings.Contains(string(r.body), "x-kubernetes-validations[0].rule") || !strings.Contains(string(r.body), tc.msg) {
				t.Errorf("%d %s", r.code, r.body)
			}
		})
	}
}

// conversionWebhook is an HTTPS conversion webhook for widgets that
// renames spec.color (v1) to spec.colour (v1beta1) and back.
func conversionWebhook(t *testing.T) (*httptest.Server, *atomic.Int64) {
	var calls atomic.Int64
	hs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		var review apiextensionsv1.ConversionReview
		if err := json.NewDecoder(r.Body).Decode(&review); err != nil || review.Request == nil {
			http.Error(w, "bad review", 400)
			return
		}
		resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
		for _, raw := range review.Request.Objects {
			u := &unstructured.Unstructured{}
			if err := u.UnmarshalJSON(raw.Raw); err != nil {
				http.Error(w, err.Error(), 400)
				return
			}
			from, to := "colour", "color"
			if review.Request.DesiredAPIVersion == "example.com/v1beta1" {
				from, to = to, from
			}
			if v, ok, _ := unstructured.NestedString(u.Object, "spec", from); ok {
				unstructured.RemoveNestedField(u.Object, "spec", from)
				_ = unstructured.SetNestedField(u.Object, v, "spec", to)
			}
			u.SetAPIVersion(review.Request.DesiredAPIVersion)
			data, _ := u.MarshalJSON()
			resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: data})
		}
		review.Response, review.Request = resp, nil
		_ = json.NewEncoder(w).Encode(&review)
	}))
	t.Cleanup(hs.Close)
	return hs, &calls
}

func TestCustomResourceConversionWebhook(t *testing.T) {
	e := newTestEnv(t)
	e.runControllers()
	hook, calls := conversionWebhook(t)
	crd := testCRD()
	beta := &crd.Spec.Versions[1]
	beta.Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr(true)}}
	beta.Deprecated = false
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})
	crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
		Strategy: apiextensionsv1.WebhookConverter,
		Webhook: &apiextensionsv1.WebhookConversion{
			ConversionReviewVersions: []string{"v1"},
			ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr(hook.URL + "/convert"), CABundle: caPEM},
		},
	}
	e.createCRD(crd)
	const betaPath = "/apis/example.com/v1beta1/namespaces/default/widgets"
	body := `{"apiVersion":"example.com/v1beta1","kind":"Widget","metadata":{"name":"w"},"spec":{"colour":"teal","replicas":1}}`
	r := e.doType("POST", betaPath, "application/json", body)
	if r.code != 201 {
		t.Fatalf("create through v1beta1: %d %s", r.code, r.body)
	}
	if c, _, _ := unstructured.NestedString(r.decodeU(t).Object, "spec", "colour"); c != "teal" {
		t.Errorf("create answered %s", r.body)
	}
	// Stored in v1, converted by the webhook.
	v1 := e.get(widgetsPath + "/w").decodeU(t)
	if c, _, _ := unstructured.NestedString(v1.Object, "spec", "color"); c != "teal" || v1.GetAPIVersion() != "example.com/v1" {
		t.Errorf("read through v1: %v", v1.Object)
	}
	var list unstructured.UnstructuredList
	if err := list.UnmarshalJSON(e.get(betaPath).body); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 1 || list.Items[0].GetAPIVersion() != "example.com/v1beta1" {
		t.Fatalf("list through v1beta1: %+v", list.Items)
	}
	if c, _, _ := unstructured.NestedString(list.Items[0].Object, "spec", "colour"); c != "teal" {
		t.Errorf("listed through v1beta1: %v", list.Items[0].Object)
	}
	if r := e.doType("PATCH", betaPath+"/w", "application/merge-patch+json", `{"spec":{"colour":"navy"}}`); r.code != 200 {
		t.Fatalf("patch through v1beta1: %d %s", r.code, r.body)
	}
	if c, _, _ := unstructured.NestedString(e.get(widgetsPath+"/w").decodeU(t).Object, "spec", "color"); c != "navy" {
		t.Errorf("patch through v1beta1 not stored as v1")
	}
	if calls.Load() == 0 {
		t.Fatal("the webhook was never called")
	}

	// The webhook down: requests needing it fail as in Kubernetes; the
	// storage version still works.
	hook.Close()
	r = e.get(betaPath + "/w")
	if r.code != 500 || !strings.Contains(string(r.body), "conversion webhook for example.com/v1beta1, Kind=Widget failed") {
		t.Errorf("read with the webhook down: %d %s", r.code, r.body)
	}
	if r := e.doType("POST", betaPath, "application/json", strings.Replace(body, `"w"`, `"w2"`, 1)); r.code != 500 {
		t.Errorf("create with the webhook down: %d %s", r.code, r.body)
	}
	if r := e.get(widgetsPath + "/w2"); r.code != 404 {
		t.Errorf("an unconverted object was stored: %d", r.code)
	}
	if r := e.get(widgetsPath + "/w"); r.code != 200 {
		t.Errorf("storage version read with the webhook down: %d %s", r.code, r.body)
	}
}

// TestCRDHostileInput posts randomly damaged CRDs and custom resources:
// every answer is a client error or a success, never a 5xx, and the
// server keeps serving.
func TestCRDHostileInput(t *testing.T) {
	e := newTestEnv(t)
	e.runControllers()
	e.createCRD(testCRD())
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := mrand.New(mrand.NewPCG(seed, 1))
	crdDoc, _ := json.Marshal(testCRD())
	var crdValue map[string]any
	_ = json.Unmarshal(crdDoc, &crdValue)
	crValue := widget("h", 1, "red")
	crValue["status"] = map[string]any{"replicas": int64(1), "selector": "a=b"}
	replacements := []any{nil, "", "x", -1, 1e300, true, []any{}, []any{nil}, map[string]any{}, map[string]any{"type": "object"}, strings.Repeat("a", 300), "v1", ".spec.x", "Namespaced"}
	var mutate func(v any, depth int) any
	mutate = func(v any, depth int) any {
		if r.IntN(8) == 0 {
			return replacements[r.IntN(len(replacements))]
		}
		switch t := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(t))
			for k, x := range t {
				if r.IntN(12) == 0 {
					continue
				}
				out[k] = mutate(x, depth+1)
			}
			if r.IntN(10) == 0 {
				out["x-kubernetes-"+[]string{"int-or-string", "list-type", "embedded-resource", "preserve-unknown-fields", "validations"}[r.IntN(5)]] = replacements[r.IntN(len(replacements))]
			}
			return out
		case []any:
			out := make([]any, 0, len(t))
			for _, x := range t {
				out = append(out, mutate(x, depth+1))
			}
			return out
		}
		return v
	}
	for i := range 300 {
		var path string
		var body any
		if i%2 == 0 {
			path, body = crdPath, mutate(crdValue, 0)
		} else {
			path, body = widgetsPath, mutate(crValue, 0)
		}
		method := []string{"POST", "PUT", "PATCH"}[r.IntN(3)]
		target := path
		if method != "POST" {
			if i%2 == 0 {
				target += "/widgets.example.com"
			} else {
				target += "/h"
			}
		}
		headers := []string{}
		if method == "PATCH" {
			headers = []string{"Content-Type", "application/merge-patch+json"}
		}
		resp := e.do(method, target, body, headers...)
		if resp.code >= 500 {
			t.Fatalf("%s %s answered %d: %s\nbody: %v", method, target, resp.code, resp.body, body)
		}
	}
	if resp := e.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions"); resp.code != 200 {
		t.Fatalf("server unhealthy after the run: %d", resp.code)
	}
}

func TestCustomResourceWatchBookmarks(t *testing.T) {
	e := newTestEnv(t)
	e.runControllers()
	e.createCRD(testCRD())
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "GET", e.http.URL+widgetsPath+"?watch=true&sendInitialEvents=true&allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var ev struct {
			Type   string         `json:"type"`
			Object map[string]any `json:"object"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "BOOKMARK" {
			if ev.Object["kind"] != "Widget" || ev.Object["apiVersion"] != "example.com/v1" {
				t.Errorf("bookmark %v", ev.Object)
			}
			return
		}
	}
	t.Fatal("no bookmark")
}
