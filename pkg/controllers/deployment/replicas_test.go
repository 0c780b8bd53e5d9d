package deployment

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kplane/kplane/pkg/controller/record"
)

func TestResolveFenceposts(t *testing.T) {
	tests := []struct {
		name                   string
		surge, unavailable     string
		desired                int32
		wantSurge, wantUnavail int32
		wantErr                bool
	}{
		{name: "defaults of 4", surge: "25%", unavailable: "25%", desired: 4, wantSurge: 1, wantUnavail: 1},
		{name: "surge rounds up, unavailable down", surge: "25%", unavailable: "25%", desired: 3, wantSurge: 1, wantUnavail: 0},
		{name: "percent of 10", surge: "25%", unavailable: "25%", desired: 10, wantSurge: 3, wantUnavail: 2},
		{name: "half of 5", surge: "50%", unavailable: "50%", desired: 5, wantSurge: 3, wantUnavail: 2},
		{name: "both zero gives one unavailable", surge: "0", unavailable: "0", desired: 3, wantSurge: 0, wantUnavail: 1},
		{name: "zero percent both", surge: "0%", unavailable: "0%", desired: 10, wantSurge: 0, wantUnavail: 1},
		{name: "ints", surge: "2", unavailable: "1", desired: 10, wantSurge: 2, wantUnavail: 1},
		{name: "small percent of one", surge: "10%", unavailable: "10%", desired: 1, wantSurge: 1, wantUnavail: 0},
		{name: "nothing desired", surge: "25%", unavailable: "25%", desired: 0, wantSurge: 0, wantUnavail: 1},
		{name: "bad percent", surge: "x%", unavailable: "1", desired: 3, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, u := intstr.Parse(tt.surge), intstr.Parse(tt.unavailable)
			gotS, gotU, err := ResolveFenceposts(&s, &u, tt.desired)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, want error %v", err, tt.wantErr)
			}
			if tt.wantErr {
				return
			}
			if gotS != tt.wantSurge || gotU != tt.wantUnavail {
				t.Errorf("= (%d, %d), want (%d, %d)", gotS, gotU, tt.wantSurge, tt.wantUnavail)
			}
		})
	}
}

func newDeployment(replicas int32, surge, unavailable string) *appsv1.Deployment {
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "d-uid", Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "img:1"}}},
			},
			Strategy: appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType},
		},
	}
	if surge != "" {
		s, u := intstr.Parse(surge), intstr.Parse(unavailable)
		d.Spec.Strategy = appsv1.DeploymentStrategy{
			Type:          appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u},
		}
	}
	return d
}

func newRS(name string, replicas, available int32, created int, ann map[string]string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "default", UID: types.UID(name + "-uid"), Annotations: ann,
			CreationTimestamp: metav1.NewTime(time.Unix(int64(created), 0)),
		},
		Spec:   appsv1.ReplicaSetSpec{Replicas: &replicas},
		Status: appsv1.ReplicaSetStatus{Replicas: replicas, AvailableReplicas: available, ReadyReplicas: available},
	}
}

func TestMaxSurgeAndUnavailable(t *testing.T) {
	tests := []struct {
		name                   string
		d                      *appsv1.Deployment
		wantSurge, wantUnavail int32
	}{
		{name: "rolling", d: newDeployment(10, "25%", "25%"), wantSurge: 3, wantUnavail: 2},
		{name: "unavailable capped at replicas", d: newDeployment(3, "0", "5"), wantSurge: 0, wantUnavail: 3},
		{name: "no replicas", d: newDeployment(0, "1", "1"), wantSurge: 1, wantUnavail: 0},
		{name: "recreate", d: newDeployment(3, "", ""), wantSurge: 0, wantUnavail: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MaxSurge(tt.d); got != tt.wantSurge {
				t.Errorf("MaxSurge = %d, want %d", got, tt.wantSurge)
			}
			if got := MaxUnavailable(tt.d); got != tt.wantUnavail {
				t.Errorf("MaxUnavailable = %d, want %d", got, tt.wantUnavail)
			}
		})
	}
}

func TestNewRSNewReplicas(t *testing.T) {
	tests := []struct {
		name     string
		d        *appsv1.Deployment
		old, new int32
		want     int32
	}{
		{name: "fresh deployment takes all", d: newDeployment(3, "25%", "25%"), old: 0, new: 0, want: 3},
		{name: "surge budget of one", d: newDeployment(3, "1", "0"), old: 3, new: 0, want: 1},
		{name: "surge budget used", d: newDeployment(3, "1", "0"), old: 3, new: 1, want: 1},
		{name: "never past desired", d: newDeployment(3, "5", "0"), old: 1, new: 2, want: 3},
		{name: "percent surge", d: newDeployment(10, "25%", "25%"), old: 10, new: 0, want: 3},
		{name: "recreate wants all", d: newDeployment(4, "", ""), old: 4, new: 0, want: 4},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, n := newRS("old", tt.old, tt.old, 1, nil), newRS("new", tt.new, tt.new, 2, nil)
			if got := newRSNewReplicas(tt.d, []*appsv1.ReplicaSet{o, n}, n); got != tt.want {
				t.Errorf("= %d, want %d", got, tt.want)
			}
		})
	}
}

func TestProportionalSizes(t *testing.T) {
	maxAnn := func(n int) map[string]string { return map[string]string{MaxReplicasAnnotation: strconv.Itoa(n)} }
	tests := []struct {
		name  string
		d     *appsv1.Deployment
		sets  []*appsv1.ReplicaSet
		sizes map[string]int32
	}{
		{
			name: "scale up 10 to 12 mid-rollout",
			d:    newDeployment(12, "2", "0"),
			sets: []*appsv1.ReplicaSet{newRS("old", 8, 8, 1, maxAnn(12)), newRS("new", 4, 0, 2, maxAnn(12))},
			// New maximum 14 from 12: 8 -> round(9.33) = 9, 4 -> round(4.67) = 5.
			sizes: map[string]int32{"old": 9, "new": 5},
		},
		{
			name:  "scale down 10 to 5 mid-rollout",
			d:     newDeployment(5, "0", "1"),
			sets:  []*appsv1.ReplicaSet{newRS("old", 6, 6, 1, maxAnn(10)), newRS("new", 4, 0, 2, maxAnn(10))},
			sizes: map[string]int32{"old": 3, "new": 2},
		},
		{
			name: "leftover goes to the largest",
			d:    newDeployment(10, "0", "1"),
			sets: []*appsv1.ReplicaSet{newRS("a", 3, 3, 1, maxAnn(7)), newRS("b", 2, 2, 2, maxAnn(7)), newRS("c", 2, 2, 3, maxAnn(7))},
			// toAdd 3: a round(30/7=4.29)-3=1, b/c round(20/7=2.86)-2=1 each.
			sizes: map[string]int32{"a": 4, "b": 3, "c": 3},
		},
		{
			name:  "scale to zero",
			d:     newDeployment(0, "1", "1"),
			sets:  []*appsv1.ReplicaSet{newRS("old", 3, 3, 1, maxAnn(4)), newRS("new", 1, 0, 2, maxAnn(4))},
			sizes: map[string]int32{"old": 0, "new": 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fw := newFakeRSWriter(tt.sets...)
			s := &syncer{rsWriter: fw, recorder: nopRecorder{}}
			var newest *appsv1.ReplicaSet
			old := tt.sets[:len(tt.sets)-1]
			newest = tt.sets[len(tt.sets)-1]
			if err := s.scale(context.Background(), tt.d, newest, old); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.sizes, fw.sizes()); diff != "" {
				t.Errorf("sizes (-want +got):\n%s", diff)
			}
		})
	}
}

// fakeRSWriter keeps ReplicaSets in memory and records every update.
type fakeRSWriter struct {
	sets    map[string]*appsv1.ReplicaSet
	updates int
}

func newFakeRSWriter(sets ...*appsv1.ReplicaSet) *fakeRSWriter {
	f := &fakeRSWriter{sets: map[string]*appsv1.ReplicaSet{}}
	for _, rs := range sets {
		f.sets[rs.Name] = rs.DeepCopy()
	}
	return f
}

func (f *fakeRSWriter) sizes() map[string]int32 {
	out := map[string]int32{}
	for n, rs := range f.sets {
		out[n] = *rs.Spec.Replicas
	}
	return out
}

func (f *fakeRSWriter) Create(_ context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	f.sets[rs.Name] = rs.DeepCopy()
	return rs, nil
}

func (f *fakeRSWriter) Update(_ context.Context, rs *appsv1.ReplicaSet) (*appsv1.ReplicaSet, error) {
	if _, ok := f.sets[rs.Name]; !ok {
		return nil, fmt.Errorf("no replica set %s", rs.Name)
	}
	f.updates++
	f.sets[rs.Name] = rs.DeepCopy()
	return rs.DeepCopy(), nil
}

func (f *fakeRSWriter) Delete(_ context.Context, _, name string, _ types.UID) error {
	delete(f.sets, name)
	return nil
}

func (f *fakeRSWriter) Patch(context.Context, string, string, types.PatchType, []byte) error {
	return nil
}

type nopRecorder struct{}

func (nopRecorder) Eventf(record.Object, string, string, string, ...any) {}

// TestRollingSteps drives the rolling-update decisions against in-memory
// ReplicaSets whose replicas become available one step after they are
// asked for, and checks kube's two invariants at every step: desired
// replicas never exceed replicas+maxSurge and available replicas never
// drop below replicas-maxUnavailable.
func TestRollingSteps(t *testing.T) {
	tests := []struct {
		name               string
		replicas           int32
		surge, unavailable string
		// oldUnavailable old replicas start out unavailable.
		oldUnavailable int32
	}{
		{"defaults of 4", 4, "25%", "25%", 0},
		{"defaults of 10", 10, "25%", "25%", 0},
		{"surge only", 3, "1", "0", 0},
		{"unavailable only", 3, "0", "1", 0},
		{"one replica", 1, "25%", "25%", 0},
		{"big steps", 10, "50%", "50%", 0},
		{"all unavailable", 3, "0", "100%", 0},
		{"unhealthy old replicas go first", 10, "25%", "25%", 4},
		{"unhealthy old, no surge", 5, "0", "1", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeployment(tt.replicas, tt.surge, tt.unavailable)
			maxTotal := tt.replicas + MaxSurge(d)
			// Replicas that were never available cannot be kept available.
			minAvail := min(tt.replicas-MaxUnavailable(d), tt.replicas-tt.oldUnavailable)
			fw := newFakeRSWriter(newRS("old", tt.replicas, tt.replicas-tt.oldUnavailable, 1, nil), newRS("new", 0, 0, 2, nil))
			s := &syncer{rsWriter: fw, recorder: nopRecorder{}}
			ctx := context.Background()
			for step := 0; ; step++ {
				if step > 50 {
					t.Fatalf("no convergence: %v", fw.sizes())
				}
				old, nw := fw.sets["old"].DeepCopy(), fw.sets["new"].DeepCopy()
				all := []*appsv1.ReplicaSet{old, nw}
				if *old.Spec.Replicas == 0 && *nw.Spec.Replicas == tt.replicas && nw.Status.AvailableReplicas == tt.replicas {
					break
				}
				before := fw.updates
				scaled, err := s.reconcileNewReplicaSet(ctx, all, nw, d)
				if err != nil {
					t.Fatal(err)
				}
				if !scaled {
					if _, err := s.reconcileOldReplicaSets(ctx, all, activeSets([]*appsv1.ReplicaSet{old}), nw, d); err != nil {
						t.Fatal(err)
					}
				}
				// Pods follow: scale-downs take effect at once; new
				// replicas become available only after this step's check.
				total := int32(0)
				avail := int32(0)
				for _, rs := range fw.sets {
					total += *rs.Spec.Replicas
					rs.Status.AvailableReplicas = min(rs.Status.AvailableReplicas, *rs.Spec.Replicas)
					avail += rs.Status.AvailableReplicas
				}
				if total > maxTotal {
					t.Fatalf("step %d: %d replicas desired, above %d", step, total, maxTotal)
				}
				if avail < minAvail {
					t.Fatalf("step %d: %d available, below %d", step, avail, minAvail)
				}
				if fw.updates == before {
					// Nothing to do until new pods become available.
					for _, rs := range fw.sets {
						rs.Status.AvailableReplicas = *rs.Spec.Replicas
						rs.Status.Replicas = *rs.Spec.Replicas
					}
				}
			}
		})
	}
}
