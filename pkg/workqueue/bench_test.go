package workqueue

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

// Hot-path benchmarks of the queue alone; bench/workqueue compares the
// same workloads with client-go and controller-runtime.

func benchKeys(n int) []string {
	keys := make([]string, n)
	for i := range keys {
		keys[i] = fmt.Sprintf("default/pod-%06d", i)
	}
	return keys
}

func BenchmarkAddGetDone(b *testing.B) {
	keys := benchKeys(1 << 16)
	for _, g := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("g=%d", g), func(b *testing.B) {
			b.ReportAllocs()
			q, err := New[string](Config{})
			mustNoErr(b, err)
			defer q.ShutDown()
			var wg sync.WaitGroup
			span := len(keys) / g
			b.ResetTimer()
			for p := range g {
				own := keys[p*span : (p+1)*span]
				wg.Go(func() {
					for i := range b.N / g {
						q.Add(own[i%len(own)])
						item, _ := q.Get()
						q.Done(item)
					}
				})
			}
			wg.Wait()
		})
	}
}

func BenchmarkAddDuplicate(b *testing.B) {
	b.ReportAllocs()
	q, err := New[string](Config{})
	mustNoErr(b, err)
	defer q.ShutDown()
	q.Add("default/pod")
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			q.Add("default/pod")
		}
	})
}

func BenchmarkPriorityAddGetDone(b *testing.B) {
	b.ReportAllocs()
	keys := benchKeys(1 << 16)
	q, err := NewPriority(PriorityConfig[string]{})
	mustNoErr(b, err)
	defer q.ShutDown()
	b.ResetTimer()
	for i := range b.N {
		q.AddWithOpts(AddOpts{Priority: i % 3}, keys[i%len(keys)])
		item, _, _ := q.GetWithPriority()
		q.Done(item)
	}
}

func BenchmarkAddAfter(b *testing.B) {
	b.ReportAllocs()
	keys := benchKeys(1024)
	q, err := NewDelaying[string](Config{})
	mustNoErr(b, err)
	defer q.ShutDown()
	b.ResetTimer()
	for i := range b.N {
		q.AddAfter(keys[i%len(keys)], time.Hour+time.Duration(i%7)*time.Second)
	}
}
