package schema

import (
	"testing"
)

const benchObject = `{
  "apiVersion": "example.com/v1", "kind": "Workload", "metadata": {"name": "w"},
  "spec": {
    "resources": {"limits": {"cpu": "500m", "memory": 1024}},
    "containers": [
      {"name": "a", "image": "img", "ports": [{"containerPort": 80}, {"containerPort": 443}], "probe": {"port": "http"}},
      {"name": "b", "image": "img", "ports": [{"containerPort": 8080, "protocol": "UDP"}]}
    ],
    "claimTemplate": {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"}, "spec": {"x": 1}},
    "unknown": 1
  },
  "status": {"anything": [1, "two"]}
}`

func BenchmarkPruneDefault(b *testing.B) {
	ss := structural(b, operatorSchema)
	for b.Loop() {
		b.StopTimer()
		obj := object(b, benchObject)
		b.StartTimer()
		Prune(obj, ss, true)
		Default(obj, ss)
	}
}

func BenchmarkValidate(b *testing.B) {
	s := props(b, operatorSchema)
	ss := structural(b, operatorSchema)
	v, err := NewValidator(s)
	if err != nil {
		b.Fatal(err)
	}
	obj := object(b, benchObject)
	Prune(obj, ss, true)
	Default(obj, ss)
	b.ReportAllocs()
	for b.Loop() {
		if errs := v.Validate(nil, obj); len(errs) != 0 {
			b.Fatal(errs)
		}
	}
}
