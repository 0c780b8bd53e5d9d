package website

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/controller"
	"github.com/kplane/kplane/pkg/controller/record"
)

var (
	deploymentsGR = schema.GroupResource{Group: "apps", Resource: "deployments"}
	t0            = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
)

// fixture is the sample-controller style test bed: caches pre-filled with
// objects, an API that records every action, and a recorder that records
// every event.
type fixture struct {
	t           *testing.T
	websites    *cache.Indexer[*Website]
	deployments *cache.Indexer[*appsv1.Deployment]
	api         *fakeAPI
	events      *fakeEvents
	clock       *clocktesting.FakePassiveClock
	s           *syncer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	sites, err := cache.NewIndexer(cache.IndexerConfig[*Website]{})
	if err != nil {
		t.Fatal(err)
	}
	deps, err := cache.NewIndexer(cache.IndexerConfig[*appsv1.Deployment]{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, websites: sites, deployments: deps, events: &fakeEvents{},
		api: &fakeAPI{live: map[string]*appsv1.Deployment{}}, clock: clocktesting.NewFakePassiveClock(t0)}
	f.s = &syncer{
		websites:    cache.NewLister(sites, Websites.GroupResource()),
		deployments: cache.NewLister(deps, deploymentsGR),
		api:         f.api,
		recorder:    f.events,
		clock:       f.clock,
	}
	return f
}

func (f *fixture) addWebsite(w *Website) {
	f.t.Helper()
	if err := f.websites.Add(w); err != nil {
		f.t.Fatal(err)
	}
}

// addDeployment puts d in the cache and, unless cacheOnly, on the server.
func (f *fixture) addDeployment(d *appsv1.Deployment, cacheOnly bool) {
	f.t.Helper()
	if err := f.deployments.Add(d); err != nil {
		f.t.Fatal(err)
	}
	if !cacheOnly {
		f.api.live[d.Namespace+"/"+d.Name] = d
	}
}

// fakeAPI records every write; GetDeployment reads live.
type fakeAPI struct {
	actions []string
	// live is what the server holds.
	live map[string]*appsv1.Deployment
	// err, when set, is returned by every write.
	err error
	// lastStatus is the status last written.
	lastStatus *WebsiteStatus
}

func (a *fakeAPI) CreateDeployment(_ context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	c := d.Spec.Template.Spec.Containers[0]
	ref := metav1.GetControllerOf(d)
	a.actions = append(a.actions, fmt.Sprintf("create deployment %s/%s replicas=%d image=%s port=%d owner=%s/%s/%s blockOwnerDeletion=%t selector=%v",
		d.Namespace, d.Name, *d.Spec.Replicas, c.Image, c.Ports[0].ContainerPort, ref.APIVersion, ref.Kind, ref.UID, *ref.BlockOwnerDeletion, d.Spec.Selector.MatchLabels))
	return d, a.err
}

func (a *fakeAPI) UpdateDeployment(_ context.Context, d *appsv1.Deployment) (*appsv1.Deployment, error) {
	c := d.Spec.Template.Spec.Containers[0]
	a.actions = append(a.actions, fmt.Sprintf("update deployment %s/%s replicas=%d image=%s port=%d", d.Namespace, d.Name, *d.Spec.Replicas, c.Image, c.Ports[0].ContainerPort))
	return d, a.err
}

func (a *fakeAPI) DeleteDeployment(_ context.Context, namespace, name string, uid types.UID) error {
	a.actions = append(a.actions, fmt.Sprintf("delete deployment %s/%s uid=%s", namespace, name, uid))
	return a.err
}

func (a *fakeAPI) GetDeployment(_ context.Context, namespace, name string) (*appsv1.Deployment, error) {
	d, ok := a.live[namespace+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(deploymentsGR, name)
	}
	return d, nil
}

func (a *fakeAPI) UpdateWebsite(_ context.Context, w *Website) (*Website, error) {
	a.actions = append(a.actions, fmt.Sprintf("update website %s/%s finalizers=%v", w.Namespace, w.Name, w.Finalizers))
	return w, a.err
}

func (a *fakeAPI) UpdateWebsiteStatus(_ context.Context, w *Website) (*Website, error) {
	var conds []string
	for _, c := range w.Status.Conditions {
		conds = append(conds, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	a.actions = append(a.actions, fmt.Sprintf("update website status %s/%s generation=%d ready=%d %v",
		w.Namespace, w.Name, w.Status.ObservedGeneration, w.Status.ReadyReplicas, conds))
	st := w.Status
	a.lastStatus = &st
	return w, a.err
}

type fakeEvents struct{ events []string }

func (e *fakeEvents) Event(obj record.Object, eventType, reason, message string) {
	e.events = append(e.events, fmt.Sprintf("%s %s %s: %s", obj.GetName(), eventType, reason, message))
}

func (e *fakeEvents) Eventf(obj record.Object, eventType, reason, format string, args ...any) {
	e.Event(obj, eventType, reason, fmt.Sprintf(format, args...))
}

func int32p(v int32) *int32 { return &v }

// website is a Website as the server returns it: defaulted, with the
// finalizer on.
func website(name, image string, replicas int32) *Website {
	return &Website{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("site-" + name), Generation: 1, Finalizers: []string{Finalizer}},
		Spec:       WebsiteSpec{Image: image, Replicas: int32p(replicas), Port: int32p(8080)},
	}
}

// deploymentFor is site's Deployment, as created by the operator.
func deploymentFor(site *Website) *appsv1.Deployment {
	d := newDeployment(site)
	d.UID = types.UID("deploy-" + site.Name)
	d.Generation = 1
	return d
}

// withStatus sets d's status as a Deployment controller would once it has
// seen generation 1 and made ready replicas ready.
func withStatus(d *appsv1.Deployment, ready int32) *appsv1.Deployment {
	want := *d.Spec.Replicas
	d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: want, UpdatedReplicas: want, ReadyReplicas: ready, AvailableReplicas: ready}
	return d
}

// readyStatus is the status sync computes for site with d, to start a
// case from a site whose status is up to date.
func readyStatus(f *fixture, site *Website, d *appsv1.Deployment) WebsiteStatus {
	return f.s.statusFor(site, d)
}

func TestSync(t *testing.T) {
	tests := []struct {
		name       string
		site       *Website
		deployment func(site *Website) *appsv1.Deployment
		// inSync sets the site's status to what the deployment implies.
		inSync     bool
		key        string
		terminal   bool
		wantAct    []string
		wantEvents []string
	}{
		{
			name: "first sight: finalizer, then deployment, then status",
			site: func() *Website { w := website("blog", "nginx:1.27", 2); w.Finalizers = nil; return w }(),
			wantAct: []string{
				"update website ns/blog finalizers=[examples.kplane.dev/website-cleanup]",
				"create deployment ns/blog replicas=2 image=nginx:1.27 port=8080 owner=examples.kplane.dev/v1alpha1/Website/site-blog blockOwnerDeletion=true selector=map[examples.kplane.dev/website:blog]",
				"update website status ns/blog generation=1 ready=0 [Ready=False/ReplicasNotReady Progressing=True/RollingOut]",
			},
			wantEvents: []string{`blog Normal DeploymentCreated: Created Deployment "blog"`},
		},
		{
			name:   "in sync: nothing",
			site:   website("blog", "nginx:1.27", 2),
			inSync: true,
			deployment: func(site *Website) *appsv1.Deployment {
				return withStatus(deploymentFor(site), 2)
			},
		},
		{
			name: "new image and replicas: deployment updated",
			site: website("blog", "nginx:1.28", 3),
			deployment: func(site *Website) *appsv1.Deployment {
				return withStatus(deploymentFor(website("blog", "nginx:1.27", 2)), 2)
			},
			wantAct: []string{
				"update deployment ns/blog replicas=3 image=nginx:1.28 port=8080",
				"update website status ns/blog generation=1 ready=2 [Ready=False/ReplicasNotReady Progressing=True/RollingOut]",
			},
			wantEvents: []string{`blog Normal DeploymentUpdated: Updated Deployment "blog"`},
		},
		{
			name: "new port: deployment updated",
			site: func() *Website { w := website("blog", "nginx:1.27", 1); w.Spec.Port = int32p(80); return w }(),
			deployment: func(site *Website) *appsv1.Deployment {
				return deploymentFor(website("blog", "nginx:1.27", 1))
			},
			wantAct: []string{
				"update deployment ns/blog replicas=1 image=nginx:1.27 port=80",
				"update website status ns/blog generation=1 ready=0 [Ready=False/ReplicasNotReady Progressing=True/RollingOut]",
			},
			wantEvents: []string{`blog Normal DeploymentUpdated: Updated Deployment "blog"`},
		},
		{
			name: "deployment ready: status Ready",
			site: website("blog", "nginx:1.27", 2),
			deployment: func(site *Website) *appsv1.Deployment {
				return withStatus(deploymentFor(site), 2)
			},
			wantAct: []string{
				"update website status ns/blog generation=1 ready=2 [Ready=True/ReplicasReady Progressing=False/RolloutComplete]",
			},
		},
		{
			name: "deployment not yet observed its generation: not ready",
			site: website("blog", "nginx:1.27", 2),
			deployment: func(site *Website) *appsv1.Deployment {
				d := withStatus(deploymentFor(site), 2)
				d.Generation = 2
				return d
			},
			wantAct: []string{
				"update website status ns/blog generation=1 ready=2 [Ready=False/ReplicasNotReady Progressing=True/RollingOut]",
			},
		},
		{
			name: "zero replicas, none running: ready",
			site: website("blog", "nginx:1.27", 0),
			deployment: func(site *Website) *appsv1.Deployment {
				return withStatus(deploymentFor(site), 0)
			},
			wantAct: []string{
				"update website status ns/blog generation=1 ready=0 [Ready=True/ReplicasReady Progressing=False/RolloutComplete]",
			},
		},
		{
			name: "someone else's deployment: left alone",
			site: website("blog", "nginx:1.27", 1),
			deployment: func(*Website) *appsv1.Deployment {
				return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "blog", UID: "theirs"}}
			},
			terminal:   true,
			wantEvents: []string{`blog Warning ErrResourceExists: Deployment "blog" already exists and is not managed by this Website`},
		},
		{
			name: "deleted: deployment deleted, finalizer kept",
			site: func() *Website {
				w := website("blog", "nginx:1.27", 1)
				w.DeletionTimestamp = &metav1.Time{Time: t0}
				return w
			}(),
			deployment: func(site *Website) *appsv1.Deployment {
				return deploymentFor(site)
			},
			wantAct:    []string{"delete deployment ns/blog uid=deploy-blog"},
			wantEvents: []string{`blog Normal DeletingDeployment: Deleting Deployment "blog"`},
		},
		{
			name: "deleted, deployment going: wait",
			site: func() *Website {
				w := website("blog", "nginx:1.27", 1)
				w.DeletionTimestamp = &metav1.Time{Time: t0}
				return w
			}(),
			deployment: func(site *Website) *appsv1.Deployment {
				d := deploymentFor(site)
				d.DeletionTimestamp = &metav1.Time{Time: t0}
				return d
			},
		},
		{
			name: "deleted, deployment gone: finalizer removed",
			site: func() *Website {
				w := website("blog", "nginx:1.27", 1)
				w.DeletionTimestamp = &metav1.Time{Time: t0}
				return w
			}(),
			wantAct: []string{
				"update website ns/blog finalizers=[]",
			},
			wantEvents: []string{`blog Normal CleanedUp: Deployment deleted, finalizer removed`},
		},
		{
			name: "deleted, someone else's deployment: finalizer removed, deployment kept",
			site: func() *Website {
				w := website("blog", "nginx:1.27", 1)
				w.DeletionTimestamp = &metav1.Time{Time: t0}
				return w
			}(),
			deployment: func(*Website) *appsv1.Deployment {
				return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "blog", UID: "theirs"}}
			},
			wantAct:    []string{"update website ns/blog finalizers=[]"},
			wantEvents: []string{`blog Normal CleanedUp: Deployment deleted, finalizer removed`},
		},
		{
			name: "deleted, other finalizers kept",
			site: func() *Website {
				w := website("blog", "nginx:1.27", 1)
				w.DeletionTimestamp = &metav1.Time{Time: t0}
				w.Finalizers = []string{"a", Finalizer, "b"}
				return w
			}(),
			wantAct:    []string{"update website ns/blog finalizers=[a b]"},
			wantEvents: []string{`blog Normal CleanedUp: Deployment deleted, finalizer removed`},
		},
		{
			name: "deleted, finalizer already removed: nothing",
			site: func() *Website {
				w := website("blog", "nginx:1.27", 1)
				w.DeletionTimestamp = &metav1.Time{Time: t0}
				w.Finalizers = []string{"other"}
				return w
			}(),
		},
		{
			name: "website gone: nothing",
			key:  "ns/blog",
		},
		{
			name:     "bad key",
			key:      "a/b/c",
			terminal: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t)
			key := tt.key
			var d *appsv1.Deployment
			if tt.deployment != nil {
				d = tt.deployment(tt.site)
				f.addDeployment(d, false)
			}
			if tt.site != nil {
				if tt.inSync {
					tt.site.Status = readyStatus(f, tt.site, d)
				}
				f.addWebsite(tt.site)
				key = tt.site.Namespace + "/" + tt.site.Name
			}
			err := f.s.sync(t.Context(), key)
			if tt.terminal {
				if !controller.IsTerminal(err) {
					t.Fatalf("sync = %v, want a terminal error", err)
				}
			} else if err != nil {
				t.Fatalf("sync = %v", err)
			}
			if diff := cmp.Diff(tt.wantAct, f.api.actions); diff != "" {
				t.Errorf("actions (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantEvents, f.events.events); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSyncDeletedBeforeCacheSawDeployment: the finalizer is not removed
// while the server still has the Deployment, though the cache has not seen
// it yet.
func TestSyncDeletedBeforeCacheSawDeployment(t *testing.T) {
	f := newFixture(t)
	site := website("blog", "nginx:1.27", 1)
	site.DeletionTimestamp = &metav1.Time{Time: t0}
	f.addWebsite(site)
	d := deploymentFor(site)
	f.api.live["ns/blog"] = d
	if err := f.s.sync(t.Context(), "ns/blog"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"delete deployment ns/blog uid=deploy-blog"}, f.api.actions); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
}

// TestSyncCreateAlreadyExists: a create that finds the Deployment there
// (the cache is behind) waits for the informer instead of failing.
func TestSyncCreateAlreadyExists(t *testing.T) {
	f := newFixture(t)
	f.addWebsite(website("blog", "nginx:1.27", 1))
	f.api.err = apierrors.NewAlreadyExists(deploymentsGR, "blog")
	if err := f.s.sync(t.Context(), "ns/blog"); err != nil {
		t.Fatalf("sync = %v, want nil", err)
	}
	if len(f.events.events) != 0 {
		t.Errorf("events = %v, want none", f.events.events)
	}
}

// TestSyncWriteFailure: a failed write is returned for a retry.
func TestSyncWriteFailure(t *testing.T) {
	f := newFixture(t)
	f.addWebsite(website("blog", "nginx:1.27", 1))
	f.api.err = apierrors.NewServiceUnavailable("busy")
	err := f.s.sync(t.Context(), "ns/blog")
	if !apierrors.IsServiceUnavailable(err) || controller.IsTerminal(err) {
		t.Fatalf("sync = %v, want the retryable error", err)
	}
}

// TestStatusConditions: the conditions follow Kubernetes' conventions:
// lastTransitionTime moves only when a condition's status changes, and
// observedGeneration is the Website's generation.
func TestStatusConditions(t *testing.T) {
	f := newFixture(t)
	site := website("blog", "nginx:1.27", 2)
	site.Generation = 4
	d := deploymentFor(site)

	st := f.s.statusFor(site, withStatus(d.DeepCopy(), 1))
	ready := meta.FindStatusCondition(st.Conditions, ConditionReady)
	if ready == nil || ready.Status != metav1.ConditionFalse || ready.Message != "1 of 2 replicas ready" ||
		ready.ObservedGeneration != 4 || !ready.LastTransitionTime.Time.Equal(t0) {
		t.Fatalf("Ready = %+v", ready)
	}
	if st.ObservedGeneration != 4 || st.ReadyReplicas != 1 {
		t.Fatalf("status = %+v", st)
	}

	// Still not ready later: the transition time stays.
	site.Status = st
	f.clock.SetTime(t0.Add(time.Minute))
	st = f.s.statusFor(site, withStatus(d.DeepCopy(), 1))
	if got := meta.FindStatusCondition(st.Conditions, ConditionReady); !got.LastTransitionTime.Time.Equal(t0) {
		t.Errorf("unchanged Ready moved its transition time to %v", got.LastTransitionTime)
	}
	if diff := cmp.Diff(site.Status, st); diff != "" {
		t.Errorf("status changed though nothing did (-old +new):\n%s", diff)
	}

	// Ready: both conditions flip, stamped now.
	f.clock.SetTime(t0.Add(2 * time.Minute))
	st = f.s.statusFor(site, withStatus(d.DeepCopy(), 2))
	for _, typ := range []string{ConditionReady, ConditionProgressing} {
		c := meta.FindStatusCondition(st.Conditions, typ)
		if !c.LastTransitionTime.Time.Equal(t0.Add(2 * time.Minute)) {
			t.Errorf("%s transition time %v, want now", typ, c.LastTransitionTime)
		}
	}
	if !meta.IsStatusConditionTrue(st.Conditions, ConditionReady) || !meta.IsStatusConditionFalse(st.Conditions, ConditionProgressing) {
		t.Errorf("conditions = %+v", st.Conditions)
	}
}

// TestDesiredDeploymentKeepsOtherFields: fields the Website does not own,
// such as a sidecar or server defaults, survive an update.
func TestDesiredDeploymentKeepsOtherFields(t *testing.T) {
	site := website("blog", "nginx:1.27", 1)
	d := deploymentFor(site)
	d.Spec.Template.Spec.Containers[0].ImagePullPolicy = "IfNotPresent"
	d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, newDeployment(site).Spec.Template.Spec.Containers[0])
	d.Spec.Template.Spec.Containers[1].Name = "sidecar"
	site.Spec.Image = "nginx:1.28"
	got := desiredDeployment(d, site)
	if c := got.Spec.Template.Spec.Containers; len(c) != 2 || c[0].Image != "nginx:1.28" || c[0].ImagePullPolicy != "IfNotPresent" || c[1].Image != "nginx:1.27" {
		t.Errorf("containers = %+v", c)
	}
	if d.Spec.Template.Spec.Containers[0].Image != "nginx:1.27" {
		t.Error("desiredDeployment modified its argument")
	}
	if !upToDate(got, site) {
		t.Error("desired deployment is not up to date")
	}
}

// TestDeepCopy: a copy shares no memory with the original.
func TestDeepCopy(t *testing.T) {
	w := website("blog", "nginx:1.27", 1)
	w.Status.Conditions = []metav1.Condition{{Type: ConditionReady, Status: metav1.ConditionTrue}}
	cp := w.DeepCopyObject().(*Website)
	*cp.Spec.Replicas = 5
	cp.Status.Conditions[0].Status = metav1.ConditionFalse
	cp.Finalizers[0] = "x"
	if *w.Spec.Replicas != 1 || w.Status.Conditions[0].Status != metav1.ConditionTrue || w.Finalizers[0] != Finalizer {
		t.Errorf("original changed: %+v", w)
	}
	if diff := cmp.Diff(w, w.DeepCopy()); diff != "" {
		t.Errorf("copy differs (-orig +copy):\n%s", diff)
	}
	l := &WebsiteList{Items: []Website{*w}}
	lc := l.DeepCopyObject().(*WebsiteList)
	*lc.Items[0].Spec.Replicas = 7
	if *l.Items[0].Spec.Replicas != 1 {
		t.Error("list copy shares items")
	}
}

// TestSyncDeleteConflict: a Deployment replaced since it was read is not
// deleted, and no event claims it was; its deletion event brings the key
// back.
func TestSyncDeleteConflict(t *testing.T) {
	f := newFixture(t)
	site := website("blog", "nginx:1.27", 1)
	site.DeletionTimestamp = &metav1.Time{Time: t0}
	f.addWebsite(site)
	f.addDeployment(deploymentFor(site), false)
	f.api.err = apierrors.NewConflict(deploymentsGR, "blog", fmt.Errorf("uid precondition failed"))
	if err := f.s.sync(t.Context(), "ns/blog"); err != nil {
		t.Fatalf("sync = %v, want nil", err)
	}
	if diff := cmp.Diff([]string{"delete deployment ns/blog uid=deploy-blog"}, f.api.actions); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if len(f.events.events) != 0 {
		t.Errorf("events = %v, want none", f.events.events)
	}
}
