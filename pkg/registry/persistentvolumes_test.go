package registry

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func claim(name, size string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}},
		},
	}
}

func volume(name string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("10Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}},
		},
	}
}

func TestPVCDefaultsAndValidation(t *testing.T) {
	c := claim("data", "1Gi")
	c.Status.Phase = corev1.ClaimBound
	if errs := createObj(t, PersistentVolumeClaims(), c); len(errs) > 0 {
		t.Fatal(errs)
	}
	if c.Spec.VolumeMode == nil || *c.Spec.VolumeMode != corev1.PersistentVolumeFilesystem || c.Status.Phase != corev1.ClaimPending {
		t.Errorf("volume mode %v phase %q", c.Spec.VolumeMode, c.Status.Phase)
	}
	for _, st := range []Strategy{PersistentVolumeClaims(), PersistentVolumes()} {
		if !slices.Contains(st.FieldLabels(), "name") {
			t.Errorf("%s: field labels %v lack name", st.Info().Resource, st.FieldLabels())
		}
	}
	tests := []struct {
		name   string
		change func(c *corev1.PersistentVolumeClaim)
		want   []string
	}{
		{"no access modes", func(c *corev1.PersistentVolumeClaim) { c.Spec.AccessModes = nil },
			[]string{"spec.accessModes: Required value: at least 1 access mode is required"}},
		{"unknown access mode", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{"ReadSometimes"}
		},
			[]string{`spec.accessModes: Unsupported value: "ReadSometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"`}},
		{"no storage", func(c *corev1.PersistentVolumeClaim) { c.Spec.Resources.Requests = nil },
			[]string{"spec.resources[storage]: Required value"}},
		{"zero storage", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("0")
		}, []string{`spec.resources[storage]: Invalid value: "0": must be greater than zero`}},
		{"data source of another kind", func(c *corev1.PersistentVolumeClaim) {
			c.Spec.DataSource = &corev1.TypedLocalObjectReference{Kind: "Secret", Name: "s"}
		}, []string{`spec.dataSource: Invalid value: "Secret": must be 'PersistentVolumeClaim' when referencing the default apiGroup`}},
		{"volume mode", func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeMode = ptr(corev1.PersistentVolumeMode("Raw")) },
			[]string{`spec.volumeMode: Unsupported value: "Raw": supported values: "Block", "Filesystem"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := claim("data", "1Gi")
			tt.change(c)
			if diff := cmp.Diff(tt.want, errStrings(createObj(t, PersistentVolumeClaims(), c))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPVCUpdate(t *testing.T) {
	stored := func(bound bool) *corev1.PersistentVolumeClaim {
		c := claim("data", "1Gi")
		createObj(t, PersistentVolumeClaims(), c)
		c.ResourceVersion = "9"
		if bound {
			c.Spec.VolumeName = "pv-1"
			c.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}
		}
		return c
	}
	immutable := "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"
	tests := []struct {
		name   string
		bound  bool
		change func(c *corev1.PersistentVolumeClaim)
		want   []string // prefixes
	}{
		{"binder sets the volume", false, func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-1" }, nil},
		{"bound claim grows", true, func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		}, nil},
		{"bound claim shrinks", true, func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("500Mi")
		}, []string{"spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"}},
		{"unbound claim grows", false, func(c *corev1.PersistentVolumeClaim) {
			c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		}, []string{immutable}},
		{"access modes", true, func(c *corev1.PersistentVolumeClaim) {
			c.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		}, []string{immutable}},
		{"volume attributes class", true, func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeAttributesClassName = ptr("fast") }, nil},
		{"class given to a claim of none", false, func(c *corev1.PersistentVolumeClaim) { c.Spec.StorageClassName = ptr("standard") }, nil},
		{"rebinding", true, func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = "pv-2" }, []string{immutable}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old := stored(tt.bound)
			c := old.DeepCopy()
			tt.change(c)
			got := errStrings(updateObj(t, PersistentVolumeClaims(), c, old))
			if len(got) != len(tt.want) {
				t.Fatalf("errors %q, want %q", got, tt.want)
			}
			for i := range got {
				if !strings.HasPrefix(got[i], tt.want[i]) {
					t.Errorf("error %q, want %q", got[i], tt.want[i])
				}
			}
		})
	}
}

func TestPVDefaultsAndValidation(t *testing.T) {
	v := volume("pv-1")
	if errs := createObj(t, PersistentVolumes(), v); len(errs) > 0 {
		t.Fatal(errs)
	}
	if v.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || *v.Spec.VolumeMode != corev1.PersistentVolumeFilesystem ||
		v.Status.Phase != corev1.VolumePending {
		t.Errorf("defaults %+v %+v", v.Spec, v.Status)
	}
	if PersistentVolumes().Info().Namespaced {
		t.Error("persistent volumes are cluster-scoped")
	}
	tests := []struct {
		name   string
		change func(v *corev1.PersistentVolume)
		want   []string
	}{
		{"no source", func(v *corev1.PersistentVolume) { v.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{} },
			[]string{"spec: Required value: must specify a volume type"}},
		{"two sources", func(v *corev1.PersistentVolume) {
			v.Spec.NFS = &corev1.NFSVolumeSource{Server: "nfs", Path: "/x"}
		}, []string{"spec.nfs: Forbidden: may not specify more than 1 volume type"}},
		{"capacity other than storage", func(v *corev1.PersistentVolume) {
			v.Spec.Capacity = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
		}, []string{`spec.capacity: Unsupported value: {"cpu":"1"}: supported values: "storage"`}},
		{"reclaim policy", func(v *corev1.PersistentVolume) { v.Spec.PersistentVolumeReclaimPolicy = "Keep" },
			[]string{`spec.persistentVolumeReclaimPolicy: Unsupported value: "Keep": supported values: "Delete", "Recycle", "Retain"`}},
		{"no access modes", func(v *corev1.PersistentVolume) { v.Spec.AccessModes = nil }, []string{"spec.accessModes: Required value"}},
		{"recycling /", func(v *corev1.PersistentVolume) {
			v.Spec.HostPath.Path = "/"
			v.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimRecycle
		}, []string{"spec.persistentVolumeReclaimPolicy: Forbidden: may not be 'recycle' for a hostPath mount of '/'"}},
		{"attributes class without csi", func(v *corev1.PersistentVolume) { v.Spec.VolumeAttributesClassName = ptr("fast") },
			[]string{"spec.csi: Required value: has to be specified when using volumeAttributesClassName"}},
		{"local without affinity", func(v *corev1.PersistentVolume) {
			v.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{Local: &corev1.LocalVolumeSource{Path: "/mnt"}}
		}, []string{"spec.nodeAffinity: Required value: Local volume requires node affinity"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := volume("pv-1")
			tt.change(v)
			if diff := cmp.Diff(tt.want, errStrings(createObj(t, PersistentVolumes(), v))); diff != "" {
				t.Errorf("errors (-want +got):\n%s", diff)
			}
		})
	}
	old := volume("pv-1")
	createObj(t, PersistentVolumes(), old)
	old.ResourceVersion = "1"
	v = old.DeepCopy()
	v.Spec.HostPath.Path = "/other"
	got := errStrings(updateObj(t, PersistentVolumes(), v, old))
	if len(got) != 1 || !strings.HasPrefix(got[0], "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation\n") ||
		!strings.Contains(got[0], `"/other"`) {
		t.Errorf("update errors %q", got)
	}
	// The reclaim policy and the claim may change.
	v = old.DeepCopy()
	v.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
	v.Spec.ClaimRef = &corev1.ObjectReference{Namespace: "default", Name: "data"}
	if errs := updateObj(t, PersistentVolumes(), v, old); len(errs) > 0 {
		t.Errorf("update refused: %v", errs)
	}
}
