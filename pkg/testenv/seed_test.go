package testenv

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/google/go-cmp/cmp"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/registry"
)

func TestWithObjects(t *testing.T) {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "team"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning},
	}
	node := &corev1.Node{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Node"}, ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	cm := configMap("", "in-default", map[string]string{"a": "b"})
	// The namespace comes last but is created first.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "team"}}
	before := pod.DeepCopy()
	env := Start(t, WithObjects(pod, node, cm, ns))
	if !cmp.Equal(before, pod) {
		t.Errorf("WithObjects changed its argument: %s", cmp.Diff(before, pod))
	}
	ctx := context.Background()
	got, err := client.NewResource(env.Client, client.Pods).Namespace("team").Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Status.Phase != corev1.PodRunning || got.Spec.Containers[0].Image != "busybox" {
		t.Errorf("seeded pod: phase %q, spec %+v", got.Status.Phase, got.Spec)
	}
	if _, err := client.NewResource(env.Client, client.Nodes).Get(ctx, "n1", metav1.GetOptions{}); err != nil {
		t.Errorf("node: %v", err)
	}
	gotCM, err := client.NewResource(env.Client, client.ConfigMaps).Namespace("default").Get(ctx, "in-default", metav1.GetOptions{})
	if err != nil || gotCM.Data["a"] != "b" {
		t.Errorf("configmap in default: %v, %v", gotCM, err)
	}
}

func TestWithObjectsFromDir(t *testing.T) {
	env := Start(t, WithObjectsFromDir("testdata/seed"))
	ctx := context.Background()
	dep, err := client.NewResource(env.Client, client.Deployments).Namespace("shop").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *dep.Spec.Replicas != 2 || dep.Status.ReadyReplicas != 1 {
		t.Errorf("deployment: replicas %d, status %+v", *dep.Spec.Replicas, dep.Status)
	}
	cm, err := client.NewResource(env.Client, client.ConfigMaps).Namespace("shop").Get(ctx, "settings", metav1.GetOptions{})
	if err != nil || cm.Data["color"] != "blue" {
		t.Errorf("configmap from a List: %v, %v", cm, err)
	}
	if _, err := client.NewResource(env.Client, client.Nodes).Get(ctx, "node-1", metav1.GetOptions{}); err != nil {
		t.Errorf("node from a List: %v", err)
	}
	sec, err := client.NewResource(env.Client, client.Secrets).Namespace("default").Get(ctx, "token", metav1.GetOptions{})
	if err != nil || string(sec.Data["password"]) != "hunter2" {
		t.Errorf("secret from JSON: %v, %v", sec, err)
	}
}

// unserved is a type the API server does not serve.
type unserved struct {
	metav1.TypeMeta
	metav1.ObjectMeta
}

func (u *unserved) DeepCopyObject() runtime.Object { c := *u; return &c }

func TestSeedErrors(t *testing.T) {
	dir := func(files map[string]string) string {
		d := t.TempDir()
		for name, content := range files {
			if err := os.WriteFile(filepath.Join(d, name), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	for _, tc := range []struct {
		name string
		opt  Option
		want []string
	}{
		{"nil object", WithObjects((*corev1.Pod)(nil)), []string{"WithObjects argument 1", "nil object"}},
		{"unserved type", WithObjects(&unserved{ObjectMeta: metav1.ObjectMeta{Name: "x"}}), []string{"*testenv.unserved is not a type the API server serves", "v1 ConfigMap"}},
		{"unserved kind", WithObjects(&unserved{TypeMeta: metav1.TypeMeta{APIVersion: "example.com/v1", Kind: "Widget"}}), []string{"kind example.com/v1 Widget is not served"}},
		{"missing namespace", WithObjects(configMap("nowhere", "x", nil)), []string{"ConfigMap nowhere/x", "not found"}},
		{"invalid object", WithObjects(configMap("default", "Not_Valid", nil)), []string{"ConfigMap default/Not_Valid", "Invalid"}},
		{"duplicate", WithObjects(configMap("default", "x", nil), configMap("default", "x", nil)), []string{"WithObjects argument 2", "already exists"}},
		{"missing dir", WithObjectsFromDir(filepath.Join(t.TempDir(), "absent")), []string{"absent", "no such file"}},
		{"bad yaml", WithObjectsFromDir(dir(map[string]string{"a.yaml": "kind: [unclosed"})), []string{"a.yaml, document 1"}},
		{"no kind", WithObjectsFromDir(dir(map[string]string{"a.yaml": "---\napiVersion: v1\nmetadata: {name: x}\n"})), []string{"a.yaml, document 2: apiVersion and kind are required"}},
		{"not an object", WithObjectsFromDir(dir(map[string]string{"a.yaml": "- 1\n- 2\n"})), []string{"a.yaml, document 1: not an object"}},
		{"bad list item", WithObjectsFromDir(dir(map[string]string{"a.yaml": "apiVersion: v1\nkind: List\nitems: [3]\n"})), []string{"a.yaml, document 1, item 1: not an object"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(t)
			inGoroutine(func() { Start(rec, tc.opt) })
			rec.runCleanups()
			got := rec.allErrors()
			for _, w := range tc.want {
				if !strings.Contains(got, w) {
					t.Errorf("error %q lacks %q", got, w)
				}
			}
		})
	}
}

func TestSplitYAML(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"one", "a: 1\n", []string{"a: 1\n"}},
		{"two", "a: 1\n---\nb: 2\n", []string{"a: 1\n", "b: 2\n"}},
		{"leading separator", "---\na: 1\n", []string{"", "a: 1\n"}},
		{"separator with comment and CRLF", "a: 1\r\n--- # next\r\nb: 2\r\n", []string{"a: 1\n", "b: 2\n"}},
		{"dashes inside a value are not separators", "a: |\n  ---x\n", []string{"a: |\n  ---x\n"}},
		{"no final newline", "a: 1", []string{"a: 1\n"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			for _, d := range splitYAML([]byte(tc.in)) {
				got = append(got, string(d))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("splitYAML(%q) (-want +got):\n%s", tc.in, diff)
			}
		})
	}
}

// FuzzSeedsFromYAML checks that parsing never panics and that every seed
// it returns names a served resource and carries its apiVersion and kind.
func FuzzSeedsFromYAML(f *testing.F) {
	for _, p := range []string{"testdata/seed/app.yaml", "testdata/seed/nested/list.yml", "testdata/seed/secret.json"} {
		data, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte("---\n---\n"))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems: [{apiVersion: v1, kind: Pod}]"))
	resources := registry.Builtin()
	f.Fuzz(func(t *testing.T, data []byte) {
		seeds, err := seedsFromYAML("f.yaml", data, resources)
		if err != nil {
			return
		}
		for _, s := range seeds {
			if s.obj["kind"] != s.info.GVK.Kind || s.obj["apiVersion"] != s.info.GVK.GroupVersion().String() {
				t.Errorf("seed %s: object %v/%v for resource %s", s.source, s.obj["apiVersion"], s.obj["kind"], s.info.GVK)
			}
		}
	})
}
