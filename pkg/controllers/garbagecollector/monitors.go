package garbagecollector

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/cache"
	"github.com/kplane/kplane/pkg/client"
)

// DefaultDiscoveryPeriod is how often a collector that finds its resources
// through discovery reads it again, as kube-controller-manager's garbage
// collector does. CustomResourceDefinition changes and owners of kinds not
// yet monitored make it read discovery at once.
const DefaultDiscoveryPeriod = 30 * time.Second

// crdResource is watched, metadata only, to learn at once of
// CustomResourceDefinitions created, changed or deleted.
var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// dynamicMonitor is the metadata-only informer of one resource found
// through discovery, run by the collector and stopped when the resource is
// no longer served.
type dynamicMonitor struct {
	res    Resource
	inf    *cache.SharedIndexInformer[*metav1.PartialObjectMetadata]
	cancel context.CancelFunc
	done   chan struct{}
}

// discovery is the collector's part that follows what the server serves:
// resources beyond the fixed ones are found through discovery, watched
// while served and forgotten once not.
type discovery struct {
	client *client.Client
	disc   *client.DiscoveryClient
	period time.Duration
	// fixed are the resources watched through the shared factory, by
	// group and resource, never removed.
	fixed map[schema.GroupResource]Resource
	// resync asks the discovery loop for a round now; it holds at most
	// one request.
	resync chan struct{}

	mu      sync.Mutex                               // guards dynamic and served
	dynamic map[schema.GroupResource]*dynamicMonitor // guarded by mu
	// served is what the last complete discovery found, nil before.
	served map[schema.GroupResource]Resource // guarded by mu
	wg     sync.WaitGroup                    // the dynamic informers
}

// servedFixed reports which fixed resources the last complete discovery
// found, or nil if none has completed.
func (d *discovery) servedFixed() map[schema.GroupResource]bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.served == nil {
		return nil
	}
	out := map[schema.GroupResource]bool{}
	for gr := range d.fixed {
		if _, ok := d.served[gr]; ok {
			out[gr] = true
		}
	}
	return out
}

// requestResync asks for a discovery round without waiting for it.
func (d *discovery) requestResync() {
	select {
	case d.resync <- struct{}{}:
	default:
	}
}

// deletable reports whether the collector can watch and delete r's objects.
func deletable(r metav1.APIResource) bool {
	return !strings.Contains(r.Name, "/") &&
		slices.Contains(r.Verbs, "list") && slices.Contains(r.Verbs, "watch") && slices.Contains(r.Verbs, "delete")
}

// discover returns the deletable resources the server serves in each
// group's preferred version, except the ignored ones, and the group
// versions whose discovery failed (their monitors are kept).
func (d *discovery) discover(ctx context.Context) (map[schema.GroupResource]Resource, map[schema.GroupVersion]bool, error) {
	lists, err := d.disc.ServerPreferredResources(ctx)
	failed := map[schema.GroupVersion]bool{}
	var partial *client.GroupDiscoveryFailedError
	switch {
	case errors.As(err, &partial):
		for gv := range partial.Groups {
			failed[gv] = true
		}
	case err != nil:
		return nil, nil, err
	}
	found := map[schema.GroupResource]Resource{}
	for _, l := range lists {
		gv, perr := schema.ParseGroupVersion(l.GroupVersion)
		if perr != nil {
			continue
		}
		for _, r := range l.APIResources {
			gr := gv.WithResource(r.Name).GroupResource()
			if !deletable(r) || ignoredResources[gr] {
				continue
			}
			found[gr] = Resource{GroupVersionResource: gv.WithResource(r.Name), Kind: r.Kind, Namespaced: r.Namespaced}
		}
	}
	return found, failed, nil
}

// kindsLocked is every monitored resource by kind: the fixed ones and the
// dynamic ones. d.mu must be held.
func (d *discovery) kindsLocked() map[schema.GroupKind]Resource {
	out := make(map[schema.GroupKind]Resource, len(d.fixed)+len(d.dynamic))
	for _, r := range d.fixed {
		out[r.GroupVersionKind().GroupKind()] = r
	}
	for _, m := range d.dynamic {
		gk := m.res.GroupVersionKind().GroupKind()
		if _, taken := out[gk]; !taken {
			out[gk] = m.res
		}
	}
	return out
}

// Monitored returns the resources the collector watches, sorted: the fixed
// ones and, with discovery, those found so far.
func (gc *GarbageCollector) Monitored() []schema.GroupVersionResource {
	kinds := *gc.collector.kinds.Load()
	out := make([]schema.GroupVersionResource, 0, len(kinds))
	for _, r := range kinds {
		out = append(out, r.GroupVersionResource)
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) })
	return out
}

// watchCRDs runs a metadata-only informer of CustomResourceDefinitions
// whose every event asks for a discovery round. A server without CRDs
// leaves it retrying with backoff; the periodic rounds still run.
func (gc *GarbageCollector) watchCRDs(ctx context.Context) error {
	d := gc.discovery
	inf, err := cache.NewSharedIndexInformer(cache.InformerConfig[*metav1.PartialObjectMetadata]{
		Name:          "garbage-collector " + crdResource.String(),
		ListerWatcher: client.NewMetadata(d.client).Resource(crdResource).ListerWatcher(),
		Resource:      crdResource.GroupResource(),
		Clock:         gc.clock,
		Logger:        gc.logger,
	})
	if err != nil {
		return err
	}
	_, err = inf.AddEventHandler(cache.HandlerFuncs[*metav1.PartialObjectMetadata]{
		AddFunc:    func(*metav1.PartialObjectMetadata, bool) { d.requestResync() },
		UpdateFunc: func(_, _ *metav1.PartialObjectMetadata) { d.requestResync() },
		DeleteFunc: func(any) { d.requestResync() },
	}, cache.HandlerOptions{})
	if err != nil {
		return err
	}
	d.wg.Go(func() { inf.Run(ctx) })
	return nil
}

// discoveryLoop runs a discovery round every period and whenever one is
// requested, until ctx ends.
func (gc *GarbageCollector) discoveryLoop(ctx context.Context) {
	d := gc.discovery
	ticker := gc.clock.NewTicker(d.period)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		case <-d.resync:
		}
		gc.syncMonitors(ctx)
	}
}

// syncMonitors reads discovery and makes the dynamic monitors match it:
// resources newly served get a monitor, those no longer served lose theirs
// (the graph keeps their nodes until their delete events or the workers'
// lookups remove them). While monitors change and until the new ones sync
// (or a period passes) the workers are held, so that a foreground deletion
// does not miss dependents of a kind just added, as in Kubernetes.
func (gc *GarbageCollector) syncMonitors(ctx context.Context) {
	d := gc.discovery
	found, failed, err := d.discover(ctx)
	if err != nil {
		if ctx.Err() == nil {
			gc.logger.Warn("discovery failed; monitors unchanged", "err", err)
		}
		return
	}
	if len(failed) > 0 {
		gc.logger.Warn("discovery failed for some group versions; their monitors are kept", "groupVersions", slices.Collect(maps.Keys(failed)))
	}

	d.mu.Lock()
	if len(failed) == 0 {
		d.served = found
	}
	var added []*dynamicMonitor
	var removed []*dynamicMonitor
	for gr, m := range d.dynamic {
		r, ok := found[gr]
		switch {
		case ok && r == m.res:
		case !ok && failed[m.res.GroupVersion()]:
		default:
			removed = append(removed, m)
		}
	}
	for gr, r := range found {
		if _, isFixed := d.fixed[gr]; isFixed {
			continue
		}
		if m, ok := d.dynamic[gr]; ok && m.res == r {
			continue
		}
		m, err := gc.newDynamicMonitor(r)
		if err != nil {
			gc.logger.Error("cannot monitor resource", "resource", r.GroupVersionResource.String(), "err", err)
			continue
		}
		added = append(added, m)
	}
	if len(added) == 0 && len(removed) == 0 {
		d.mu.Unlock()
		return
	}

	gc.workerLock.Lock()
	defer gc.workerLock.Unlock()
	for _, m := range removed {
		m.cancel()
		<-m.done
		delete(d.dynamic, m.res.GroupResource())
		gc.logger.Info("stopped monitoring resource no longer served", "resource", m.res.GroupVersionResource.String())
	}
	synced := make([]func() bool, 0, len(added))
	for _, m := range added {
		var runCtx context.Context
		runCtx, m.cancel = context.WithCancel(ctx)
		d.dynamic[m.res.GroupResource()] = m
		d.wg.Go(func() {
			defer close(m.done)
			m.inf.Run(runCtx)
		})
		synced = append(synced, m.inf.HasSynced)
		gc.logger.Info("monitoring resource", "resource", m.res.GroupVersionResource.String(), "kind", m.res.Kind)
	}
	kinds := d.kindsLocked()
	retired := maps.Clone(*gc.collector.retired.Load())
	for _, m := range removed {
		retired[m.res.GroupVersionKind().GroupKind()] = true
	}
	for gk := range kinds {
		delete(retired, gk)
	}
	gc.collector.kinds.Store(&kinds)
	gc.collector.retired.Store(&retired)
	d.mu.Unlock()
	gc.forgetRetired(removed, kinds)

	if len(added) == 0 {
		return
	}
	waitCtx, cancel := context.WithTimeout(ctx, d.period)
	defer cancel()
	if !cache.WaitForCacheSync(waitCtx, synced...) {
		if ctx.Err() != nil {
			return
		}
		for _, m := range added {
			if !m.inf.HasSynced() {
				gc.logger.Warn("new monitor did not sync in time; workers resume", "resource", m.res.GroupVersionResource.String(), "err", m.inf.LastSyncError())
			}
		}
		return
	}
	gc.waitGraphSync(waitCtx)
}

// forgetRetired removes from the graph the objects of the kinds of removed
// that are served no more: with its CRD gone, none of them exists, though
// the watch may have ended before delivering every deletion. Observed
// nodes get a virtual delete event (their dependents are then attempted);
// virtual ones are attempted, and found gone.
func (gc *GarbageCollector) forgetRetired(removed []*dynamicMonitor, served map[schema.GroupKind]Resource) {
	gone := map[schema.GroupKind]bool{}
	for _, m := range removed {
		if gk := m.res.GroupVersionKind().GroupKind(); served[gk] == (Resource{}) {
			gone[gk] = true
		}
	}
	if len(gone) == 0 {
		return
	}
	for _, n := range gc.builder.graph.ofKinds(gone) {
		if gc.builder.graph.state(n).observed {
			gc.collector.virtualDelete(n.identity)
		} else {
			gc.attemptToDelete.Add(n)
		}
	}
}

// newDynamicMonitor builds the metadata-only informer of r, its events fed
// into the graph; it is not running.
func (gc *GarbageCollector) newDynamicMonitor(r Resource) (*dynamicMonitor, error) {
	inf, err := cache.NewSharedIndexInformer(cache.InformerConfig[*metav1.PartialObjectMetadata]{
		Name:          "garbage-collector " + r.GroupVersionResource.String(),
		ListerWatcher: client.NewMetadata(gc.discovery.client).Resource(r.GroupVersionResource).ListerWatcher(),
		Resource:      r.GroupResource(),
		Clock:         gc.clock,
		Logger:        gc.logger,
	})
	if err != nil {
		return nil, err
	}
	if _, err := monitorInformer(gc, inf, r); err != nil {
		return nil, err
	}
	return &dynamicMonitor{res: r, inf: inf, done: make(chan struct{})}, nil
}

// stopDynamic stops every dynamic monitor and the CRD watch and waits for
// their goroutines.
func (d *discovery) stopDynamic() {
	d.mu.Lock()
	for _, m := range d.dynamic {
		if m.cancel != nil {
			m.cancel()
		}
	}
	d.mu.Unlock()
	d.wg.Wait()
}
