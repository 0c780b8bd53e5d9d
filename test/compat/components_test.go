package compat

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
)

// componentResources are the resources kube-scheduler and
// kube-controller-manager 1.37 list and watch when they start, through
// their shared informer factory: a control plane that lacks one of them
// leaves those components waiting for ever on a cache that never syncs.
var componentResources = []schema.GroupVersionResource{
	// core/v1
	{Version: "v1", Resource: "pods"},
	{Version: "v1", Resource: "nodes"},
	{Version: "v1", Resource: "namespaces"},
	{Version: "v1", Resource: "services"},
	{Version: "v1", Resource: "endpoints"},
	{Version: "v1", Resource: "persistentvolumes"},
	{Version: "v1", Resource: "persistentvolumeclaims"},
	{Version: "v1", Resource: "replicationcontrollers"},
	{Version: "v1", Resource: "serviceaccounts"},
	{Version: "v1", Resource: "secrets"},
	{Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "resourcequotas"},
	{Version: "v1", Resource: "limitranges"},
	{Version: "v1", Resource: "podtemplates"},
	{Version: "v1", Resource: "events"},
	// apps, batch, policy, autoscaling
	{Group: "apps", Version: "v1", Resource: "deployments"},
	{Group: "apps", Version: "v1", Resource: "replicasets"},
	{Group: "apps", Version: "v1", Resource: "statefulsets"},
	{Group: "apps", Version: "v1", Resource: "daemonsets"},
	{Group: "apps", Version: "v1", Resource: "controllerrevisions"},
	{Group: "batch", Version: "v1", Resource: "jobs"},
	{Group: "batch", Version: "v1", Resource: "cronjobs"},
	{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"},
	{Group: "autoscaling", Version: "v2", Resource: "horizontalpodautoscalers"},
	// networking, discovery
	{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"},
	{Group: "networking.k8s.io", Version: "v1", Resource: "servicecidrs"},
	{Group: "networking.k8s.io", Version: "v1", Resource: "ipaddresses"},
	// storage
	{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"},
	{Group: "storage.k8s.io", Version: "v1", Resource: "csinodes"},
	{Group: "storage.k8s.io", Version: "v1", Resource: "csidrivers"},
	{Group: "storage.k8s.io", Version: "v1", Resource: "csistoragecapacities"},
	{Group: "storage.k8s.io", Version: "v1", Resource: "volumeattachments"},
	{Group: "storage.k8s.io", Version: "v1", Resource: "volumeattributesclasses"},
	// access, certificates, admission, coordination
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	{Group: "certificates.k8s.io", Version: "v1", Resource: "certificatesigningrequests"},
	{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
	{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"},
	// dynamic resource allocation
	{Group: "resource.k8s.io", Version: "v1", Resource: "resourceclaims"},
	{Group: "resource.k8s.io", Version: "v1", Resource: "resourceclaimtemplates"},
	{Group: "resource.k8s.io", Version: "v1", Resource: "resourceslices"},
	{Group: "resource.k8s.io", Version: "v1", Resource: "deviceclasses"},
	{Group: "resource.k8s.io", Version: "v1", Resource: "devicetaintrules"},
}

// The informers kube-scheduler and kube-controller-manager start sync
// against kplane, over protobuf as those components speak it; and, as
// the garbage collector and the resource quota controller do, metadata
// informers of every listable, watchable and deletable resource
// discovery reports sync too.
func TestKubeComponentInformersSync(t *testing.T) {
	s := startServer(t)
	cfg := s.restConfig()
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// waitSynced waits for syncs, for a while: an informer of a resource
	// not served never syncs.
	waitSynced := func(wait func(<-chan struct{})) {
		waitCtx, stop := context.WithTimeout(ctx, 20*time.Second)
		defer stop()
		wait(waitCtx.Done())
	}

	factory := informers.NewSharedInformerFactory(cs, 0)
	synced := map[schema.GroupVersionResource]func() bool{}
	for _, gvr := range componentResources {
		inf, err := factory.ForResource(gvr)
		if err != nil {
			t.Fatalf("client-go has no informer for %s: %v", gvr, err)
		}
		synced[gvr] = inf.Informer().HasSynced
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	defer cancel() // first: the factories stop once their informers do
	waitSynced(func(stop <-chan struct{}) { factory.WaitForCacheSync(stop) })
	var missing []string
	for gvr, ok := range synced {
		if !ok() {
			missing = append(missing, gvr.String())
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("informers that never synced (%d of %d):\n%s", len(missing), len(componentResources), strings.Join(missing, "\n"))
	}

	// Every deletable resource, as the garbage collector finds them.
	lists, err := cs.Discovery().ServerPreferredResources()
	if err != nil {
		t.Fatalf("discovery: %v", err)
	}
	mc, err := metadata.NewForConfig(s.restConfig())
	if err != nil {
		t.Fatal(err)
	}
	mf := metadatainformer.NewSharedInformerFactory(mc, 0)
	metaSynced := map[schema.GroupVersionResource]func() bool{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "watch") || !slices.Contains(r.Verbs, "delete") {
				continue
			}
			gvr := gv.WithResource(r.Name)
			metaSynced[gvr] = mf.ForResource(gvr).Informer().HasSynced
		}
	}
	if len(metaSynced) < len(componentResources) {
		t.Errorf("discovery reports %d deletable resources, fewer than the %d the components watch", len(metaSynced), len(componentResources))
	}
	mf.Start(ctx.Done())
	defer mf.Shutdown()
	defer cancel()
	waitSynced(func(stop <-chan struct{}) { mf.WaitForCacheSync(stop) })
	missing = missing[:0]
	for gvr, ok := range metaSynced {
		if !ok() {
			missing = append(missing, gvr.String())
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("metadata informers that never synced:\n%s", strings.Join(missing, "\n"))
	}
}
