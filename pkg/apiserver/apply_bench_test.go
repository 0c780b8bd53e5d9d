package apiserver

import (
	"encoding/json"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// BenchmarkDeploymentWrites measures, on one Deployment, a PUT that changes
// its replicas, a server-side apply that does the same, and the field
// tracking inside such a PUT on its own (the managedFields work every write
// pays), so that their ratio is the cost of field management:
//
//	go test -run '^$' -bench BenchmarkDeploymentWrites -benchmem ./pkg/apiserver/
func BenchmarkDeploymentWrites(b *testing.B) {
	e, c := benchEnv(b)
	d := testDeployment("d", 1)
	e.mustCreate(deployPath("default", ""), d, nil)
	url := e.http.URL + deployPath("default", "d")

	b.Run("update", func(b *testing.B) {
		var cur appsv1.Deployment
		e.do("GET", deployPath("default", "d"), nil).decode(b, &cur)
		cur.ResourceVersion = ""
		b.ReportAllocs()
		for i := range b.N {
			r := int32(i%5 + 1)
			cur.Spec.Replicas = &r
			body, _ := json.Marshal(&cur)
			benchDo(b, c, "PUT", url+"?fieldManager=bench", body, 200)
		}
	})
	b.Run("apply", func(b *testing.B) {
		b.ReportAllocs()
		for i := range b.N {
			body := fmt.Sprintf(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":%d}}`, i%5+1)
			benchDoType(b, c, "PATCH", url+"?fieldManager=applier&force=true", applyType, []byte(body), 200)
		}
	})
	b.Run("tracking", func(b *testing.B) {
		res := e.server.lookup(appsv1.SchemeGroupVersion.WithResource("deployments"))
		var live appsv1.Deployment
		e.do("GET", deployPath("default", "d"), nil).decode(b, &live)
		fm := e.server.fieldManager(res, "")
		b.ReportAllocs()
		for i := range b.N {
			next := live.DeepCopy()
			r := int32(i%5 + 7)
			next.Spec.Replicas = &r
			var obj runtime.Object = next
			_ = fm.Update(&live, obj, "bench")
		}
	})
}
