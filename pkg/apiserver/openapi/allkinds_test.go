package openapi

import (
	"encoding/json"
	"reflect"
	"sort"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	networkingv1 "k8s.io/api/networking/v1"
	nodev1 "k8s.io/api/node/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/spec3"
)

// TestManyKubernetesKinds builds documents for every kind of the stable
// k8s.io/api groups, far more than kplane serves, to show the reflection
// handles whatever the server may add: every document must convert to
// protobuf (New checks) and yield a managed-fields type converter.
func TestManyKubernetesKinds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds documents for all stable Kubernetes kinds; skipped under -short")
	}
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		admissionregistrationv1.AddToScheme, appsv1.AddToScheme, autoscalingv2.AddToScheme, batchv1.AddToScheme,
		certificatesv1.AddToScheme, coordinationv1.AddToScheme, corev1.AddToScheme, discoveryv1.AddToScheme,
		eventsv1.AddToScheme, flowcontrolv1.AddToScheme, networkingv1.AddToScheme, nodev1.AddToScheme,
		policyv1.AddToScheme, rbacv1.AddToScheme, resourcev1.AddToScheme, schedulingv1.AddToScheme, storagev1.AddToScheme,
	} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	var kinds []Kind
	for gvk, typ := range scheme.AllKnownTypes() {
		if strings.HasSuffix(gvk.Kind, "List") {
			continue
		}
		listType, ok := scheme.AllKnownTypes()[gvk.GroupVersion().WithKind(gvk.Kind+"List")]
		if !ok {
			continue // options and other non-resource kinds
		}
		obj := reflect.New(typ).Interface().(runtime.Object)
		list := reflect.New(listType).Interface().(runtime.Object)
		kinds = append(kinds, Kind{
			GVK: gvk, Resource: strings.ToLower(gvk.Kind) + "s", Namespaced: true,
			Object: obj, List: list, Subresources: []string{"status"},
		})
	}
	sort.Slice(kinds, func(i, j int) bool { return kinds[i].GVK.String() < kinds[j].GVK.String() })
	if len(kinds) < 50 {
		t.Fatalf("only %d kinds found", len(kinds))
	}
	d, err := New(Config{Kinds: kinds})
	if err != nil {
		t.Fatalf("New over %d kinds: %v", len(kinds), err)
	}
	t.Logf("%d kinds, v2 document %d bytes", len(kinds), len(d.v2JSON.data))
	for key, doc := range d.v3 {
		var s spec3.OpenAPI
		if err := json.Unmarshal(doc.json.data, &s); err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if _, err := managedfields.NewTypeConverter(s.Components.Schemas, false); err != nil {
			t.Errorf("%s: type converter: %v", key, err)
		}
	}
}
