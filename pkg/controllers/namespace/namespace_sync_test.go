package namespace

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kplane/kplane/pkg/client"
)

func TestConditions(t *testing.T) {
	now := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	deploys := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	for _, tc := range []struct {
		name string
		in   contentResult
		want map[corev1.NamespaceConditionType]string // status/reason/message
	}{
		{
			name: "empty",
			in:   contentResult{},
			want: map[corev1.NamespaceConditionType]string{
				corev1.NamespaceDeletionDiscoveryFailure: "False/ResourcesDiscovered/All resources successfully discovered",
				corev1.NamespaceDeletionGVParsingFailure: "False/ParsedGroupVersions/All legacy kube types successfully parsed",
				corev1.NamespaceDeletionContentFailure:   "False/ContentDeleted/All content successfully deleted, may be waiting on finalization",
				corev1.NamespaceContentRemaining:         "False/ContentRemoved/All content successfully removed",
				corev1.NamespaceFinalizersRemaining:      "False/ContentHasNoFinalizers/All content-preserving finalizers finished",
			},
		},
		{
			name: "remaining and failing",
			in: contentResult{
				errs:       []error{errors.New("list leases: boom")},
				remaining:  map[schema.GroupVersionResource]int{pods: 2, deploys: 1},
				finalizers: map[string]int{"b.io/x": 1, "a.io/y": 3},
			},
			want: map[corev1.NamespaceConditionType]string{
				corev1.NamespaceDeletionDiscoveryFailure: "False/ResourcesDiscovered/All resources successfully discovered",
				corev1.NamespaceDeletionGVParsingFailure: "False/ParsedGroupVersions/All legacy kube types successfully parsed",
				corev1.NamespaceDeletionContentFailure:   "True/ContentDeletionFailed/Failed to delete all resource types, 1 remaining: list leases: boom",
				corev1.NamespaceContentRemaining:         "True/SomeResourcesRemain/Some resources are remaining: deployments.apps has 1 resource instances, pods. has 2 resource instances",
				corev1.NamespaceFinalizersRemaining:      "True/SomeFinalizersRemain/Some content in the namespace has finalizers remaining: a.io/y in 3 resource instances, b.io/x in 1 resource instances",
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := map[corev1.NamespaceConditionType]string{}
			for _, c := range tc.in.conditions(now) {
				if !c.LastTransitionTime.Equal(&now) {
					t.Errorf("%s stamped %v", c.Type, c.LastTransitionTime)
				}
				got[c.Type] = string(c.Status) + "/" + c.Reason + "/" + c.Message
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMergeConditionsKeepsTransitionTimes(t *testing.T) {
	then := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := metav1.NewTime(then.Add(time.Hour))
	current := contentResult{}.conditions(then)
	if _, changed := mergeConditions(current, contentResult{}.conditions(now)); changed {
		t.Error("same conditions reported as changed")
	}
	want := contentResult{remaining: map[schema.GroupVersionResource]int{{Version: "v1", Resource: "pods"}: 1}}.conditions(now)
	merged, changed := mergeConditions(current, want)
	if !changed {
		t.Fatal("new remaining content not reported as changed")
	}
	for _, c := range merged {
		wantTime := then
		if c.Type == corev1.NamespaceContentRemaining {
			wantTime = now
		}
		if !c.LastTransitionTime.Equal(&wantTime) {
			t.Errorf("%s: transition time %v, want %v", c.Type, c.LastTransitionTime, wantTime)
		}
	}
	if len(merged) != len(current) {
		t.Errorf("merged %d conditions, want %d", len(merged), len(current))
	}
	if _, changed := mergeConditions(nil, want); !changed {
		t.Error("conditions added to none not reported as changed")
	}
}

func TestNewValidates(t *testing.T) {
	if _, err := New(Config{}); err == nil {
		t.Error("New without a client succeeded")
	}
}

func TestCollectionPath(t *testing.T) {
	for _, tc := range []struct {
		gvr  schema.GroupVersionResource
		want string
	}{
		{schema.GroupVersionResource{Version: "v1", Resource: "pods"}, "/api/v1/namespaces/ns/pods"},
		{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "/apis/apps/v1/namespaces/ns/deployments"},
	} {
		if got := client.CollectionPath(tc.gvr, "ns"); got != tc.want {
			t.Errorf("CollectionPath(%v) = %q, want %q", tc.gvr, got, tc.want)
		}
	}
}

func TestDefaultResources(t *testing.T) {
	got := map[string]bool{}
	for _, gvr := range DefaultResources() {
		got[gvr.GroupResource().String()] = true
	}
	for _, want := range []string{"pods", "configmaps", "secrets", "events", "deployments.apps", "replicasets.apps", "leases.coordination.k8s.io"} {
		if !got[want] {
			t.Errorf("default resources lack %s: %v", want, got)
		}
	}
	for _, never := range []string{"namespaces", "nodes"} {
		if got[never] {
			t.Errorf("default resources hold cluster-scoped %s", never)
		}
	}
}
