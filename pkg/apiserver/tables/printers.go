package tables

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kplane/kplane/pkg/registry"
)

// printerFor returns the printer of objects of pointer type t, or nil.
func printerFor(t reflect.Type) *printer {
	switch t {
	case reflect.TypeFor[*corev1.Pod]():
		return &printer{columns: podColumns, row: typed(podRow)}
	case reflect.TypeFor[*appsv1.Deployment]():
		return &printer{columns: deploymentColumns, row: typed(deploymentRow)}
	case reflect.TypeFor[*appsv1.ReplicaSet]():
		return &printer{columns: replicaSetColumns, row: typed(replicaSetRow)}
	case reflect.TypeFor[*corev1.Namespace]():
		return &printer{columns: namespaceColumns, row: typed(namespaceRow)}
	case reflect.TypeFor[*corev1.Node]():
		return &printer{columns: nodeColumns, row: typed(nodeRow)}
	case reflect.TypeFor[*corev1.Event]():
		return &printer{columns: eventColumns, row: typed(eventRow)}
	case reflect.TypeFor[*eventsv1.Event]():
		return &printer{columns: eventColumns, row: typed(eventV1Row)}
	case reflect.TypeFor[*corev1.ConfigMap]():
		return &printer{columns: configMapColumns, row: typed(configMapRow)}
	case reflect.TypeFor[*corev1.Secret]():
		return &printer{columns: secretColumns, row: typed(secretRow)}
	case reflect.TypeFor[*coordinationv1.Lease]():
		return &printer{columns: leaseColumns, row: typed(leaseRow)}
	case reflect.TypeFor[*autoscalingv1.Scale]():
		return &printer{columns: scaleColumns, row: typed(scaleRow)}
	}
	return groupPrinters()[t]
}

// groupPrinters holds the printers of the resources beyond the first
// ten, one map per family of resources, each in its own file.
var groupPrinters = sync.OnceValue(func() map[reflect.Type]*printer {
	out := map[reflect.Type]*printer{}
	for _, m := range []map[reflect.Type]*printer{
		servicePrinters(), workloadPrinters(), policyPrinters(), platformPrinters(),
	} {
		for t, p := range m {
			if _, dup := out[t]; dup {
				panic(fmt.Sprintf("tables: two printers for %v", t))
			}
			out[t] = p
		}
	}
	return out
})

// printerOf is the printer of T's objects with columns and row.
func printerOf[T runtime.Object](columns func() []metav1.TableColumnDefinition, row func(T, time.Time) ([]any, []metav1.TableRowCondition)) (reflect.Type, *printer) {
	return reflect.TypeFor[T](), &printer{columns: columns, row: typed(row)}
}

// typed adapts a row function of one object type to printer.row.
func typed[T runtime.Object](f func(T, time.Time) ([]any, []metav1.TableRowCondition)) func(runtime.Object, time.Time) ([]any, []metav1.TableRowCondition) {
	return func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition) {
		return f(obj.(T), now)
	}
}

const (
	containersDoc = "Names of each container in the template."
	imagesDoc     = "Images referenced by each container in the template."
)

func deploymentColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
		{Name: "Up-to-date", Type: "string", Description: appsv1.DeploymentStatus{}.SwaggerDoc()["updatedReplicas"]},
		{Name: "Available", Type: "string", Description: appsv1.DeploymentStatus{}.SwaggerDoc()["availableReplicas"]},
		ageColumn(),
		{Name: "Containers", Type: "string", Priority: 1, Description: containersDoc},
		{Name: "Images", Type: "string", Priority: 1, Description: imagesDoc},
		{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.DeploymentSpec{}.SwaggerDoc()["selector"]},
	}
}

// replicas is the desired replica count of a spec. Stored objects are
// defaulted, so nil only reaches here for an object that never was; the API
// default of 1 is what it would have been.
func replicas(r *int32) int64 {
	if r == nil {
		return 1
	}
	return int64(*r)
}

func deploymentRow(d *appsv1.Deployment, now time.Time) ([]any, []metav1.TableRowCondition) {
	selector := "<invalid>"
	if s, err := metav1.LabelSelectorAsSelector(d.Spec.Selector); err == nil {
		selector = s.String()
	}
	names, images := containerCells(d.Spec.Template.Spec.Containers)
	return []any{
		d.Name,
		fmt.Sprintf("%d/%d", int64(d.Status.ReadyReplicas), replicas(d.Spec.Replicas)),
		int64(d.Status.UpdatedReplicas),
		int64(d.Status.AvailableReplicas),
		since(d.CreationTimestamp.Time, now),
		names, images, selector,
	}, nil
}

func replicaSetColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Desired", Type: "integer", Description: appsv1.ReplicaSetSpec{}.SwaggerDoc()["replicas"]},
		{Name: "Current", Type: "integer", Description: appsv1.ReplicaSetStatus{}.SwaggerDoc()["replicas"]},
		{Name: "Ready", Type: "integer", Description: appsv1.ReplicaSetStatus{}.SwaggerDoc()["readyReplicas"]},
		ageColumn(),
		{Name: "Containers", Type: "string", Priority: 1, Description: containersDoc},
		{Name: "Images", Type: "string", Priority: 1, Description: imagesDoc},
		{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.ReplicaSetSpec{}.SwaggerDoc()["selector"]},
	}
}

func replicaSetRow(rs *appsv1.ReplicaSet, now time.Time) ([]any, []metav1.TableRowCondition) {
	names, images := containerCells(rs.Spec.Template.Spec.Containers)
	return []any{
		rs.Name,
		replicas(rs.Spec.Replicas),
		int64(rs.Status.Replicas),
		int64(rs.Status.ReadyReplicas),
		since(rs.CreationTimestamp.Time, now),
		names, images, metav1.FormatLabelSelector(rs.Spec.Selector),
	}, nil
}

// containerCells lays out container names and images comma-separated.
func containerCells(containers []corev1.Container) (names, images string) {
	n := make([]string, len(containers))
	i := make([]string, len(containers))
	for k, c := range containers {
		n[k], i[k] = c.Name, c.Image
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}

func namespaceColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Status", Type: "string", Description: "The status of the namespace"},
		ageColumn(),
	}
}

func namespaceRow(ns *corev1.Namespace, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{ns.Name, string(ns.Status.Phase), since(ns.CreationTimestamp.Time, now)}, nil
}

func nodeColumns() []metav1.TableColumnDefinition {
	info := corev1.NodeSystemInfo{}.SwaggerDoc()
	addresses := corev1.NodeStatus{}.SwaggerDoc()["addresses"]
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Status", Type: "string", Description: "The status of the node"},
		{Name: "Roles", Type: "string", Description: "The roles of the node"},
		ageColumn(),
		{Name: "Version", Type: "string", Description: info["kubeletVersion"]},
		{Name: "Internal-IP", Type: "string", Priority: 1, Description: addresses},
		{Name: "External-IP", Type: "string", Priority: 1, Description: addresses},
		{Name: "OS-Image", Type: "string", Priority: 1, Description: info["osImage"]},
		{Name: "Kernel-Version", Type: "string", Priority: 1, Description: info["kernelVersion"]},
		{Name: "Container-Runtime", Type: "string", Priority: 1, Description: info["containerRuntimeVersion"]},
	}
}

// Node labels that name a node's roles.
const (
	nodeRolePrefix = "node-role.kubernetes.io/"
	nodeRoleLabel  = "kubernetes.io/role"
)

func nodeRow(n *corev1.Node, now time.Time) ([]any, []metav1.TableRowCondition) {
	// Only the Ready condition decides the status; the last one listed wins.
	var status []string
	var ready *corev1.NodeCondition
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			ready = &n.Status.Conditions[i]
		}
	}
	switch {
	case ready == nil:
		status = append(status, "Unknown")
	case ready.Status == corev1.ConditionTrue:
		status = append(status, string(corev1.NodeReady))
	default:
		status = append(status, "Not"+string(corev1.NodeReady))
	}
	if n.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}

	roleSet := map[string]bool{}
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, nodeRolePrefix):
			if role := strings.TrimPrefix(k, nodeRolePrefix); role != "" {
				roleSet[role] = true
			}
		case k == nodeRoleLabel && v != "":
			roleSet[v] = true
		}
	}
	roles := make([]string, 0, len(roleSet))
	for r := range roleSet {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	rolesCell := strings.Join(roles, ",")
	if rolesCell == "" {
		rolesCell = "<none>"
	}

	orUnknown := func(s string) string {
		if s == "" {
			return "<unknown>"
		}
		return s
	}
	info := n.Status.NodeInfo
	return []any{
		n.Name,
		strings.Join(status, ","),
		rolesCell,
		since(n.CreationTimestamp.Time, now),
		info.KubeletVersion,
		nodeAddress(n, corev1.NodeInternalIP),
		nodeAddress(n, corev1.NodeExternalIP),
		orUnknown(info.OSImage),
		orUnknown(info.KernelVersion),
		orUnknown(info.ContainerRuntimeVersion),
	}, nil
}

// nodeAddress is the node's first address of type t, or "<none>".
func nodeAddress(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}

func eventColumns() []metav1.TableColumnDefinition {
	doc := corev1.Event{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		{Name: "Last Seen", Type: "string", Description: doc["lastTimestamp"]},
		{Name: "Type", Type: "string", Description: doc["type"]},
		{Name: "Reason", Type: "string", Description: doc["reason"]},
		{Name: "Object", Type: "string", Description: doc["involvedObject"]},
		{Name: "Subobject", Type: "string", Priority: 1, Description: corev1.ObjectReference{}.SwaggerDoc()["fieldPath"]},
		{Name: "Source", Type: "string", Priority: 1, Description: doc["source"]},
		{Name: "Message", Type: "string", Description: doc["message"]},
		{Name: "First Seen", Type: "string", Priority: 1, Description: doc["firstTimestamp"]},
		{Name: "Count", Type: "string", Priority: 1, Description: doc["count"]},
		{Name: "Name", Type: "string", Priority: 1, Format: "name", Description: metaDoc("name")},
	}
}

func eventRow(e *corev1.Event, now time.Time) ([]any, []metav1.TableRowCondition) {
	first := since(e.FirstTimestamp.Time, now)
	if e.FirstTimestamp.IsZero() {
		first = since(e.EventTime.Time, now)
	}
	last := since(e.LastTimestamp.Time, now)
	if e.LastTimestamp.IsZero() {
		last = first
	}
	count := e.Count
	if e.Series != nil {
		last = since(e.Series.LastObservedTime.Time, now)
		count = e.Series.Count
	} else if count == 0 {
		// Events of the events.k8s.io API leave count unset when they
		// happened once.
		count = 1
	}
	target := strings.ToLower(e.InvolvedObject.Kind)
	if e.InvolvedObject.Name != "" {
		target += "/" + e.InvolvedObject.Name
	}
	component := firstNonEmpty(e.Source.Component, e.ReportingController)
	source := component
	if instance := firstNonEmpty(e.Source.Host, e.ReportingInstance); instance != "" {
		source = component + ", " + instance
	}
	return []any{
		last,
		e.Type,
		e.Reason,
		target,
		e.InvolvedObject.FieldPath,
		source,
		strings.TrimSpace(e.Message),
		first,
		int64(count),
		e.Name,
	}, nil
}

// eventV1Row prints an events.k8s.io/v1 Event as its core/v1 form: both
// versions are one stored object, which kube-apiserver prints alike.
func eventV1Row(e *eventsv1.Event, now time.Time) ([]any, []metav1.TableRowCondition) {
	return eventRow(registry.EventToCore(e), now)
}

func firstNonEmpty(ss ...string) string {
	for _, s := range ss {
		if s != "" {
			return s
		}
	}
	return ""
}

func configMapColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Data", Type: "string", Description: corev1.ConfigMap{}.SwaggerDoc()["data"]},
		ageColumn(),
	}
}

func configMapRow(c *corev1.ConfigMap, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{c.Name, int64(len(c.Data) + len(c.BinaryData)), since(c.CreationTimestamp.Time, now)}, nil
}

func secretColumns() []metav1.TableColumnDefinition {
	doc := corev1.Secret{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Type", Type: "string", Description: doc["type"]},
		{Name: "Data", Type: "string", Description: doc["data"]},
		ageColumn(),
	}
}

func secretRow(s *corev1.Secret, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{s.Name, string(s.Type), int64(len(s.Data)), since(s.CreationTimestamp.Time, now)}, nil
}

func leaseColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Holder", Type: "string", Description: coordinationv1.LeaseSpec{}.SwaggerDoc()["holderIdentity"]},
		ageColumn(),
	}
}

func leaseRow(l *coordinationv1.Lease, now time.Time) ([]any, []metav1.TableRowCondition) {
	holder := ""
	if l.Spec.HolderIdentity != nil {
		holder = *l.Spec.HolderIdentity
	}
	return []any{l.Name, holder, since(l.CreationTimestamp.Time, now)}, nil
}

// scaleColumns are those of the scale subresource; unlike the others, its
// name column has no "name" format in Kubernetes.
func scaleColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		{Name: "Name", Type: "string", Description: metaDoc("name")},
		{Name: "Desired", Type: "integer", Description: autoscalingv1.ScaleSpec{}.SwaggerDoc()["replicas"]},
		{Name: "Available", Type: "integer", Description: autoscalingv1.ScaleStatus{}.SwaggerDoc()["replicas"]},
		ageColumn(),
	}
}

func scaleRow(s *autoscalingv1.Scale, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{s.Name, int64(s.Spec.Replicas), int64(s.Status.Replicas), since(s.CreationTimestamp.Time, now)}, nil
}
