package compat

import (
	"context"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// typedClient is what client-go's generated clients of every resource
// offer.
type typedClient[T runtime.Object, L runtime.Object] interface {
	Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error)
	Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error)
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
}

// exercise creates obj (labelled), reads it back, lists it by label and
// by field selector on its name, watches from the list and sees its
// deletion.
func exercise[T interface {
	runtime.Object
	metav1.Object
}, L runtime.Object](t *testing.T, c typedClient[T, L], obj T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obj.SetLabels(map[string]string{"compat": "everyday"})
	created, err := c.Create(ctx, obj, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.GetUID() == "" || created.GetResourceVersion() == "" {
		t.Fatalf("created object lacks uid or resourceVersion: %v", created)
	}
	if _, err := c.Get(ctx, obj.GetName(), metav1.GetOptions{}); err != nil {
		t.Fatalf("get: %v", err)
	}
	list, err := c.List(ctx, metav1.ListOptions{LabelSelector: "compat=everyday", FieldSelector: "metadata.name=" + obj.GetName()})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	items, err := metaItems(list)
	if err != nil {
		t.Fatal(err)
	}
	if len(items.items) != 1 || items.items[0] != obj.GetName() {
		t.Fatalf("list by label and name found %v", items.items)
	}
	w, err := c.Watch(ctx, metav1.ListOptions{ResourceVersion: items.rv, FieldSelector: "metadata.name=" + obj.GetName()})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	if err := c.Delete(ctx, obj.GetName(), metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch ended before the deletion")
			}
			if ev.Type == watch.Deleted {
				return
			}
		case <-ctx.Done():
			t.Fatal("no DELETED event")
		}
	}
}

type listed struct {
	rv    string
	items []string
}

func metaItems(list runtime.Object) (listed, error) {
	var out listed
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return out, err
	}
	out.rv = lm.GetResourceVersion()
	objs, err := meta.ExtractList(list)
	if err != nil {
		return out, err
	}
	for _, o := range objs {
		out.items = append(out.items, o.(metav1.Object).GetName())
	}
	return out, nil
}

// client-go's typed clients create, read, list with label and field
// selectors, watch and delete every everyday kind kplane serves.
func TestClientsetEverydayKinds(t *testing.T) {
	s := startServer(t)
	cs := s.clientset(t)
	ns := "default"
	labels := map[string]string{"app": "web"}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
	}
	jobTemplate := template.DeepCopy()
	jobTemplate.Labels = nil
	jobTemplate.Spec.RestartPolicy = corev1.RestartPolicyNever
	om := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

	t.Run("services", func(t *testing.T) {
		exercise(t, cs.CoreV1().Services(ns), &corev1.Service{ObjectMeta: om("web"), Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Port: 80}}}})
	})
	t.Run("serviceaccounts", func(t *testing.T) {
		exercise(t, cs.CoreV1().ServiceAccounts(ns), &corev1.ServiceAccount{ObjectMeta: om("robot")})
	})
	t.Run("persistentvolumeclaims", func(t *testing.T) {
		exercise(t, cs.CoreV1().PersistentVolumeClaims(ns), &corev1.PersistentVolumeClaim{ObjectMeta: om("data"), Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		}})
	})
	t.Run("statefulsets", func(t *testing.T) {
		exercise(t, cs.AppsV1().StatefulSets(ns), &appsv1.StatefulSet{ObjectMeta: om("db"), Spec: appsv1.StatefulSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template, ServiceName: "db"}})
	})
	t.Run("daemonsets", func(t *testing.T) {
		exercise(t, cs.AppsV1().DaemonSets(ns), &appsv1.DaemonSet{ObjectMeta: om("agent"), Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: template}})
	})
	t.Run("jobs", func(t *testing.T) {
		exercise(t, cs.BatchV1().Jobs(ns), &batchv1.Job{ObjectMeta: om("migrate"), Spec: batchv1.JobSpec{Template: *jobTemplate}})
	})
	t.Run("cronjobs", func(t *testing.T) {
		exercise(t, cs.BatchV1().CronJobs(ns), &batchv1.CronJob{ObjectMeta: om("nightly"), Spec: batchv1.CronJobSpec{
			Schedule: "0 3 * * *", JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: *jobTemplate}}}})
	})
	t.Run("endpointslices", func(t *testing.T) {
		exercise(t, cs.DiscoveryV1().EndpointSlices(ns), &discoveryv1.EndpointSlice{ObjectMeta: om("web-abc"), AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}}, Ports: []discoveryv1.EndpointPort{{Port: ptr.To[int32](80)}}})
	})
	t.Run("roles", func(t *testing.T) {
		exercise(t, cs.RbacV1().Roles(ns), &rbacv1.Role{ObjectMeta: om("reader"), Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get"}}}})
	})
	t.Run("rolebindings", func(t *testing.T) {
		exercise(t, cs.RbacV1().RoleBindings(ns), &rbacv1.RoleBinding{ObjectMeta: om("reader"),
			RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "reader"},
			Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "robot", Namespace: ns}}})
	})
	t.Run("clusterroles", func(t *testing.T) {
		exercise(t, cs.RbacV1().ClusterRoles(), &rbacv1.ClusterRole{ObjectMeta: om("compat-reader"), Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/healthz"}, Verbs: []string{"get"}}}})
	})
	t.Run("ingresses", func(t *testing.T) {
		prefix := networkingv1.PathTypePrefix
		exercise(t, cs.NetworkingV1().Ingresses(ns), &networkingv1.Ingress{ObjectMeta: om("web"), Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
			Host: "shop.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{
				Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "web", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}})
	})
	t.Run("networkpolicies", func(t *testing.T) {
		exercise(t, cs.NetworkingV1().NetworkPolicies(ns), &networkingv1.NetworkPolicy{ObjectMeta: om("web"), Spec: networkingv1.NetworkPolicySpec{PodSelector: metav1.LabelSelector{MatchLabels: labels}}})
	})
	t.Run("poddisruptionbudgets", func(t *testing.T) {
		one := intstr.FromInt32(1)
		exercise(t, cs.PolicyV1().PodDisruptionBudgets(ns), &policyv1.PodDisruptionBudget{ObjectMeta: om("web"), Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: labels}}})
	})
	t.Run("horizontalpodautoscalers v2", func(t *testing.T) {
		exercise(t, cs.AutoscalingV2().HorizontalPodAutoscalers(ns), &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: om("web"), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, MaxReplicas: 5}})
	})
	t.Run("horizontalpodautoscalers v1", func(t *testing.T) {
		exercise(t, cs.AutoscalingV1().HorizontalPodAutoscalers(ns), &autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: om("web-v1"), Spec: autoscalingv1.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv1.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, MaxReplicas: 5, TargetCPUUtilizationPercentage: ptr.To[int32](70)}})
	})
	t.Run("priorityclasses", func(t *testing.T) {
		exercise(t, cs.SchedulingV1().PriorityClasses(), &schedulingv1.PriorityClass{ObjectMeta: om("compat-high"), Value: 1000})
	})
	t.Run("storageclasses", func(t *testing.T) {
		exercise(t, cs.StorageV1().StorageClasses(), &storagev1.StorageClass{ObjectMeta: om("compat-fast"), Provisioner: "example.com/fast"})
	})
	t.Run("validatingwebhookconfigurations", func(t *testing.T) {
		none := admissionregistrationv1.SideEffectClassNone
		exercise(t, cs.AdmissionregistrationV1().ValidatingWebhookConfigurations(), &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: om("compat-hook"),
			Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "check.example.com", SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
				ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: ptr.To("https://hooks.example.com/check")}}}})
	})
}
