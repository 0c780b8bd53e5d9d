package compat

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	autoscalingv1ac "k8s.io/client-go/applyconfigurations/autoscaling/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestManagedFieldsOfDeploymentCreateIncludeDefaults checks that the
// creator of a Deployment owns exactly the fields kube-apiserver lists for
// it, the defaulted ones included (and no enableServiceLinks, which
// kube-apiserver defaults in Pods only, never in pod templates).
func TestManagedFieldsOfDeploymentCreateIncludeDefaults(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	cfg := srv.restConfig()
	cfg.UserAgent = ""
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ua := strings.Split(rest.DefaultKubernetesUserAgent(), "/")[0]
	// A created Deployment: the creator owns the defaulted fields too.
	dep := deployment("web", 1)
	dep.Labels = map[string]string{"app": "web"}
	depCreated, err := cs.AppsV1().Deployments("default").Create(ctx, dep, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	checkManagedFields(t, depCreated)
	wantFieldSet(t, managedEntry(t, depCreated, ua, metav1.ManagedFieldsOperationUpdate, ""), `{
		"f:metadata":{"f:labels":{".":{},"f:app":{}}},
		"f:spec":{"f:progressDeadlineSeconds":{},"f:replicas":{},"f:revisionHistoryLimit":{},"f:selector":{},
			"f:strategy":{"f:rollingUpdate":{".":{},"f:maxSurge":{},"f:maxUnavailable":{}},"f:type":{}},
			"f:template":{"f:metadata":{"f:labels":{".":{},"f:app":{}}},
				"f:spec":{"f:containers":{"k:{\"name\":\"c\"}":{".":{},"f:image":{},"f:imagePullPolicy":{},"f:name":{},"f:resources":{},
					"f:terminationMessagePath":{},"f:terminationMessagePolicy":{}}},
					"f:dnsPolicy":{},"f:restartPolicy":{},"f:schedulerName":{},"f:securityContext":{},"f:terminationGracePeriodSeconds":{}}}}}`)

}

// TestApplyScaleWithoutNameInBody applies the scale subresource as
// client-go's ApplyScale is meant to be called, with the name only in the
// URL: kube-apiserver merges the body into the live Scale, so the merged
// object carries the name and checkName passes.
func TestApplyScaleWithoutNameInBody(t *testing.T) {
	ctx := context.Background()
	srv := startServer(t)
	deps := srv.clientset(t).AppsV1().Deployments("default")

	if _, err := deps.Apply(ctx, appsv1ac.Deployment("applyscaled", "default").WithSpec(webDeployment(false).Spec.WithReplicas(1)),
		metav1.ApplyOptions{FieldManager: "alice"}); err != nil {
		t.Fatal(err)
	}
	// alice gives replicas up, then the scaler applies them.
	noReplicas := webDeployment(false).WithName("applyscaled")
	noReplicas.Spec.Replicas = nil
	if _, err := deps.Apply(ctx, noReplicas, metav1.ApplyOptions{FieldManager: "alice"}); err != nil {
		t.Fatal(err)
	}
	scale, err := deps.ApplyScale(ctx, "applyscaled", autoscalingv1ac.Scale().WithSpec(autoscalingv1ac.ScaleSpec().WithReplicas(3)),
		metav1.ApplyOptions{FieldManager: "scaler"})
	if err != nil {
		t.Fatalf("apply scale: %v", err)
	}
	if scale.Spec.Replicas != 3 {
		t.Errorf("scale after apply: %+v", scale.Spec)
	}
	got, err := deps.Get(ctx, "applyscaled", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	wantFieldSet(t, managedEntry(t, got, "scaler", metav1.ManagedFieldsOperationApply, "scale"), `{"f:spec":{"f:replicas":{}}}`)
	extracted, err := appsv1ac.ExtractDeploymentScale(got, "scaler")
	if err != nil {
		t.Fatal(err)
	}
	want := appsv1ac.Deployment("applyscaled", "default").WithSpec(appsv1ac.DeploymentSpec().WithReplicas(3))
	if diff := cmp.Diff(want, extracted); diff != "" {
		t.Errorf("ExtractDeploymentScale (-want +got):\n%s", diff)
	}
}
