package garbagecollector

import (
	"fmt"
	"testing"
)

// BenchmarkProcessEvent measures the graph builder on the event stream of
// a owner with many dependents: each iteration adds a dependent and
// updates it to a second owner.
func BenchmarkProcessEvent(b *testing.B) {
	gb, _, _, _ := newTestBuilder()
	gb.processEvent(add(object{uid: "owner"}))
	gb.processEvent(add(object{uid: "other"}))
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		dep := object{uid: fmt.Sprintf("dep-%d", i), owners: []string{"owner"}}
		gb.processEvent(add(dep))
		gb.processEvent(update(dep, object{uid: dep.uid, owners: []string{"owner", "other"}}))
		i++
	}
}
