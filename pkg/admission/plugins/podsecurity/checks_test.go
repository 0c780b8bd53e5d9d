package podsecurity

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// restrictedPod passes every check of every level.
func restrictedPod(mutate ...func(*corev1.Pod)) *corev1.Pod {
	secure := func(name string) corev1.Container {
		return corev1.Container{Name: name, Image: "img", SecurityContext: &corev1.SecurityContext{
			AllowPrivilegeEscalation: ptr.To(false),
			Capabilities:             &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
		}}
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot:   ptr.To(true),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{secure("a"), secure("b")},
		},
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func sc(p *corev1.Pod, i int) *corev1.SecurityContext { return p.Spec.Containers[i].SecurityContext }

func lv(level Level, v string) levelVersion {
	ver, err := parseVersion(v)
	if err != nil {
		panic(err)
	}
	return levelVersion{level, ver}
}

func TestChecks(t *testing.T) {
	tests := []struct {
		name  string
		at    levelVersion
		pod   *corev1.Pod
		wantR string // the reasons with their details, "" for allowed
	}{
		{"a restricted pod passes restricted", lv(Restricted, "latest"), restrictedPod(), ""},
		{"privileged allows anything", lv(Privileged, "latest"), restrictedPod(func(p *corev1.Pod) { p.Spec.HostNetwork = true; sc(p, 0).Privileged = ptr.To(true) }), ""},
		{"a bare pod violates restricted as Kubernetes lists it", lv(Restricted, "latest"), &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}},
			`allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`},
		{"a bare pod passes baseline", lv(Baseline, "latest"), &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "i"}}}}, ""},
		{"hostProcess", lv(Baseline, "latest"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
			sc(p, 1).WindowsOptions = &corev1.WindowsSecurityContextOptions{HostProcess: ptr.To(true)}
		}), `hostProcess (pod and container "b" must not set securityContext.windowsOptions.hostProcess=true)`},
		{"host namespaces", lv(Baseline, "latest"), restrictedPod(func(p *corev1.Pod) { p.Spec.HostNetwork, p.Spec.HostPID, p.Spec.HostIPC = true, true, true }),
			`host namespaces (hostNetwork=true, hostPID=true, hostIPC=true)`},
		{"privileged containers", lv(Baseline, "latest"), restrictedPod(func(p *corev1.Pod) { sc(p, 0).Privileged = ptr.To(true); sc(p, 1).Privileged = ptr.To(true) }),
			`privileged (containers "a", "b" must not set securityContext.privileged=true)`},
		{"baseline capabilities beyond the default set", lv(Baseline, "latest"), restrictedPod(func(p *corev1.Pod) {
			sc(p, 0).Capabilities.Add = []corev1.Capability{"NET_RAW", "CHOWN", "SYS_ADMIN"}
		}), `non-default capabilities (container "a" must not include "NET_RAW", "SYS_ADMIN" in securityContext.capabilities.add)`},
		{"baseline allows default capabilities", lv(Baseline, "latest"), restrictedPod(func(p *corev1.Pod) { sc(p, 0).Capabilities.Add = []corev1.Capability{"CHOWN", "KILL"} }), ""},
		{"hostPath volumes", lv(Baseline, "latest"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}}
		}), `hostPath volumes (volume "h")`},
		{"host ports", lv(Baseline, "latest"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}, {ContainerPort: 81, HostPort: 80}}
			p.Spec.Containers[1].Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080}}
		}), `hostPort (containers "a", "b" use hostPorts 80, 8080)`},
		{"probe and lifecycle hosts", lv(Baseline, "latest"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.Containers[1].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: "b.com"}}}
			p.Spec.Containers[0].Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{TCPSocket: &corev1.TCPSocketAction{Host: "a.com"}}}
		}), `probe or lifecycle host (containers "a", "b" use probe or lifecycle hosts "a.com", "b.com")`},
		{"probe hosts are allowed before v1.34", lv(Baseline, "v1.33"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.Containers[1].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Host: "b.com"}}}
		}), ""},
		{"AppArmor profiles in fields and annotations", lv(Baseline, "latest"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.AppArmorProfile = &corev1.AppArmorProfile{Type: corev1.AppArmorProfileTypeUnconfined}
			p.Annotations = map[string]string{"container.apparmor.security.beta.kubernetes.io/a": "unconfined", "container.apparmor.security.beta.kubernetes.io/b": "runtime/default"}
		}), `forbidden AppArmor profiles (pod and annotation must not set AppArmor profile type to "Unconfined", "container.apparmor.security.beta.kubernetes.io/a="unconfined"")`},
		{"SELinux type, user and role", lv(Baseline, "latest"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Type: "foo", User: "u"}
			sc(p, 1).SELinuxOptions = &corev1.SELinuxOptions{Type: "bar", Role: "r"}
		}), `seLinuxOptions (pod and container "b" set forbidden securityContext.seLinuxOptions: types "bar", "foo"; user may not be set; role may not be set)`},
		{"container_engine_t is allowed from v1.31", lv(Baseline, "v1.31"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Type: "container_engine_t"}
		}), ""},
		{"container_engine_t is forbidden before v1.31", lv(Baseline, "v1.30"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.SELinuxOptions = &corev1.SELinuxOptions{Type: "container_engine_t"}
		}), `seLinuxOptions (pod set forbidden securityContext.seLinuxOptions: type "container_engine_t")`},
		{"unmasked /proc", lv(Baseline, "latest"), restrictedPod(func(p *corev1.Pod) { sc(p, 0).ProcMount = ptr.To(corev1.UnmaskedProcMount) }),
			`procMount (container "a" must not set securityContext.procMount to "Unmasked")`},
		{"baseline allows unmasked /proc in a user namespace from v1.35", lv(Baseline, "v1.35"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			sc(p, 0).ProcMount = ptr.To(corev1.UnmaskedProcMount)
		}), ""},
		{"baseline forbids unmasked /proc in a user namespace before v1.35", lv(Baseline, "v1.34"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			sc(p, 0).ProcMount = ptr.To(corev1.UnmaskedProcMount)
		}), `procMount (container "a" must not set securityContext.procMount to "Unmasked")`},
		{"restricted forbids unmasked /proc even in a user namespace", lv(Restricted, "latest"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			sc(p, 0).ProcMount = ptr.To(corev1.UnmaskedProcMount)
		}), `procMount (container "a" must not set securityContext.procMount to "Unmasked")`},
		{"seccomp Unconfined", lv(Baseline, "latest"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.SeccompProfile.Type = corev1.SeccompProfileTypeUnconfined
			sc(p, 1).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeUnconfined}
		}), `seccompProfile (pod and container "b" must not set securityContext.seccompProfile.type to "Unconfined")`},
		{"seccomp annotations before v1.19", lv(Baseline, "v1.18"), restrictedPod(func(p *corev1.Pod) {
			p.Annotations = map[string]string{"seccomp.security.alpha.kubernetes.io/pod": "unconfined", "container.seccomp.security.alpha.kubernetes.io/a": "runtime/default"}
		}), `seccompProfile (forbidden annotation seccomp.security.alpha.kubernetes.io/pod="unconfined")`},
		{"unsafe sysctls", lv(Baseline, "latest"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "kernel.msgmax"}, {Name: "net.ipv4.tcp_syncookies"}, {Name: "a.b"}}
		}), `forbidden sysctls (kernel.msgmax, a.b)`},
		{"sysctls allowed at v1.37 are forbidden at v1.36", lv(Baseline, "v1.36"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "net.ipv4.tcp_notsent_lowat"}, {Name: "net.ipv4.tcp_rmem"}}
		}), `forbidden sysctls (net.ipv4.tcp_notsent_lowat)`},
		{"sysctls allowed at v1.37 pass latest", lv(Baseline, "latest"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "net.ipv4.tcp_notsent_lowat"}}
		}), ""},
		{"privilege escalation", lv(Restricted, "latest"), restrictedPod(func(p *corev1.Pod) {
			sc(p, 0).AllowPrivilegeEscalation = nil
			sc(p, 1).AllowPrivilegeEscalation = ptr.To(true)
		}), `allowPrivilegeEscalation != false (containers "a", "b" must set securityContext.allowPrivilegeEscalation=false)`},
		{"restricted capabilities", lv(Restricted, "latest"), restrictedPod(func(p *corev1.Pod) {
			sc(p, 0).Capabilities = &corev1.Capabilities{Add: []corev1.Capability{"NET_BIND_SERVICE", "CHOWN"}}
		}), `unrestricted capabilities (container "a" must set securityContext.capabilities.drop=["ALL"]; container "a" must not include "CHOWN" in securityContext.capabilities.add)`},
		{"restricted volume types replace the hostPath check", lv(Restricted, "latest"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.Volumes = []corev1.Volume{
				{Name: "h", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/"}}},
				{Name: "ok", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
				{Name: "n", VolumeSource: corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/"}}},
			}
		}), `restricted volume types (volumes "h", "n" use restricted volume types "hostPath", "nfs")`},
		{"runAsNonRoot false", lv(Restricted, "latest"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.RunAsNonRoot = ptr.To(false)
			sc(p, 0).RunAsNonRoot = ptr.To(false)
		}), `runAsNonRoot != true (pod and container "a" must not set securityContext.runAsNonRoot=false)`},
		{"runAsNonRoot is not needed in a user namespace from v1.35", lv(Restricted, "latest"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.HostUsers = ptr.To(false)
			p.Spec.SecurityContext.RunAsNonRoot = nil
			p.Spec.SecurityContext.RunAsUser = ptr.To[int64](0)
		}), ""},
		{"runAsUser 0", lv(Restricted, "latest"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.RunAsUser = ptr.To[int64](0)
			sc(p, 1).RunAsUser = ptr.To[int64](0)
		}), `runAsUser=0 (pod and container "b" must not set runAsUser=0)`},
		{"runAsUser is not checked before v1.23", lv(Restricted, "v1.22"), restrictedPod(func(p *corev1.Pod) { p.Spec.SecurityContext.RunAsUser = ptr.To[int64](0) }), ""},
		{"seccomp must be set for restricted", lv(Restricted, "latest"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.SecurityContext.SeccompProfile = nil
			sc(p, 1).SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}
		}), `seccompProfile (pod or container "a" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")`},
		{"windows pods skip the Linux-only restricted checks from v1.25", lv(Restricted, "latest"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
			p.Spec.SecurityContext.SeccompProfile = nil
			sc(p, 0).AllowPrivilegeEscalation = nil
			sc(p, 0).Capabilities = nil
		}), ""},
		{"windows pods are checked fully before v1.25", lv(Restricted, "v1.24"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.OS = &corev1.PodOS{Name: corev1.Windows}
			sc(p, 0).AllowPrivilegeEscalation = nil
		}), `allowPrivilegeEscalation != false (container "a" must set securityContext.allowPrivilegeEscalation=false)`},
		{"init and ephemeral containers are checked, init first", lv(Baseline, "latest"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "init", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}
			p.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debug", SecurityContext: &corev1.SecurityContext{Privileged: ptr.To(true)}}}}
			sc(p, 0).Privileged = ptr.To(true)
		}), `privileged (containers "init", "a", "debug" must not set securityContext.privileged=true)`},
		{"baseline violations come before restricted ones", lv(Restricted, "latest"), restrictedPod(func(p *corev1.Pod) {
			p.Spec.HostPID = true
			sc(p, 0).AllowPrivilegeEscalation = nil
			sc(p, 0).Privileged = ptr.To(true)
		}), `host namespaces (hostPID=true), privileged (container "a" must not set securityContext.privileged=true), allowPrivilegeEscalation != false (container "a" must set securityContext.allowPrivilegeEscalation=false)`},
		{"a version past the newest checks evaluates as the newest", lv(Restricted, "v1.99"), restrictedPod(func(p *corev1.Pod) { sc(p, 0).AllowPrivilegeEscalation = nil }),
			`allowPrivilegeEscalation != false (container "a" must set securityContext.allowPrivilegeEscalation=false)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := evaluate(tt.at, &tt.pod.ObjectMeta, &tt.pod.Spec)
			if got := r.detail(); got != tt.wantR {
				t.Errorf("at %s:\n got %s\nwant %s", tt.at, got, tt.wantR)
			}
			if r.allowed() != (tt.wantR == "") {
				t.Errorf("allowed = %v", r.allowed())
			}
		})
	}
}

func TestPolicyOf(t *testing.T) {
	tests := []struct {
		name                 string
		labels               map[string]string
		enforce, audit, warn string
		errs                 int
	}{
		{"unlabelled is privileged", nil, "privileged:latest", "privileged:latest", "privileged:latest", 0},
		{"warn follows a stricter enforce", map[string]string{EnforceLevelLabel: "baseline", EnforceVersionLabel: "v1.30"}, "baseline:v1.30", "privileged:latest", "baseline:v1.30", 0},
		{"a labelled warn is kept", map[string]string{EnforceLevelLabel: "restricted", WarnLevelLabel: "baseline"}, "restricted:latest", "privileged:latest", "baseline:latest", 0},
		{"an invalid enforce level fails closed", map[string]string{EnforceLevelLabel: "strict"}, "restricted:latest", "privileged:latest", "privileged:latest", 1},
		{"invalid audit and warn levels fail open", map[string]string{AuditLevelLabel: "x", WarnLevelLabel: "y"}, "privileged:latest", "privileged:latest", "privileged:latest", 2},
		{"an invalid version is latest", map[string]string{AuditLevelLabel: "baseline", AuditVersionLabel: "1.2"}, "privileged:latest", "baseline:latest", "privileged:latest", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, errs := policyOf(tt.labels)
			if p.enforce.String() != tt.enforce || p.audit.String() != tt.audit || p.warn.String() != tt.warn {
				t.Errorf("got enforce=%s audit=%s warn=%s", p.enforce, p.audit, p.warn)
			}
			if len(errs) != tt.errs {
				t.Errorf("errors %v, want %d", errs, tt.errs)
			}
		})
	}
}
