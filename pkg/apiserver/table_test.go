package apiserver

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// kubectlGetAccept is what kubectl get sends.
const kubectlGetAccept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"

func columnNames(tb *metav1.Table) string {
	var names []string
	for _, c := range tb.ColumnDefinitions {
		if c.Priority == 0 {
			names = append(names, c.Name)
		}
	}
	return strings.Join(names, " ")
}

func TestTables(t *testing.T) {
	e := newTestEnv(t)
	e.mustCreate(podPath("default", ""), testPod("p", nil), nil)
	e.mustCreate(deployPath("default", ""), testDeployment("d", 2), nil)
	e.clock.Step(90 * time.Second)
	for _, tc := range []struct {
		path, columns string
		rows          int
	}{
		{podPath("default", ""), "Name Ready Status Restarts Age", 1},
		{podPath("default", "p"), "Name Ready Status Restarts Age", 1},
		{deployPath("default", ""), "Name Ready Up-to-date Available Age", 1},
		{"/apis/apps/v1/namespaces/default/replicasets", "Name Desired Current Ready Age", 0},
	} {
		t.Run(tc.path, func(t *testing.T) {
			r := e.do("GET", tc.path, nil, "Accept", kubectlGetAccept)
			r.expect(t, 200, "")
			var tb metav1.Table
			r.decode(t, &tb)
			if tb.Kind != "Table" || tb.APIVersion != "meta.k8s.io/v1" {
				t.Fatalf("type %+v", tb.TypeMeta)
			}
			if got := columnNames(&tb); !strings.EqualFold(got, tc.columns) {
				t.Errorf("columns %q, want %q", got, tc.columns)
			}
			if len(tb.Rows) != tc.rows {
				t.Fatalf("%d rows", len(tb.Rows))
			}
			if tc.rows > 0 && tb.Rows[0].Cells[len(tb.ColumnDefinitions)-1] == nil {
				t.Errorf("row %+v", tb.Rows[0].Cells)
			}
		})
	}
	// Plain JSON when Table is not asked for; 406 when only Table of an
	// unknown version is.
	r := e.do("GET", podPath("default", ""), nil, "Accept", "application/json")
	if !strings.Contains(string(r.body), `"kind":"PodList"`) {
		t.Errorf("plain list: %s", r.body)
	}
	e.do("GET", podPath("default", ""), nil, "Accept", "application/json;as=Table;v=v9;g=meta.k8s.io").expect(t, 406, metav1.StatusReasonNotAcceptable)
}

func TestTableWatch(t *testing.T) {
	e := newTestEnv(t)
	rv := listRV(t, e, podPath("default", ""))
	w := e.watch(podPath("default", "")+"?watch=true&resourceVersion="+rv, "Accept", kubectlGetAccept)
	e.mustCreate(podPath("default", ""), testPod("p", nil), nil)
	ev := w.next(t)
	var tb metav1.Table
	if err := json.Unmarshal(ev.Object, &tb); err != nil {
		t.Fatal(err)
	}
	if ev.Type != "ADDED" || tb.Kind != "Table" || len(tb.Rows) != 1 || tb.Rows[0].Cells[0] != "p" {
		t.Fatalf("event %s %s", ev.Type, ev.Object)
	}
}
