package tables

import (
	"fmt"
	"reflect"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kplane/kplane/pkg/registry"
)

// platformPrinters returns the printers of storage.k8s.io, admissionregistration.k8s.io, resource.k8s.io, HorizontalPodAutoscalers.
func platformPrinters() map[reflect.Type]*printer {
	out := map[reflect.Type]*printer{}
	add := func(t reflect.Type, p *printer) { out[t] = p }
	add(printerOf(hpaColumns, hpaRow))
	add(printerOf(hpaColumns, hpaV1Row))
	add(printerOf(storageClassColumns, storageClassRow))
	add(printerOf(csiDriverColumns, csiDriverRow))
	add(printerOf(csiNodeColumns, csiNodeRow))
	add(printerOf(volumeAttachmentColumns, volumeAttachmentRow))
	add(printerOf(csiStorageCapacityColumns, csiStorageCapacityRow))
	add(printerOf(volumeAttributesClassColumns, volumeAttributesClassRow))
	add(printerOf(webhookConfigurationColumns, validatingWebhookConfigurationRow))
	add(printerOf(webhookConfigurationColumns, mutatingWebhookConfigurationRow))
	add(printerOf(validatingPolicyColumns, validatingPolicyRow))
	add(printerOf(policyBindingColumns, validatingPolicyBindingRow))
	add(printerOf(mutatingPolicyColumns, mutatingPolicyRow))
	add(printerOf(policyBindingColumns, mutatingPolicyBindingRow))
	add(printerOf(nameAgeColumns, deviceClassRow))
	add(printerOf(resourceClaimColumns, resourceClaimRow))
	add(printerOf(nameAgeColumns, resourceClaimTemplateRow))
	add(printerOf(resourceSliceColumns, resourceSliceRow))
	return out
}

func hpaColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Reference", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["scaleTargetRef"]},
		{Name: "Targets", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["metrics"]},
		{Name: "MinPods", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["minReplicas"]},
		{Name: "MaxPods", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerSpec{}.SwaggerDoc()["maxReplicas"]},
		{Name: "Replicas", Type: "string", Description: autoscalingv2.HorizontalPodAutoscalerStatus{}.SwaggerDoc()["currentReplicas"]},
		ageColumn(),
	}
}

func hpaRow(h *autoscalingv2.HorizontalPodAutoscaler, now time.Time) ([]any, []metav1.TableRowCondition) {
	ref := h.Spec.ScaleTargetRef
	var minPods any = "<unset>"
	if h.Spec.MinReplicas != nil {
		minPods = int64(*h.Spec.MinReplicas)
	}
	return []any{
		h.Name,
		ref.Kind + "/" + ref.Name,
		hpaTargets(h.Spec.Metrics, h.Status.CurrentMetrics),
		minPods,
		int64(h.Spec.MaxReplicas),
		int64(h.Status.CurrentReplicas),
		since(h.CreationTimestamp.Time, now),
	}, nil
}

// hpaV1Row prints an autoscaling/v1 HPA as its autoscaling/v2 form, as
// kubectl shows both versions alike.
func hpaV1Row(h *autoscalingv1.HorizontalPodAutoscaler, now time.Time) ([]any, []metav1.TableRowCondition) {
	v2, err := registry.HPAToV2(h)
	if err != nil {
		// Unreadable annotations: what v1 itself says.
		v2, _ = registry.HPAToV2(&autoscalingv1.HorizontalPodAutoscaler{ObjectMeta: h.ObjectMeta, Spec: h.Spec, Status: h.Status})
		if v2 == nil {
			v2 = &autoscalingv2.HorizontalPodAutoscaler{}
		}
	}
	return hpaRow(v2, now)
}

// hpaMaxTargets is how many metrics the Targets column shows.
const hpaMaxTargets = 2

// hpaTargets renders an HPA's metrics as "current/target" pairs, in the
// order of the spec, each paired with the status entry at the same index,
// as kubectl does.
func hpaTargets(specs []autoscalingv2.MetricSpec, statuses []autoscalingv2.MetricStatus) string {
	if len(specs) == 0 {
		return "<none>"
	}
	q := func(v *resource.Quantity) string {
		if v == nil {
			return "<unknown>"
		}
		return v.String()
	}
	pct := func(v *int32) string {
		if v == nil {
			return "<unknown>"
		}
		return fmt.Sprintf("%d%%", *v)
	}
	var list []string
	for i, spec := range specs {
		var st *autoscalingv2.MetricStatus
		if i < len(statuses) {
			st = &statuses[i]
		}
		current := "<unknown>"
		switch {
		case spec.Type == autoscalingv2.ExternalMetricSourceType && spec.External != nil:
			t := spec.External.Target
			if t.AverageValue != nil {
				if st != nil && st.External != nil {
					current = q(st.External.Current.AverageValue)
				}
				list = append(list, fmt.Sprintf("%s/%s (avg)", current, t.AverageValue.String()))
			} else {
				if st != nil && st.External != nil {
					current = q(st.External.Current.Value)
				}
				list = append(list, fmt.Sprintf("%s/%s", current, q(t.Value)))
			}
		case spec.Type == autoscalingv2.PodsMetricSourceType && spec.Pods != nil:
			if st != nil && st.Pods != nil {
				current = q(st.Pods.Current.AverageValue)
			}
			list = append(list, fmt.Sprintf("%s/%s", current, q(spec.Pods.Target.AverageValue)))
		case spec.Type == autoscalingv2.ObjectMetricSourceType && spec.Object != nil:
			t := spec.Object.Target
			if t.AverageValue != nil {
				if st != nil && st.Object != nil {
					current = q(st.Object.Current.AverageValue)
				}
				list = append(list, fmt.Sprintf("%s/%s (avg)", current, t.AverageValue.String()))
			} else {
				if st != nil && st.Object != nil {
					current = q(st.Object.Current.Value)
				}
				list = append(list, fmt.Sprintf("%s/%s", current, q(t.Value)))
			}
		case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
			t := spec.Resource.Target
			if t.AverageValue != nil {
				if st != nil && st.Resource != nil {
					current = q(st.Resource.Current.AverageValue)
				}
				list = append(list, fmt.Sprintf("%s: %s/%s", spec.Resource.Name, current, t.AverageValue.String()))
			} else {
				if st != nil && st.Resource != nil {
					current = pct(st.Resource.Current.AverageUtilization)
				}
				target := "<auto>"
				if t.AverageUtilization != nil {
					target = pct(t.AverageUtilization)
				}
				list = append(list, fmt.Sprintf("%s: %s/%s", spec.Resource.Name, current, target))
			}
		case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
			t := spec.ContainerResource.Target
			if t.AverageValue != nil {
				if st != nil && st.ContainerResource != nil {
					current = q(st.ContainerResource.Current.AverageValue)
				}
				list = append(list, fmt.Sprintf("%s: %s/%s", spec.ContainerResource.Name, current, t.AverageValue.String()))
			} else {
				if st != nil && st.ContainerResource != nil {
					current = pct(st.ContainerResource.Current.AverageUtilization)
				}
				target := "<auto>"
				if t.AverageUtilization != nil {
					target = pct(t.AverageUtilization)
				}
				list = append(list, fmt.Sprintf("%s: %s/%s", spec.ContainerResource.Name, current, target))
			}
		default:
			list = append(list, "<unknown type>")
		}
	}
	if len(list) > hpaMaxTargets {
		return fmt.Sprintf("%s + %d more...", strings.Join(list[:hpaMaxTargets], ", "), len(list)-hpaMaxTargets)
	}
	return strings.Join(list, ", ")
}

// isDefaultClassAnnotation (and its beta form) marks the default StorageClass.
const (
	isDefaultClassAnnotation     = "storageclass.kubernetes.io/is-default-class"
	betaIsDefaultClassAnnotation = "storageclass.beta.kubernetes.io/is-default-class"
)

func storageClassColumns() []metav1.TableColumnDefinition {
	d := storagev1.StorageClass{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Provisioner", Type: "string", Description: d["provisioner"]},
		{Name: "ReclaimPolicy", Type: "string", Description: d["reclaimPolicy"]},
		{Name: "VolumeBindingMode", Type: "string", Description: d["volumeBindingMode"]},
		{Name: "AllowVolumeExpansion", Type: "string", Description: d["allowVolumeExpansion"]},
		ageColumn(),
	}
}

func storageClassRow(sc *storagev1.StorageClass, now time.Time) ([]any, []metav1.TableRowCondition) {
	name := sc.Name
	if sc.Annotations[isDefaultClassAnnotation] == "true" || sc.Annotations[betaIsDefaultClassAnnotation] == "true" {
		name += " (default)"
	}
	reclaim, binding := "Delete", "Immediate"
	if sc.ReclaimPolicy != nil {
		reclaim = string(*sc.ReclaimPolicy)
	}
	if sc.VolumeBindingMode != nil {
		binding = string(*sc.VolumeBindingMode)
	}
	expansion := false
	if sc.AllowVolumeExpansion != nil {
		expansion = *sc.AllowVolumeExpansion
	}
	return []any{name, sc.Provisioner, reclaim, binding, expansion, since(sc.CreationTimestamp.Time, now)}, nil
}

func csiDriverColumns() []metav1.TableColumnDefinition {
	d := storagev1.CSIDriverSpec{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "AttachRequired", Type: "boolean", Description: d["attachRequired"]},
		{Name: "PodInfoOnMount", Type: "boolean", Description: d["podInfoOnMount"]},
		{Name: "StorageCapacity", Type: "boolean", Description: d["storageCapacity"]},
		{Name: "TokenRequests", Type: "string", Description: d["tokenRequests"]},
		{Name: "RequiresRepublish", Type: "boolean", Description: d["requiresRepublish"]},
		{Name: "Modes", Type: "string", Description: d["volumeLifecycleModes"]},
		ageColumn(),
	}
}

func boolOr(p *bool, def bool) bool {
	if p == nil {
		return def
	}
	return *p
}

func csiDriverRow(d *storagev1.CSIDriver, now time.Time) ([]any, []metav1.TableRowCondition) {
	var modes []string
	for _, m := range d.Spec.VolumeLifecycleModes {
		modes = append(modes, string(m))
	}
	modeCell := strings.Join(modes, ",")
	if modeCell == "" {
		modeCell = "<none>"
	}
	tokens := "<unset>"
	if len(d.Spec.TokenRequests) > 0 {
		var auds []string
		for _, t := range d.Spec.TokenRequests {
			auds = append(auds, t.Audience)
		}
		tokens = strings.Join(auds, ",")
	}
	return []any{
		d.Name,
		boolOr(d.Spec.AttachRequired, true),
		boolOr(d.Spec.PodInfoOnMount, false),
		boolOr(d.Spec.StorageCapacity, false),
		tokens,
		boolOr(d.Spec.RequiresRepublish, false),
		modeCell,
		since(d.CreationTimestamp.Time, now),
	}, nil
}

func csiNodeColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Drivers", Type: "integer", Description: "Drivers indicates the number of CSI drivers registered on the node"},
		ageColumn(),
	}
}

func csiNodeRow(n *storagev1.CSINode, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{n.Name, int64(len(n.Spec.Drivers)), since(n.CreationTimestamp.Time, now)}, nil
}

func volumeAttachmentColumns() []metav1.TableColumnDefinition {
	d := storagev1.VolumeAttachmentSpec{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Attacher", Type: "string", Format: "name", Description: d["attacher"]},
		{Name: "PV", Type: "string", Description: storagev1.VolumeAttachmentSource{}.SwaggerDoc()["persistentVolumeName"]},
		{Name: "Node", Type: "string", Description: d["nodeName"]},
		{Name: "Attached", Type: "boolean", Description: storagev1.VolumeAttachmentStatus{}.SwaggerDoc()["attached"]},
		ageColumn(),
	}
}

func volumeAttachmentRow(v *storagev1.VolumeAttachment, now time.Time) ([]any, []metav1.TableRowCondition) {
	pv := ""
	if v.Spec.Source.PersistentVolumeName != nil {
		pv = *v.Spec.Source.PersistentVolumeName
	}
	return []any{v.Name, v.Spec.Attacher, pv, v.Spec.NodeName, v.Status.Attached, since(v.CreationTimestamp.Time, now)}, nil
}

func csiStorageCapacityColumns() []metav1.TableColumnDefinition {
	d := storagev1.CSIStorageCapacity{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "StorageClassName", Type: "string", Description: d["storageClassName"]},
		{Name: "Capacity", Type: "string", Description: d["capacity"]},
		ageColumn(),
	}
}

func csiStorageCapacityRow(c *storagev1.CSIStorageCapacity, now time.Time) ([]any, []metav1.TableRowCondition) {
	capacity := "<unset>"
	if c.Capacity != nil {
		capacity = c.Capacity.String()
	}
	return []any{c.Name, c.StorageClassName, capacity, since(c.CreationTimestamp.Time, now)}, nil
}

func volumeAttributesClassColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "DriverName", Type: "string", Description: storagev1.VolumeAttributesClass{}.SwaggerDoc()["driverName"]},
		ageColumn(),
	}
}

func volumeAttributesClassRow(c *storagev1.VolumeAttributesClass, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{c.Name, c.DriverName, since(c.CreationTimestamp.Time, now)}, nil
}

func webhookConfigurationColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Webhooks", Type: "integer", Description: "Webhooks indicates the number of webhooks registered in this configuration"},
		ageColumn(),
	}
}

func validatingWebhookConfigurationRow(c *admissionregistrationv1.ValidatingWebhookConfiguration, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{c.Name, int64(len(c.Webhooks)), since(c.CreationTimestamp.Time, now)}, nil
}

func mutatingWebhookConfigurationRow(c *admissionregistrationv1.MutatingWebhookConfiguration, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{c.Name, int64(len(c.Webhooks)), since(c.CreationTimestamp.Time, now)}, nil
}

func validatingPolicyColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Validations", Type: "integer", Description: "Validations indicates the number of validation rules defined in this configuration"},
		{Name: "ParamKind", Type: "string", Description: "ParamKind specifies the kind of resources used to parameterize this policy"},
		ageColumn(),
	}
}

func mutatingPolicyColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Mutations", Type: "integer", Description: "Mutations indicates the number of mutations rules defined in this configuration"},
		{Name: "ParamKind", Type: "string", Description: "ParamKind specifies the kind of resources used to parameterize this policy"},
		ageColumn(),
	}
}

func paramKindCell(pk *admissionregistrationv1.ParamKind) string {
	if pk == nil {
		return "<unset>"
	}
	return pk.APIVersion + "/" + pk.Kind
}

func validatingPolicyRow(p *admissionregistrationv1.ValidatingAdmissionPolicy, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{p.Name, int64(len(p.Spec.Validations)), paramKindCell(p.Spec.ParamKind), since(p.CreationTimestamp.Time, now)}, nil
}

func mutatingPolicyRow(p *admissionregistrationv1.MutatingAdmissionPolicy, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{p.Name, int64(len(p.Spec.Mutations)), paramKindCell(p.Spec.ParamKind), since(p.CreationTimestamp.Time, now)}, nil
}

func policyBindingColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "PolicyName", Type: "string", Description: "PolicyName indicates the policy definition which the policy binding binded to"},
		{Name: "ParamRef", Type: "string", Description: "ParamRef indicates the param resource which sets the configration param"},
		ageColumn(),
	}
}

// paramRefCell names a binding's parameters: namespace/name, "*/name" when
// the namespace is not known here, or the selector.
func paramRefCell(pr *admissionregistrationv1.ParamRef) string {
	switch {
	case pr == nil:
		return "<unset>"
	case pr.Name != "" && pr.Namespace != "":
		return pr.Namespace + "/" + pr.Name
	case pr.Name != "":
		return "*/" + pr.Name
	case pr.Selector != nil:
		return pr.Selector.String()
	}
	return "<unset>"
}

func validatingPolicyBindingRow(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{b.Name, b.Spec.PolicyName, paramRefCell(b.Spec.ParamRef), since(b.CreationTimestamp.Time, now)}, nil
}

func mutatingPolicyBindingRow(b *admissionregistrationv1.MutatingAdmissionPolicyBinding, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{b.Name, b.Spec.PolicyName, paramRefCell(b.Spec.ParamRef), since(b.CreationTimestamp.Time, now)}, nil
}

func nameAgeColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{nameColumn(), ageColumn()}
}

func deviceClassRow(c *resourcev1.DeviceClass, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{c.Name, since(c.CreationTimestamp.Time, now)}, nil
}

func resourceClaimTemplateRow(t *resourcev1.ResourceClaimTemplate, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{t.Name, since(t.CreationTimestamp.Time, now)}, nil
}

func resourceClaimColumns() []metav1.TableColumnDefinition {
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "State", Type: "string", Description: "A summary of the current state (allocated, pending, reserved, etc.)."},
		ageColumn(),
	}
}

// resourceClaimState summarizes a claim as kubectl does: deleted, pending,
// allocated, reserved, comma-separated.
func resourceClaimState(c *resourcev1.ResourceClaim) string {
	var states []string
	deleted := c.DeletionTimestamp != nil
	if deleted {
		states = append(states, "deleted")
	}
	switch {
	case c.Status.Allocation == nil:
		if !deleted {
			states = append(states, "pending")
		}
	default:
		states = append(states, "allocated")
		if len(c.Status.ReservedFor) > 0 {
			states = append(states, "reserved")
		}
	}
	return strings.Join(states, ",")
}

func resourceClaimRow(c *resourcev1.ResourceClaim, now time.Time) ([]any, []metav1.TableRowCondition) {
	return []any{c.Name, resourceClaimState(c), since(c.CreationTimestamp.Time, now)}, nil
}

func resourceSliceColumns() []metav1.TableColumnDefinition {
	d := resourcev1.ResourceSliceSpec{}.SwaggerDoc()
	return []metav1.TableColumnDefinition{
		nameColumn(),
		{Name: "Node", Type: "string", Description: d["nodeName"]},
		{Name: "Driver", Type: "string", Description: d["driver"]},
		{Name: "Pool", Type: "string", Description: resourcev1.ResourcePool{}.SwaggerDoc()["name"]},
		ageColumn(),
	}
}

func resourceSliceRow(s *resourcev1.ResourceSlice, now time.Time) ([]any, []metav1.TableRowCondition) {
	node := "" // a slice of devices not bound to one node
	if s.Spec.NodeName != nil {
		node = *s.Spec.NodeName
	}
	return []any{s.Name, node, s.Spec.Driver, s.Spec.Pool.Name, since(s.CreationTimestamp.Time, now)}, nil
}
