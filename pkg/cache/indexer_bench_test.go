package cache_test

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func BenchmarkIndexer(b *testing.B) {
	x := newIndexer(b)
	const n = 10000
	for i := range n {
		if err := x.Add(pod(fmt.Sprint("ns-", i%10), fmt.Sprint("p", i), "1")); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("GetByKey", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			if _, ok := x.GetByKey("ns-3/p3"); !ok {
				b.Fatal("missing")
			}
		}
	})
	b.Run("Update", func(b *testing.B) {
		b.ReportAllocs()
		p := pod("ns-3", "p3", "2")
		for b.Loop() {
			_ = x.Update(p)
		}
	})
	b.Run("List", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if len(x.List()) != n {
				b.Fatal("short list")
			}
		}
	})
	b.Run("ByNamespace", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			l, _ := x.ByIndex("namespace", "ns-3")
			if len(l) != n/10 {
				b.Fatal("short list")
			}
		}
	})
	_ = corev1.Pod{}
}
