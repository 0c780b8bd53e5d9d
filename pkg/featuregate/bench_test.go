package featuregate

import (
	"fmt"
	"testing"
)

// benchRegistry holds n alpha features plus the test features.
func benchRegistry(b *testing.B, n int) *Registry {
	r := newRegistry(b, v("1.2"), nil)
	m := map[Feature]FeatureSpec{}
	for i := range n {
		m[Feature(fmt.Sprintf("Feature%03d", i))] = FeatureSpec{PreRelease: Alpha}
	}
	if err := r.Add(m); err != nil {
		b.Fatal(err)
	}
	if err := r.Set("AllAlpha=true,BetaOn=false"); err != nil {
		b.Fatal(err)
	}
	return r
}

func BenchmarkEnabled(b *testing.B) {
	for _, n := range []int{10, 200} {
		r := benchRegistry(b, n)
		for name, g := range map[string]Gates{"registry": r, "frozen": r.DeepCopy().Freeze()} {
			b.Run(fmt.Sprintf("%s/features=%d", name, n), func(b *testing.B) {
				b.ReportAllocs()
				var on int
				for b.Loop() {
					if g.Enabled(betaOn) {
						on++
					}
				}
				if on != 0 {
					b.Fatal("BetaOn read as on")
				}
			})
		}
	}
}

func BenchmarkEnabledParallel(b *testing.B) {
	r := benchRegistry(b, 50)
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			if !r.Enabled(alphaOff) {
				b.Error("AlphaOff read as off")
				return
			}
		}
	})
}

// BenchmarkEnabledDuringSets measures reads while a writer keeps publishing
// snapshots: reads stay lock-free. Allocations are not reported because
// they would count the writer's.
func BenchmarkEnabledDuringSets(b *testing.B) {
	r := benchRegistry(b, 50)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for i := 0; ; i++ {
			select {
			case <-done:
				return
			default:
			}
			if err := r.SetFromMap(map[string]bool{"BetaOff": i%2 == 0}); err != nil {
				b.Error(err)
				return
			}
		}
	}()
	for b.Loop() {
		_ = r.Enabled(alphaOff)
	}
	b.StopTimer()
	close(done)
	<-stopped
}

func BenchmarkSet(b *testing.B) {
	r := benchRegistry(b, 50)
	b.ReportAllocs()
	for b.Loop() {
		if err := r.Set("AlphaOff=true,BetaOn=false,Feature001=false"); err != nil {
			b.Fatal(err)
		}
	}
}
