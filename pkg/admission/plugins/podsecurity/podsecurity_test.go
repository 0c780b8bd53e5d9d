package podsecurity

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/admission/admissiontest"
)

// source is a Source whose cache and store hold namespaces and pods.
func source(namespaces map[string]*corev1.Namespace, pods ...*corev1.Pod) *admissiontest.Source {
	src := &admissiontest.Source{}
	for _, ns := range namespaces {
		src.Add(namespaceGVR, ns)
	}
	for _, p := range pods {
		src.Add(podsGVR, p)
	}
	return src
}

func namespace(name string, labels map[string]string) *corev1.Namespace {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
}

func newPlugin(t testing.TB, src admission.Source) *Plugin {
	t.Helper()
	p, err := New(&admission.Config{Source: src})
	if err != nil {
		t.Fatal(err)
	}
	return p.(*Plugin)
}

func bare(name, ns string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
}

func podAttrs(op admission.Operation, sub string, pod, old *corev1.Pod) *admission.Attributes {
	a := &admission.Attributes{Operation: op, Resource: podsGVR, Subresource: sub, Namespace: pod.Namespace, Name: pod.Name, Object: pod}
	if old != nil {
		a.OldObject = old
	}
	return a
}

const bareRestricted = `allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`

func TestPods(t *testing.T) {
	src := source(map[string]*corev1.Namespace{
		"open":       namespace("open", nil),
		"restricted": namespace("restricted", map[string]string{EnforceLevelLabel: "restricted"}),
		"baseline-warn-restricted": namespace("baseline-warn-restricted", map[string]string{
			EnforceLevelLabel: "baseline", WarnLevelLabel: "restricted", AuditLevelLabel: "restricted", AuditVersionLabel: "v1.30",
		}),
		"invalid": namespace("invalid", map[string]string{EnforceLevelLabel: "strict"}),
	})
	hostNet := bare("h", "baseline-warn-restricted")
	hostNet.Spec.HostNetwork = true
	withImage := func(p *corev1.Pod, image string) *corev1.Pod {
		p = p.DeepCopy()
		p.Spec.Containers[0].Image = image
		return p
	}
	tests := []struct {
		name            string
		a               *admission.Attributes
		wantErr         string
		wantWarnings    []string
		wantAnnotations map[string]string
	}{{
		name:            "a privileged namespace admits anything and records privileged:latest",
		a:               podAttrs(admission.Create, "", bare("p", "open"), nil),
		wantAnnotations: map[string]string{EnforcePolicyAnnotation: "privileged:latest"},
	}, {
		name:            "enforce restricted refuses a bare pod with Kubernetes' message",
		a:               podAttrs(admission.Create, "", bare("x", "restricted"), nil),
		wantErr:         `pods "x" is forbidden: violates PodSecurity "restricted:latest": ` + bareRestricted,
		wantAnnotations: map[string]string{EnforcePolicyAnnotation: "restricted:latest"},
	}, {
		name:            "a restricted pod is admitted without warnings",
		a:               podAttrs(admission.Create, "", restrictedPod(func(p *corev1.Pod) { p.Namespace = "restricted" }), nil),
		wantAnnotations: map[string]string{EnforcePolicyAnnotation: "restricted:latest"},
	}, {
		name:         "warn and audit report what enforce allows",
		a:            podAttrs(admission.Create, "", bare("p", "baseline-warn-restricted"), nil),
		wantWarnings: []string{`would violate PodSecurity "restricted:latest": ` + bareRestricted},
		wantAnnotations: map[string]string{
			EnforcePolicyAnnotation:   "baseline:latest",
			AuditViolationsAnnotation: `would violate PodSecurity "restricted:v1.30": ` + bareRestricted,
		},
	}, {
		name:    "a refused pod gets no warning but is audited",
		a:       podAttrs(admission.Create, "", hostNet, nil),
		wantErr: `pods "h" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true)`,
		wantAnnotations: map[string]string{
			EnforcePolicyAnnotation:   "baseline:latest",
			AuditViolationsAnnotation: `would violate PodSecurity "restricted:v1.30": host namespaces (hostNetwork=true), ` + bareRestricted,
		},
	}, {
		name:    "an invalid enforce label enforces restricted and is recorded",
		a:       podAttrs(admission.Create, "", bare("x", "invalid"), nil),
		wantErr: `pods "x" is forbidden: violates PodSecurity "restricted:latest": ` + bareRestricted,
		wantAnnotations: map[string]string{
			EnforcePolicyAnnotation: "restricted:latest",
			ErrorAnnotation:         `Failed to parse policy: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted`,
		},
	}, {
		name: "an update changing no image is not checked",
		a: podAttrs(admission.Update, "", func() *corev1.Pod {
			p := bare("x", "restricted")
			p.Labels = map[string]string{"a": "b"}
			return p
		}(), bare("x", "restricted")),
	}, {
		name:            "an update changing an image is checked",
		a:               podAttrs(admission.Update, "", withImage(bare("x", "restricted"), "j"), bare("x", "restricted")),
		wantErr:         `pods "x" is forbidden: violates PodSecurity "restricted:latest": ` + bareRestricted,
		wantAnnotations: map[string]string{EnforcePolicyAnnotation: "restricted:latest"},
	}, {
		name: "adding an ephemeral container is checked",
		a: podAttrs(admission.Update, "ephemeralcontainers", func() *corev1.Pod {
			p := restrictedPod(func(p *corev1.Pod) { p.Namespace = "restricted" })
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", Image: "busybox"}}}
			return p
		}(), restrictedPod(func(p *corev1.Pod) { p.Namespace = "restricted" })),
		wantErr:         `pods "p" is forbidden: violates PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "debug" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "debug" must set securityContext.capabilities.drop=["ALL"])`,
		wantAnnotations: map[string]string{EnforcePolicyAnnotation: "restricted:latest"},
	}, {
		name: "the status subresource is not checked",
		a:    podAttrs(admission.Update, "status", withImage(bare("x", "restricted"), "j"), bare("x", "restricted")),
	}, {
		name:    "a namespace that cannot be read is an internal error",
		a:       podAttrs(admission.Create, "", bare("x", "gone"), nil),
		wantErr: `Internal error occurred: failed to lookup namespace "gone"`,
		wantAnnotations: map[string]string{
			ErrorAnnotation: `Internal error occurred: failed to lookup namespace "gone": namespaces "gone" not found`,
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := newPlugin(t, src).Validate(context.Background(), tt.a)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("admitted, want %s", tt.wantErr)
			case tt.wantErr != "" && err.Error() != tt.wantErr:
				t.Errorf("message:\n got %s\nwant %s", err, tt.wantErr)
			}
			if tt.wantErr != "" && tt.a.Namespace != "gone" && !apierrors.IsForbidden(err) {
				t.Errorf("not 403 Forbidden: %#v", err)
			}
			if diff := cmp.Diff(tt.wantWarnings, tt.a.Warnings()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
			want := tt.wantAnnotations
			if want == nil {
				want = map[string]string{}
			}
			if diff := cmp.Diff(want, tt.a.Annotations()); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodTemplatesAreWarnedNeverRefused(t *testing.T) {
	src := source(map[string]*corev1.Namespace{
		"restricted": namespace("restricted", map[string]string{EnforceLevelLabel: "restricted"}),
		"enforced":   namespace("enforced", map[string]string{EnforceLevelLabel: "restricted", WarnLevelLabel: "privileged"}),
	})
	deploy := func(ns string) *appsv1.Deployment {
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "d"},
			Spec: appsv1.DeploymentSpec{Template: corev1.PodTemplateSpec{Spec: bare("", ns).Spec}}}
	}
	gvr := appsv1.SchemeGroupVersion.WithResource("deployments")
	a := &admission.Attributes{Operation: admission.Create, Resource: gvr, Namespace: "restricted", Name: "d", Object: deploy("restricted")}
	if err := newPlugin(t, src).Validate(context.Background(), a); err != nil {
		t.Fatalf("a Deployment was refused: %v", err)
	}
	if diff := cmp.Diff([]string{`would violate PodSecurity "restricted:latest": ` + bareRestricted}, a.Warnings()); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
	if _, ok := a.Annotations()[EnforcePolicyAnnotation]; ok {
		t.Errorf("a template recorded an enforced policy: %v", a.Annotations())
	}
	// Enforce alone does not even warn about templates.
	b := &admission.Attributes{Operation: admission.Create, Resource: gvr, Namespace: "enforced", Name: "d", Object: deploy("enforced")}
	if err := newPlugin(t, src).Validate(context.Background(), b); err != nil || len(b.Warnings()) != 0 {
		t.Errorf("got %v, warnings %v; want neither", err, b.Warnings())
	}
}

func nsAttrs(op admission.Operation, ns, old *corev1.Namespace) *admission.Attributes {
	a := &admission.Attributes{Operation: op, Kind: corev1.SchemeGroupVersion.WithKind("Namespace"), Resource: namespaceGVR, Name: ns.Name, Object: ns}
	if old != nil {
		a.OldObject = old
	}
	return a
}

func TestNamespaceLabels(t *testing.T) {
	owned := func(name, uid string, mutate func(*corev1.Pod)) *corev1.Pod {
		p := bare(name, "ns")
		if uid != "" {
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "rs", UID: types.UID(uid), Controller: ptr.To(true)}}
		}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	src := source(nil,
		owned("web-2", "rs1", nil),
		owned("web-1", "rs1", nil),
		owned("web-3", "rs1", nil),
		owned("net", "", func(p *corev1.Pod) { p.Spec.HostNetwork = true }),
		restrictedPod(func(p *corev1.Pod) { p.Namespace = "ns"; p.Name = "good" }),
		bare("other-ns", "elsewhere"),
	)
	tests := []struct {
		name         string
		a            *admission.Attributes
		wantErr      string
		wantWarnings []string
	}{{
		name:    "creating a namespace with an invalid level is refused",
		a:       nsAttrs(admission.Create, namespace("ns", map[string]string{EnforceLevelLabel: "strict", WarnVersionLabel: "1.2"}), nil),
		wantErr: `Namespace "ns" is invalid: [metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted, metadata.labels[pod-security.kubernetes.io/warn-version]: Invalid value: "1.2": must be "latest" or "v1.x"]`,
	}, {
		name: "creating a namespace with valid labels is admitted",
		a:    nsAttrs(admission.Create, namespace("ns", map[string]string{EnforceLevelLabel: "restricted", EnforceVersionLabel: "v1.30"}), nil),
	}, {
		name:    "an update making a label invalid is refused",
		a:       nsAttrs(admission.Update, namespace("ns", map[string]string{AuditLevelLabel: "x"}), namespace("ns", nil)),
		wantErr: `Namespace "ns" is invalid: metadata.labels[pod-security.kubernetes.io/audit]: Invalid value: "x": must be one of privileged, baseline, restricted`,
	}, {
		name: "an update keeping a label invalid the same way is admitted",
		a:    nsAttrs(admission.Update, namespace("ns", map[string]string{AuditLevelLabel: "x", "team": "a"}), namespace("ns", map[string]string{AuditLevelLabel: "x"})),
	}, {
		name: "tightening enforce warns about the existing pods, one line per reason set",
		a:    nsAttrs(admission.Update, namespace("ns", map[string]string{EnforceLevelLabel: "restricted"}), namespace("ns", nil)),
		wantWarnings: []string{
			`existing pods in namespace "ns" violate the new PodSecurity enforce level "restricted:latest"`,
			`net: host namespaces, allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile`,
			`web-1 (and 2 other pods): allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile`,
		},
	}, {
		name: "tightening to baseline names the one violating pod",
		a:    nsAttrs(admission.Update, namespace("ns", map[string]string{EnforceLevelLabel: "baseline"}), namespace("ns", nil)),
		wantWarnings: []string{
			`existing pods in namespace "ns" violate the new PodSecurity enforce level "baseline:latest"`,
			`net: host namespaces`,
		},
	}, {
		name: "loosening enforce at the same version checks nothing",
		a:    nsAttrs(admission.Update, namespace("ns", map[string]string{EnforceLevelLabel: "baseline"}), namespace("ns", map[string]string{EnforceLevelLabel: "restricted"})),
	}, {
		name: "an unchanged enforce level checks nothing",
		a:    nsAttrs(admission.Update, namespace("ns", map[string]string{EnforceLevelLabel: "restricted", "x": "y"}), namespace("ns", map[string]string{EnforceLevelLabel: "restricted"})),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := newPlugin(t, src).Validate(context.Background(), tt.a)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.wantErr != "" && err == nil:
				t.Fatalf("admitted, want %s", tt.wantErr)
			case tt.wantErr != "":
				if err.Error() != tt.wantErr {
					t.Errorf("message:\n got %s\nwant %s", err, tt.wantErr)
				}
				if !apierrors.IsInvalid(err) {
					t.Errorf("not 422 Invalid: %#v", err)
				}
			}
			if diff := cmp.Diff(tt.wantWarnings, tt.a.Warnings()); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}

func TestExistingPodsCheckIsBounded(t *testing.T) {
	src := &admissiontest.Source{}
	for i := range MaxPodsToCheck + 5 {
		src.Add(podsGVR, bare(fmt.Sprintf("p%04d", i), "ns"))
	}
	a := nsAttrs(admission.Update, namespace("ns", map[string]string{EnforceLevelLabel: "restricted"}), namespace("ns", nil))
	if err := newPlugin(t, src).Validate(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	want := []string{
		fmt.Sprintf("new PodSecurity enforce level only checked against the first %d of %d existing pods", MaxPodsToCheck, MaxPodsToCheck+5),
		`existing pods in namespace "ns" violate the new PodSecurity enforce level "restricted:latest"`,
		fmt.Sprintf("p0000 (and %d other pods): allowPrivilegeEscalation != false, unrestricted capabilities, runAsNonRoot != true, seccompProfile", MaxPodsToCheck-1),
	}
	if diff := cmp.Diff(want, a.Warnings()); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestHandles(t *testing.T) {
	p := newPlugin(t, &admissiontest.Source{})
	if !p.Handles(admission.Create) || !p.Handles(admission.Update) || p.Handles(admission.Delete) || p.Handles(admission.Connect) {
		t.Error("PodSecurity handles CREATE and UPDATE only")
	}
}

// BenchmarkValidateRestrictedPod is the cost of admitting a pod that
// passes restricted, enforced, audited and warned.
func BenchmarkValidateRestrictedPod(b *testing.B) {
	src := source(map[string]*corev1.Namespace{"ns": namespace("ns", map[string]string{
		EnforceLevelLabel: "restricted", AuditLevelLabel: "restricted", WarnLevelLabel: "restricted",
	})})
	p := newPlugin(b, src)
	pod := restrictedPod()
	for b.Loop() {
		if err := p.Validate(context.Background(), podAttrs(admission.Create, "", pod, nil)); err != nil {
			b.Fatal(err)
		}
	}
}

func TestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	src := source(map[string]*corev1.Namespace{"ns": namespace("ns", map[string]string{EnforceLevelLabel: "restricted", AuditLevelLabel: "baseline", AuditVersionLabel: "v1.30"})})
	build := func() *Plugin {
		p, err := New(&admission.Config{Source: src, Metrics: reg})
		if err != nil {
			t.Fatal(err)
		}
		return p.(*Plugin)
	}
	// Two plugins on one registry share the counters.
	first, second := build(), build()
	pod := bare("x", "ns")
	pod.Spec.HostPID = true
	_ = first.Validate(context.Background(), podAttrs(admission.Create, "", pod, nil))
	_ = second.Validate(context.Background(), podAttrs(admission.Create, "", pod, nil))
	_ = first.Validate(context.Background(), podAttrs(admission.Create, "", bare("y", "gone"), nil))
	want := `
# HELP pod_security_errors_total Number of errors preventing normal evaluation. Non-fatal errors may result in the latest restricted profile being used for evaluation.
# TYPE pod_security_errors_total counter
pod_security_errors_total{fatal="true",request_operation="create",resource="pod",subresource=""} 1
# HELP pod_security_evaluations_total Number of policy evaluations that occurred, not counting ignored or exempt requests.
# TYPE pod_security_evaluations_total counter
pod_security_evaluations_total{decision="deny",mode="audit",policy_level="baseline",policy_version="v1.30",request_operation="create",resource="pod",subresource=""} 2
pod_security_evaluations_total{decision="deny",mode="enforce",policy_level="restricted",policy_version="latest",request_operation="create",resource="pod",subresource=""} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "pod_security_evaluations_total", "pod_security_errors_total"); err != nil {
		t.Error(err)
	}
}

func TestANamespaceTheCacheHasNotSeenIsReadFromTheStore(t *testing.T) {
	src := &admissiontest.Source{}
	src.AddUncached(namespaceGVR, namespace("new", map[string]string{EnforceLevelLabel: "baseline"}))
	pod := bare("x", "new")
	pod.Spec.HostIPC = true
	err := newPlugin(t, src).Validate(context.Background(), podAttrs(admission.Create, "", pod, nil))
	if want := `pods "x" is forbidden: violates PodSecurity "baseline:latest": host namespaces (hostIPC=true)`; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}
