package podsecurity

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// checkFunc decides one rule for a pod at minor version v of the
// standards; an empty reason passes.
type checkFunc func(v int, meta *metav1.ObjectMeta, spec *corev1.PodSpec) (reason, detail string)

// check is one rule of a level.
type check struct {
	// id orders the checks of a level, as Kubernetes orders them.
	id    string
	level Level
	// since is the first minor version the check is part of its level.
	since int
	// replaces is the baseline check this restricted one takes the place
	// of at the restricted level, from since on.
	replaces string
	fn       checkFunc
}

// checks are the baseline checks then the restricted ones, each sorted by
// id: the order of the reasons in a message.
var checks = []check{
	{id: "appArmorProfile", level: Baseline, fn: checkAppArmor},
	{id: "capabilities_baseline", level: Baseline, fn: checkCapabilitiesBaseline},
	{id: "hostNamespaces", level: Baseline, fn: checkHostNamespaces},
	{id: "hostPathVolumes", level: Baseline, fn: checkHostPath},
	{id: "hostPorts", level: Baseline, fn: checkHostPorts},
	{id: "hostProbesAndHostLifecycle", level: Baseline, since: 34, fn: checkProbeHosts},
	{id: "privileged", level: Baseline, fn: checkPrivileged},
	{id: "procMount", level: Baseline, fn: checkProcMountBaseline},
	{id: "seLinuxOptions", level: Baseline, fn: checkSELinux},
	{id: "seccompProfile_baseline", level: Baseline, fn: checkSeccompBaseline},
	{id: "sysctls", level: Baseline, fn: checkSysctls},
	{id: "windowsHostProcess", level: Baseline, fn: checkHostProcess},

	{id: "allowPrivilegeEscalation", level: Restricted, since: 8, fn: checkPrivilegeEscalation},
	{id: "capabilities_restricted", level: Restricted, since: 22, replaces: "capabilities_baseline", fn: checkCapabilitiesRestricted},
	{id: "procMount_restricted", level: Restricted, since: 35, replaces: "procMount", fn: checkProcMountRestricted},
	{id: "restrictedVolumes", level: Restricted, replaces: "hostPathVolumes", fn: checkVolumes},
	{id: "runAsNonRoot", level: Restricted, fn: checkRunAsNonRoot},
	{id: "runAsUser", level: Restricted, since: 23, fn: checkRunAsUser},
	{id: "seccompProfile_restricted", level: Restricted, since: 19, replaces: "seccompProfile_baseline", fn: checkSeccompRestricted},
}

// evaluate runs the checks of lv on a pod.
func evaluate(lv levelVersion, meta *metav1.ObjectMeta, spec *corev1.PodSpec) result {
	var r result
	if lv.level == Privileged {
		return r
	}
	v := lv.version.effective()
	replaced := map[string]bool{}
	if lv.level == Restricted {
		for _, c := range checks {
			if c.level == Restricted && c.replaces != "" && v >= c.since {
				replaced[c.replaces] = true
			}
		}
	}
	for _, c := range checks {
		if v < c.since || replaced[c.id] || (c.level == Restricted && lv.level != Restricted) {
			continue
		}
		if reason, detail := c.fn(v, meta, spec); reason != "" {
			r.reasons = append(r.reasons, reason)
			r.details = append(r.details, detail)
		}
	}
	return r
}

// containers are the pod's init, app and ephemeral containers, in that
// order.
func containers(spec *corev1.PodSpec) []*corev1.Container {
	out := make([]*corev1.Container, 0, len(spec.InitContainers)+len(spec.Containers)+len(spec.EphemeralContainers))
	for i := range spec.InitContainers {
		out = append(out, &spec.InitContainers[i])
	}
	for i := range spec.Containers {
		out = append(out, &spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		out = append(out, (*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	return out
}

func quoted(items []string) string {
	if len(items) == 0 {
		return ""
	}
	return `"` + strings.Join(items, `", "`) + `"`
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

// named is `container "a"` or `containers "a", "b"`.
func named(noun string, names []string) string {
	return plural(len(names), noun, noun+"s") + " " + quoted(names)
}

// setters joins who set a value: "pod", then the containers.
func setters(pod bool, names []string) []string {
	var out []string
	if pod {
		out = append(out, "pod")
	}
	if len(names) > 0 {
		out = append(out, named("container", names))
	}
	return out
}

// sortedSet is the distinct values, sorted.
func sortedSet(values []string) []string {
	out := slices.Clone(values)
	sort.Strings(out)
	return slices.Compact(out)
}

func isWindows(spec *corev1.PodSpec) bool {
	return spec.OS != nil && spec.OS.Name == corev1.Windows
}

// inUserNamespace reports whether the pod runs in its own user namespace
// (hostUsers: false), which relaxes some checks from v1.35.
func inUserNamespace(spec *corev1.PodSpec) bool {
	return spec.HostUsers != nil && !*spec.HostUsers
}

func checkHostProcess(_ int, _ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	hostProcess := func(o *corev1.WindowsSecurityContextOptions) bool {
		return o != nil && o.HostProcess != nil && *o.HostProcess
	}
	pod := spec.SecurityContext != nil && hostProcess(spec.SecurityContext.WindowsOptions)
	var bad []string
	for _, c := range containers(spec) {
		if c.SecurityContext != nil && hostProcess(c.SecurityContext.WindowsOptions) {
			bad = append(bad, c.Name)
		}
	}
	if s := setters(pod, bad); len(s) > 0 {
		return "hostProcess", strings.Join(s, " and ") + " must not set securityContext.windowsOptions.hostProcess=true"
	}
	return "", ""
}

func checkHostNamespaces(_ int, _ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	var used []string
	if spec.HostNetwork {
		used = append(used, "hostNetwork=true")
	}
	if spec.HostPID {
		used = append(used, "hostPID=true")
	}
	if spec.HostIPC {
		used = append(used, "hostIPC=true")
	}
	if len(used) > 0 {
		return "host namespaces", strings.Join(used, ", ")
	}
	return "", ""
}

func checkPrivileged(_ int, _ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	var bad []string
	for _, c := range containers(spec) {
		if sc := c.SecurityContext; sc != nil && sc.Privileged != nil && *sc.Privileged {
			bad = append(bad, c.Name)
		}
	}
	if len(bad) > 0 {
		return "privileged", named("container", bad) + " must not set securityContext.privileged=true"
	}
	return "", ""
}

// defaultCapabilities are the capabilities a container runtime grants by
// default, which baseline lets containers add.
var defaultCapabilities = []string{
	"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD",
	"NET_BIND_SERVICE", "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT",
}

func checkCapabilitiesBaseline(_ int, _ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	var bad, caps []string
	for _, c := range containers(spec) {
		if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
			continue
		}
		found := false
		for _, cp := range c.SecurityContext.Capabilities.Add {
			if !slices.Contains(defaultCapabilities, string(cp)) {
				found = true
				caps = append(caps, string(cp))
			}
		}
		if found {
			bad = append(bad, c.Name)
		}
	}
	if len(bad) > 0 {
		return "non-default capabilities", fmt.Sprintf("%s must not include %s in securityContext.capabilities.add", named("container", bad), quoted(sortedSet(caps)))
	}
	return "", ""
}

func checkHostPath(_ int, _ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	var bad []string
	for _, v := range spec.Volumes {
		if v.HostPath != nil {
			bad = append(bad, v.Name)
		}
	}
	if len(bad) > 0 {
		return "hostPath volumes", named("volume", bad)
	}
	return "", ""
}

func checkHostPorts(_ int, _ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	var bad, ports []string
	for _, c := range containers(spec) {
		found := false
		for _, p := range c.Ports {
			if p.HostPort != 0 {
				found = true
				ports = append(ports, strconv.Itoa(int(p.HostPort)))
			}
		}
		if found {
			bad = append(bad, c.Name)
		}
	}
	if len(bad) > 0 {
		ports = sortedSet(ports)
		return "hostPort", fmt.Sprintf("%s %s %s %s", named("container", bad), plural(len(bad), "uses", "use"),
			plural(len(ports), "hostPort", "hostPorts"), strings.Join(ports, ", "))
	}
	return "", ""
}

func checkProbeHosts(_ int, _ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	var bad, hosts []string
	probe := func(p *corev1.Probe) []string {
		if p == nil {
			return nil
		}
		var out []string
		if p.HTTPGet != nil && p.HTTPGet.Host != "" {
			out = append(out, p.HTTPGet.Host)
		}
		if p.TCPSocket != nil && p.TCPSocket.Host != "" {
			out = append(out, p.TCPSocket.Host)
		}
		return out
	}
	handler := func(h *corev1.LifecycleHandler) []string {
		if h == nil {
			return nil
		}
		var out []string
		if h.HTTPGet != nil && h.HTTPGet.Host != "" {
			out = append(out, h.HTTPGet.Host)
		}
		if h.TCPSocket != nil && h.TCPSocket.Host != "" {
			out = append(out, h.TCPSocket.Host)
		}
		return out
	}
	for _, c := range containers(spec) {
		found := append(append(append([]string(nil), probe(c.LivenessProbe)...), probe(c.ReadinessProbe)...), probe(c.StartupProbe)...)
		if c.Lifecycle != nil {
			found = append(append(found, handler(c.Lifecycle.PostStart)...), handler(c.Lifecycle.PreStop)...)
		}
		if len(found) > 0 {
			bad = append(bad, c.Name)
			hosts = append(hosts, found...)
		}
	}
	if len(bad) > 0 {
		bad, hosts = sortedSet(bad), sortedSet(hosts)
		return "probe or lifecycle host", fmt.Sprintf("%s %s %s %s", named("container", bad), plural(len(bad), "uses", "use"),
			plural(len(hosts), "probe or lifecycle host", "probe or lifecycle hosts"), quoted(hosts))
	}
	return "", ""
}

func checkAppArmor(_ int, meta *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	allowedType := func(t corev1.AppArmorProfileType) bool {
		return t == corev1.AppArmorProfileTypeRuntimeDefault || t == corev1.AppArmorProfileTypeLocalhost
	}
	var who, values []string
	if sc := spec.SecurityContext; sc != nil && sc.AppArmorProfile != nil && !allowedType(sc.AppArmorProfile.Type) {
		who = append(who, "pod")
		values = append(values, string(sc.AppArmorProfile.Type))
	}
	var bad []string
	for _, c := range containers(spec) {
		if sc := c.SecurityContext; sc != nil && sc.AppArmorProfile != nil && !allowedType(sc.AppArmorProfile.Type) {
			bad = append(bad, c.Name)
			values = append(values, string(sc.AppArmorProfile.Type))
		}
	}
	if len(bad) > 0 {
		who = append(who, named("container", bad))
	}
	values = sortedSet(values)
	var annotations []string
	for k, v := range meta.Annotations {
		if !strings.HasPrefix(k, corev1.DeprecatedAppArmorBetaContainerAnnotationKeyPrefix) {
			continue
		}
		if v == "" || v == corev1.DeprecatedAppArmorBetaProfileRuntimeDefault || strings.HasPrefix(v, corev1.DeprecatedAppArmorBetaProfileNamePrefix) {
			continue
		}
		annotations = append(annotations, fmt.Sprintf("%s=%q", k, v))
	}
	if len(annotations) > 0 {
		sort.Strings(annotations)
		values = append(values, annotations...)
		who = append(who, plural(len(annotations), "annotation", "annotations"))
	}
	if len(who) > 0 {
		return plural(len(values), "forbidden AppArmor profile", "forbidden AppArmor profiles"),
			fmt.Sprintf("%s must not set AppArmor profile type to %s", strings.Join(who, " and "), quoted(values))
	}
	return "", ""
}

func checkSELinux(v int, _ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	allowed := []string{"", "container_t", "container_init_t", "container_kvm_t"}
	if v >= 31 {
		allowed = append(allowed, "container_engine_t")
	}
	var types []string
	user, role := false, false
	valid := func(o *corev1.SELinuxOptions) bool {
		ok := true
		if !slices.Contains(allowed, o.Type) {
			ok = false
			types = append(types, o.Type)
		}
		if o.User != "" {
			ok, user = false, true
		}
		if o.Role != "" {
			ok, role = false, true
		}
		return ok
	}
	pod := spec.SecurityContext != nil && spec.SecurityContext.SELinuxOptions != nil && !valid(spec.SecurityContext.SELinuxOptions)
	var bad []string
	for _, c := range containers(spec) {
		if c.SecurityContext != nil && c.SecurityContext.SELinuxOptions != nil && !valid(c.SecurityContext.SELinuxOptions) {
			bad = append(bad, c.Name)
		}
	}
	who := setters(pod, bad)
	if len(who) == 0 {
		return "", ""
	}
	var what []string
	if types = sortedSet(types); len(types) > 0 {
		what = append(what, named("type", types))
	}
	if user {
		what = append(what, "user may not be set")
	}
	if role {
		what = append(what, "role may not be set")
	}
	return "seLinuxOptions", fmt.Sprintf("%s set forbidden securityContext.seLinuxOptions: %s", strings.Join(who, " and "), strings.Join(what, "; "))
}

// procMounts lists the containers asking for a /proc other than the
// default, and the types they ask for.
func procMounts(spec *corev1.PodSpec) (string, string) {
	var bad, types []string
	for _, c := range containers(spec) {
		if sc := c.SecurityContext; sc != nil && sc.ProcMount != nil && *sc.ProcMount != corev1.DefaultProcMount {
			bad = append(bad, c.Name)
			types = append(types, string(*sc.ProcMount))
		}
	}
	if len(bad) > 0 {
		return "procMount", fmt.Sprintf("%s must not set securityContext.procMount to %s", named("container", bad), quoted(sortedSet(types)))
	}
	return "", ""
}

func checkProcMountBaseline(v int, _ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	if v >= 35 && inUserNamespace(spec) {
		return "", ""
	}
	return procMounts(spec)
}

func checkProcMountRestricted(_ int, _ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	return procMounts(spec)
}

const (
	seccompPodAnnotation             = "seccomp.security.alpha.kubernetes.io/pod"
	seccompContainerAnnotationPrefix = "container.seccomp.security.alpha.kubernetes.io/"
)

func validSeccomp(t corev1.SeccompProfileType) bool {
	return t == corev1.SeccompProfileTypeRuntimeDefault || t == corev1.SeccompProfileTypeLocalhost
}

func checkSeccompBaseline(v int, meta *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	if v < 19 {
		// Before v1.19 the profiles were annotations.
		validValue := func(s string) bool {
			return s == corev1.SeccompProfileRuntimeDefault || s == corev1.DeprecatedSeccompProfileDockerDefault ||
				strings.HasPrefix(s, corev1.SeccompLocalhostProfileNamePrefix)
		}
		var bad []string
		if s, ok := meta.Annotations[seccompPodAnnotation]; ok && !validValue(s) {
			bad = append(bad, fmt.Sprintf("%s=%q", seccompPodAnnotation, s))
		}
		for _, c := range containers(spec) {
			key := seccompContainerAnnotationPrefix + c.Name
			if s, ok := meta.Annotations[key]; ok && !validValue(s) {
				bad = append(bad, fmt.Sprintf("%s=%q", key, s))
			}
		}
		if len(bad) > 0 {
			bad = sortedSet(bad)
			return "seccompProfile", fmt.Sprintf("forbidden %s %s", plural(len(bad), "annotation", "annotations"), strings.Join(bad, ", "))
		}
		return "", ""
	}
	reason, detail, _ := seccompProfiles(spec)
	return reason, detail
}

// seccompProfiles reports the pod and containers setting a forbidden
// seccomp profile type, and the containers that set none while the pod
// does not either.
func seccompProfiles(spec *corev1.PodSpec) (reason, detail string, unset []string) {
	var values []string
	pod, podSet := false, false
	if sc := spec.SecurityContext; sc != nil && sc.SeccompProfile != nil {
		if validSeccomp(sc.SeccompProfile.Type) {
			podSet = true
		} else {
			pod = true
			values = append(values, string(sc.SeccompProfile.Type))
		}
	}
	var bad []string
	for _, c := range containers(spec) {
		switch sc := c.SecurityContext; {
		case sc != nil && sc.SeccompProfile != nil:
			if !validSeccomp(sc.SeccompProfile.Type) {
				bad = append(bad, c.Name)
				values = append(values, string(sc.SeccompProfile.Type))
			}
		case !podSet:
			unset = append(unset, c.Name)
		}
	}
	if who := setters(pod, bad); len(who) > 0 {
		return "seccompProfile", fmt.Sprintf("%s must not set securityContext.seccompProfile.type to %s", strings.Join(who, " and "), quoted(sortedSet(values))), unset
	}
	return "", "", unset
}

func checkSeccompRestricted(v int, _ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	if v >= 25 && isWindows(spec) {
		return "", ""
	}
	reason, detail, unset := seccompProfiles(spec)
	if reason != "" {
		return reason, detail
	}
	if len(unset) > 0 {
		return "seccompProfile", fmt.Sprintf(`pod or %s must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`, named("container", unset))
	}
	return "", ""
}

// safeSysctls are the namespaced, isolated sysctls baseline allows, by the
// minor version that allowed them.
var safeSysctls = map[int][]string{
	0:  {"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"},
	27: {"net.ipv4.ip_local_reserved_ports"},
	29: {"net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"},
	32: {"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem"},
	37: {"net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"},
}

func sysctlAllowed(v int, name string) bool {
	for since, names := range safeSysctls {
		if v >= since && slices.Contains(names, name) {
			return true
		}
	}
	return false
}

func checkSysctls(v int, _ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	if spec.SecurityContext == nil {
		return "", ""
	}
	var bad []string
	for _, s := range spec.SecurityContext.Sysctls {
		if !sysctlAllowed(v, s.Name) {
			bad = append(bad, s.Name)
		}
	}
	if len(bad) > 0 {
		return "forbidden sysctls", strings.Join(bad, ", ")
	}
	return "", ""
}

func checkPrivilegeEscalation(v int, _ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	if v >= 25 && isWindows(spec) {
		return "", ""
	}
	var bad []string
	for _, c := range containers(spec) {
		if sc := c.SecurityContext; sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			bad = append(bad, c.Name)
		}
	}
	if len(bad) > 0 {
		return "allowPrivilegeEscalation != false", named("container", bad) + " must set securityContext.allowPrivilegeEscalation=false"
	}
	return "", ""
}

func checkCapabilitiesRestricted(v int, _ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	if v >= 25 && isWindows(spec) {
		return "", ""
	}
	var noDrop, adding, caps []string
	for _, c := range containers(spec) {
		if c.SecurityContext == nil || c.SecurityContext.Capabilities == nil {
			noDrop = append(noDrop, c.Name)
			continue
		}
		if !slices.Contains(c.SecurityContext.Capabilities.Drop, "ALL") {
			noDrop = append(noDrop, c.Name)
		}
		found := false
		for _, cp := range c.SecurityContext.Capabilities.Add {
			if cp != "NET_BIND_SERVICE" {
				found = true
				caps = append(caps, string(cp))
			}
		}
		if found {
			adding = append(adding, c.Name)
		}
	}
	var details []string
	if len(noDrop) > 0 {
		details = append(details, named("container", noDrop)+` must set securityContext.capabilities.drop=["ALL"]`)
	}
	if len(adding) > 0 {
		details = append(details, fmt.Sprintf("%s must not include %s in securityContext.capabilities.add", named("container", adding), quoted(sortedSet(caps))))
	}
	if len(details) > 0 {
		return "unrestricted capabilities", strings.Join(details, "; ")
	}
	return "", ""
}

// volumeType names the source of a volume restricted forbids.
func volumeType(v *corev1.Volume) string {
	switch {
	case v.HostPath != nil:
		return "hostPath"
	case v.GCEPersistentDisk != nil:
		return "gcePersistentDisk"
	case v.AWSElasticBlockStore != nil:
		return "awsElasticBlockStore"
	case v.GitRepo != nil:
		return "gitRepo"
	case v.NFS != nil:
		return "nfs"
	case v.ISCSI != nil:
		return "iscsi"
	case v.Glusterfs != nil:
		return "glusterfs"
	case v.RBD != nil:
		return "rbd"
	case v.FlexVolume != nil:
		return "flexVolume"
	case v.Cinder != nil:
		return "cinder"
	case v.CephFS != nil:
		return "cephfs"
	case v.Flocker != nil:
		return "flocker"
	case v.FC != nil:
		return "fc"
	case v.AzureFile != nil:
		return "azureFile"
	case v.VsphereVolume != nil:
		return "vsphereVolume"
	case v.Quobyte != nil:
		return "quobyte"
	case v.AzureDisk != nil:
		return "azureDisk"
	case v.PhotonPersistentDisk != nil:
		return "photonPersistentDisk"
	case v.PortworxVolume != nil:
		return "portworxVolume"
	case v.ScaleIO != nil:
		return "scaleIO"
	case v.StorageOS != nil:
		return "storageos"
	}
	return "unknown"
}

func checkVolumes(_ int, _ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	var bad, types []string
	for i := range spec.Volumes {
		v := &spec.Volumes[i]
		if v.ConfigMap != nil || v.CSI != nil || v.DownwardAPI != nil || v.EmptyDir != nil || v.Ephemeral != nil ||
			v.Image != nil || v.PersistentVolumeClaim != nil || v.Projected != nil || v.Secret != nil {
			continue
		}
		bad = append(bad, v.Name)
		types = append(types, volumeType(v))
	}
	if len(bad) > 0 {
		types = sortedSet(types)
		return "restricted volume types", fmt.Sprintf("%s %s %s %s", named("volume", bad), plural(len(bad), "uses", "use"),
			plural(len(types), "restricted volume type", "restricted volume types"), quoted(types))
	}
	return "", ""
}

func checkRunAsNonRoot(v int, _ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	if v >= 35 && inUserNamespace(spec) {
		return "", ""
	}
	pod, podTrue := false, false
	if sc := spec.SecurityContext; sc != nil && sc.RunAsNonRoot != nil {
		if *sc.RunAsNonRoot {
			podTrue = true
		} else {
			pod = true
		}
	}
	var explicit, implicit []string
	for _, c := range containers(spec) {
		switch sc := c.SecurityContext; {
		case sc != nil && sc.RunAsNonRoot != nil:
			if !*sc.RunAsNonRoot {
				explicit = append(explicit, c.Name)
			}
		case !podTrue:
			implicit = append(implicit, c.Name)
		}
	}
	if who := setters(pod, explicit); len(who) > 0 {
		return "runAsNonRoot != true", strings.Join(who, " and ") + " must not set securityContext.runAsNonRoot=false"
	}
	if len(implicit) > 0 {
		return "runAsNonRoot != true", "pod or " + named("container", implicit) + " must set securityContext.runAsNonRoot=true"
	}
	return "", ""
}

func checkRunAsUser(v int, _ *metav1.ObjectMeta, spec *corev1.PodSpec) (string, string) {
	if v >= 35 && inUserNamespace(spec) {
		return "", ""
	}
	pod := spec.SecurityContext != nil && spec.SecurityContext.RunAsUser != nil && *spec.SecurityContext.RunAsUser == 0
	var bad []string
	for _, c := range containers(spec) {
		if sc := c.SecurityContext; sc != nil && sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			bad = append(bad, c.Name)
		}
	}
	if who := setters(pod, bad); len(who) > 0 {
		return "runAsUser=0", strings.Join(who, " and ") + " must not set runAsUser=0"
	}
	return "", ""
}
