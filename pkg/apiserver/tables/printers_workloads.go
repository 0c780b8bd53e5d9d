package tables

import (
	"fmt"
	"reflect"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/duration"
)

// workloadPrinters returns the printers of the workload resources: core (ServiceAccounts, PersistentVolume(Claim)s, ResourceQuotas, LimitRanges, PodTemplates, ReplicationControllers), apps (StatefulSets, DaemonSets, ControllerRevisions), batch (Jobs, CronJobs).
// LimitRanges have no printer of their own, as in Kubernetes: they get the
// default Name and Created At columns.
func workloadPrinters() map[reflect.Type]*printer {
	out := map[reflect.Type]*printer{}
	add := func(t reflect.Type, p *printer) { out[t] = p }
	add(printerOf(jobColumns, jobRow))
	add(printerOf(cronJobColumns, cronJobRow))
	add(printerOf(statefulSetColumns, statefulSetRow))
	add(printerOf(daemonSetColumns, daemonSetRow))
	add(printerOf(controllerRevisionColumns, controllerRevisionRow))
	add(printerOf(replicationControllerColumns, replicationControllerRow))
	add(printerOf(serviceAccountColumns, serviceAccountRow))
	add(printerOf(persistentVolumeColumns, persistentVolumeRow))
	add(printerOf(persistentVolumeClaimColumns, persistentVolumeClaimRow))
	add(printerOf(resourceQuotaColumns, resourceQuotaRow))
	add(printerOf(podTemplateColumns, podTemplateRow))
	return out
}

func jobColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Status", Type: "string", Description: "Status of the job."},
		{Name: "Completions", Type: "string", Description: batchv1.JobStatus{}.SwaggerDoc()["succeeded"]},
		{Name: "Duration", Type: "string", Description: "Time required to complete the job."},
		ageColumn(),
		{Name: "Containers", Type: "string", Priority: 1, Description: containersDoc},
		{Name: "Images", Type: "string", Priority: 1, Description: imagesDoc},
		{Name: "Selector", Type: "string", Priority: 1, Description: batchv1.JobSpec{}.SwaggerDoc()["selector"]},
	}
}

// jobStatus is the one word kubectl sums a job up with: its terminal
// condition first, then deletion, suspension and the interim conditions.
func jobStatus(j *batchv1.Job) string {
	has := func(t batchv1.JobConditionType) bool {
		for _, c := range j.Status.Conditions {
			if c.Type == t && c.Status == corev1.ConditionTrue {
				return true
			}
		}
		return false
	}
	switch {
	case has(batchv1.JobComplete):
		return "Complete"
	case has(batchv1.JobFailed):
		return "Failed"
	case j.DeletionTimestamp != nil:
		return "Terminating"
	case has(batchv1.JobSuspended):
		return "Suspended"
	case has(batchv1.JobFailureTarget):
		return "FailureTarget"
	case has(batchv1.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	}
	return "Running"
}

func jobRow(j *batchv1.Job, now time.Time) ([]any, []metav1.TableRowCondition) {
	var completions string
	switch parallelism := j.Spec.Parallelism; {
	case j.Spec.Completions != nil:
		completions = fmt.Sprintf("%d/%d", j.Status.Succeeded, *j.Spec.Completions)
	case parallelism != nil && *parallelism > 1:
		completions = fmt.Sprintf("%d/1 of %d", j.Status.Succeeded, *parallelism)
	default:
		completions = fmt.Sprintf("%d/1", j.Status.Succeeded)
	}
	var took string
	switch {
	case j.Status.StartTime == nil:
	case j.Status.CompletionTime == nil:
		took = duration.HumanDuration(now.Sub(j.Status.StartTime.Time))
	default:
		took = duration.HumanDuration(j.Status.CompletionTime.Sub(j.Status.StartTime.Time))
	}
	names, images := containerCells(j.Spec.Template.Spec.Containers)
	return []any{
		j.Name, jobStatus(j), completions, took, since(j.CreationTimestamp.Time, now),
		names, images, metav1.FormatLabelSelector(j.Spec.Selector),
	}, nil
}

func cronJobColumns() []metav1.TableColumnDefinition {
	spec, status := batchv1.CronJobSpec{}.SwaggerDoc(), batchv1.CronJobStatus{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Schedule", Type: "string", Description: spec["schedule"]},
		{Name: "Timezone", Type: "string", Description: spec["timeZone"]},
		{Name: "Suspend", Type: "boolean", Description: spec["suspend"]},
		{Name: "Active", Type: "integer", Description: status["active"]},
		{Name: "Last Schedule", Type: "string", Description: status["lastScheduleTime"]},
		ageColumn(),
		{Name: "Containers", Type: "string", Priority: 1, Description: containersDoc},
		{Name: "Images", Type: "string", Priority: 1, Description: imagesDoc},
		{Name: "Selector", Type: "string", Priority: 1, Description: batchv1.JobSpec{}.SwaggerDoc()["selector"]},
	}
}

// boolCell prints a bool the way kubectl does, "<unset>" for none.
func boolCell(b *bool) string {
	switch {
	case b == nil:
		return "<unset>"
	case *b:
		return "True"
	}
	return "False"
}

func cronJobRow(c *batchv1.CronJob, now time.Time) ([]any, []metav1.TableRowCondition) {
	last := "<none>"
	if c.Status.LastScheduleTime != nil {
		last = since(c.Status.LastScheduleTime.Time, now)
	}
	tz := "<none>"
	if c.Spec.TimeZone != nil {
		tz = *c.Spec.TimeZone
	}
	names, images := containerCells(c.Spec.JobTemplate.Spec.Template.Spec.Containers)
	return []any{
		c.Name, c.Spec.Schedule, tz, boolCell(c.Spec.Suspend), int64(len(c.Status.Active)), last, since(c.CreationTimestamp.Time, now),
		names, images, metav1.FormatLabelSelector(c.Spec.JobTemplate.Spec.Selector),
	}, nil
}

func statefulSetColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Ready", Type: "string", Description: "Number of the pod with ready state"},
		ageColumn(),
		{Name: "Containers", Type: "string", Priority: 1, Description: containersDoc},
		{Name: "Images", Type: "string", Priority: 1, Description: imagesDoc},
	}
}

func statefulSetRow(s *appsv1.StatefulSet, now time.Time) ([]any, []metav1.TableRowCondition) {
	names, images := containerCells(s.Spec.Template.Spec.Containers)
	return []any{
		s.Name, fmt.Sprintf("%d/%d", int64(s.Status.ReadyReplicas), replicas(s.Spec.Replicas)), since(s.CreationTimestamp.Time, now),
		names, images,
	}, nil
}

func daemonSetColumns() []metav1.TableColumnDefinition {
	status := appsv1.DaemonSetStatus{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Desired", Type: "integer", Description: status["desiredNumberScheduled"]},
		{Name: "Current", Type: "integer", Description: status["currentNumberScheduled"]},
		{Name: "Ready", Type: "integer", Description: status["numberReady"]},
		{Name: "Up-to-date", Type: "integer", Description: status["updatedNumberScheduled"]},
		{Name: "Available", Type: "integer", Description: status["numberAvailable"]},
		{Name: "Node Selector", Type: "string", Description: corev1.PodSpec{}.SwaggerDoc()["nodeSelector"]},
		ageColumn(),
		{Name: "Containers", Type: "string", Priority: 1, Description: containersDoc},
		{Name: "Images", Type: "string", Priority: 1, Description: imagesDoc},
		{Name: "Selector", Type: "string", Priority: 1, Description: appsv1.DaemonSetSpec{}.SwaggerDoc()["selector"]},
	}
}

func daemonSetRow(d *appsv1.DaemonSet, now time.Time) ([]any, []metav1.TableRowCondition) {
	names, images := containerCells(d.Spec.Template.Spec.Containers)
	st := d.Status
	return []any{
		d.Name,
		int64(st.DesiredNumberScheduled), int64(st.CurrentNumberScheduled), int64(st.NumberReady),
		int64(st.UpdatedNumberScheduled), int64(st.NumberAvailable),
		labels.FormatLabels(d.Spec.Template.Spec.NodeSelector),
		since(d.CreationTimestamp.Time, now),
		names, images, metav1.FormatLabelSelector(d.Spec.Selector),
	}, nil
}

func controllerRevisionColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Controller", Type: "string", Description: "Controller of the object"},
		{Name: "Revision", Type: "string", Description: appsv1.ControllerRevision{}.SwaggerDoc()["revision"]},
		ageColumn(),
	}
}

func controllerRevisionRow(r *appsv1.ControllerRevision, now time.Time) ([]any, []metav1.TableRowCondition) {
	controller := "<none>"
	if ref := metav1.GetControllerOf(r); ref != nil {
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil {
			controller = strings.ToLower(gv.WithKind(ref.Kind).GroupKind().String()) + "/" + ref.Name
		}
	}
	return []any{r.Name, controller, r.Revision, since(r.CreationTimestamp.Time, now)}, nil
}

func replicationControllerColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Desired", Type: "integer", Description: corev1.ReplicationControllerSpec{}.SwaggerDoc()["replicas"]},
		{Name: "Current", Type: "integer", Description: corev1.ReplicationControllerStatus{}.SwaggerDoc()["replicas"]},
		{Name: "Ready", Type: "integer", Description: corev1.ReplicationControllerStatus{}.SwaggerDoc()["readyReplicas"]},
		ageColumn(),
		{Name: "Containers", Type: "string", Priority: 1, Description: containersDoc},
		{Name: "Images", Type: "string", Priority: 1, Description: imagesDoc},
		{Name: "Selector", Type: "string", Priority: 1, Description: corev1.ReplicationControllerSpec{}.SwaggerDoc()["selector"]},
	}
}

func replicationControllerRow(r *corev1.ReplicationController, now time.Time) ([]any, []metav1.TableRowCondition) {
	var names, images string
	if r.Spec.Template != nil {
		names, images = containerCells(r.Spec.Template.Spec.Containers)
	}
	return []any{
		r.Name, replicas(r.Spec.Replicas), int64(r.Status.Replicas), int64(r.Status.ReadyReplicas), since(r.CreationTimestamp.Time, now),
		names, images, labels.FormatLabels(r.Spec.Selector),
	}, nil
}

func serviceAccountColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Secrets", Type: "string", Description: corev1.ServiceAccount{}.SwaggerDoc()["secrets"]},
		ageColumn(),
	}
}

func serviceAccountRow(sa *corev1.ServiceAccount, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{sa.Name, int64(len(sa.Secrets)), since(sa.CreationTimestamp.Time, now)}, nil
}

// accessModesCell abbreviates access modes as kubectl does, in a fixed
// order and without repeats.
func accessModesCell(modes []corev1.PersistentVolumeAccessMode) string {
	var out []string
	for _, m := range []struct {
		mode  corev1.PersistentVolumeAccessMode
		short string
	}{
		{corev1.ReadWriteOnce, "RWO"}, {corev1.ReadOnlyMany, "ROX"}, {corev1.ReadWriteMany, "RWX"}, {corev1.ReadWriteOncePod, "RWOP"},
	} {
		for _, have := range modes {
			if have == m.mode {
				out = append(out, m.short)
				break
			}
		}
	}
	return strings.Join(out, ",")
}

// storageClassOf is the class of a volume or claim: the legacy beta
// annotation wins over the field, as in Kubernetes.
func storageClassOf(annotations map[string]string, class *string) string {
	if c, ok := annotations[corev1.BetaStorageClassAnnotation]; ok {
		return c
	}
	if class != nil {
		return *class
	}
	return ""
}

func unsetOr[T ~string](p *T) string {
	if p == nil {
		return "<unset>"
	}
	return string(*p)
}

func persistentVolumeColumns() []metav1.TableColumnDefinition {
	spec, status := corev1.PersistentVolumeSpec{}.SwaggerDoc(), corev1.PersistentVolumeStatus{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Capacity", Type: "string", Description: spec["capacity"]},
		{Name: "Access Modes", Type: "string", Description: spec["accessModes"]},
		{Name: "Reclaim Policy", Type: "string", Description: spec["persistentVolumeReclaimPolicy"]},
		{Name: "Status", Type: "string", Description: status["phase"]},
		{Name: "Claim", Type: "string", Description: spec["claimRef"]},
		{Name: "StorageClass", Type: "string", Description: "StorageClass of the pv"},
		{Name: "VolumeAttributesClass", Type: "string", Description: "VolumeAttributesClass of the pv"},
		{Name: "Reason", Type: "string", Description: status["reason"]},
		ageColumn(),
		{Name: "VolumeMode", Type: "string", Priority: 1, Description: spec["volumeMode"]},
	}
}

func persistentVolumeRow(v *corev1.PersistentVolume, now time.Time) ([]any, []metav1.TableRowCondition) {
	claim := ""
	if ref := v.Spec.ClaimRef; ref != nil {
		claim = ref.Namespace + "/" + ref.Name
	}
	size := v.Spec.Capacity[corev1.ResourceStorage]
	phase := string(v.Status.Phase)
	if v.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	class := v.Spec.StorageClassName
	return []any{
		v.Name, size.String(), accessModesCell(v.Spec.AccessModes), string(v.Spec.PersistentVolumeReclaimPolicy),
		phase, claim, storageClassOf(v.Annotations, &class), unsetOr(v.Spec.VolumeAttributesClassName),
		v.Status.Reason, since(v.CreationTimestamp.Time, now), unsetOr(v.Spec.VolumeMode),
	}, nil
}

func persistentVolumeClaimColumns() []metav1.TableColumnDefinition {
	spec, status := corev1.PersistentVolumeClaimSpec{}.SwaggerDoc(), corev1.PersistentVolumeClaimStatus{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Status", Type: "string", Description: status["phase"]},
		{Name: "Volume", Type: "string", Description: spec["volumeName"]},
		{Name: "Capacity", Type: "string", Description: status["capacity"]},
		{Name: "Access Modes", Type: "string", Description: status["accessModes"]},
		{Name: "StorageClass", Type: "string", Description: "StorageClass of the pvc"},
		{Name: "VolumeAttributesClass", Type: "string", Description: "VolumeAttributesClass of the pvc"},
		ageColumn(),
		{Name: "VolumeMode", Type: "string", Priority: 1, Description: spec["volumeMode"]},
	}
}

func persistentVolumeClaimRow(c *corev1.PersistentVolumeClaim, now time.Time) ([]any, []metav1.TableRowCondition) {
	phase := string(c.Status.Phase)
	if c.DeletionTimestamp != nil {
		phase = "Terminating"
	}
	// Capacity and access modes are the bound volume's, shown once bound.
	var capacity, modes string
	if c.Spec.VolumeName != "" {
		modes = accessModesCell(c.Status.AccessModes)
		q := c.Status.Capacity[corev1.ResourceStorage]
		capacity = q.String()
	}
	return []any{
		c.Name, phase, c.Spec.VolumeName, capacity, modes,
		storageClassOf(c.Annotations, c.Spec.StorageClassName), unsetOr(c.Spec.VolumeAttributesClassName),
		since(c.CreationTimestamp.Time, now), unsetOr(c.Spec.VolumeMode),
	}, nil
}

func resourceQuotaColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		ageColumn(),
		{Name: "Request", Type: "string", Description: "Request represents a minimum amount of cpu/memory that a container may consume."},
		{Name: "Limit", Type: "string", Description: "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node."},
	}
}

// resourceQuotaRow lays out used/hard per resource of the quota's spec,
// the limits.* ones in the Limit column and the others in Request.
func resourceQuotaRow(q *corev1.ResourceQuota, now time.Time) ([]any, []metav1.TableRowCondition) {
	names := make([]string, 0, len(q.Spec.Hard))
	for name := range q.Spec.Hard {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var requests, limits []string
	for _, name := range names {
		used, hard := q.Status.Used[corev1.ResourceName(name)], q.Status.Hard[corev1.ResourceName(name)]
		cell := fmt.Sprintf("%s: %s/%s", name, used.String(), hard.String())
		if prefix, _, ok := strings.Cut(name, "."); ok && prefix == "limits" {
			limits = append(limits, cell)
		} else {
			requests = append(requests, cell)
		}
	}
	return []any{q.Name, since(q.CreationTimestamp.Time, now), strings.Join(requests, ", "), strings.Join(limits, ", ")}, nil
}

func podTemplateColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Containers", Type: "string", Description: containersDoc},
		{Name: "Images", Type: "string", Description: imagesDoc},
		{Name: "Pod Labels", Type: "string", Description: "The labels for the pod template."},
	}
}

func podTemplateRow(p *corev1.PodTemplate, _ time.Time) ([]any, []metav1.TableRowCondition) {
	names, images := containerCells(p.Template.Spec.Containers)
	return []any{p.Name, names, images, labels.FormatLabels(p.Template.Labels)}, nil
}
