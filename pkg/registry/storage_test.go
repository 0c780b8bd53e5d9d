package registry

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func TestStorageDefaults(t *testing.T) {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}, Provisioner: "csi.example.com"}
	StorageClasses().Default(sc)
	if *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete || *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate {
		t.Errorf("storageclass defaults: %+v", sc)
	}
	d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "csi.example.com"}}
	CSIDrivers().Default(d)
	fs := storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy
	want := storagev1.CSIDriverSpec{
		AttachRequired: ptr(true), PodInfoOnMount: ptr(false), StorageCapacity: ptr(false), FSGroupPolicy: &fs,
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{storagev1.VolumeLifecyclePersistent},
		RequiresRepublish:    ptr(false), SELinuxMount: ptr(false),
	}
	if diff := cmp.Diff(want, d.Spec); diff != "" {
		t.Errorf("csidriver defaults (-want +got):\n%s", diff)
	}
}

func TestStorageValidation(t *testing.T) {
	pv := "pv-1"
	bad := resource.MustParse("-1")
	tests := []struct {
		name     string
		strategy Strategy
		obj      runtime.Object
		want     []string
	}{
		{"valid storageclass", StorageClasses(), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}, Provisioner: "csi.example.com"}, nil},
		{"storageclass without provisioner", StorageClasses(), &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "s"}}, []string{
			"provisioner: Required value",
		}},
		{"storageclass bad policy and mode", StorageClasses(), &storagev1.StorageClass{
			ObjectMeta: metav1.ObjectMeta{Name: "s"}, Provisioner: "p",
			ReclaimPolicy: ptr(corev1.PersistentVolumeReclaimRecycle), VolumeBindingMode: ptr(storagev1.VolumeBindingMode("Later")),
		}, []string{
			`reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"`,
			`volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"`,
		}},
		{"storageclass bad provisioner, empty parameter", StorageClasses(), &storagev1.StorageClass{
			ObjectMeta: metav1.ObjectMeta{Name: "s"}, Provisioner: "a b", Parameters: map[string]string{"": "x"},
		}, []string{
			`provisioner: Invalid value: "a b": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
			`parameters: Invalid value: "": field can not be empty.`,
		}},
		{"storageclass duplicate topology", StorageClasses(), &storagev1.StorageClass{
			ObjectMeta: metav1.ObjectMeta{Name: "s"}, Provisioner: "p",
			AllowedTopologies: []corev1.TopologySelectorTerm{
				{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: "zone", Values: []string{"a"}}}},
				{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: "zone", Values: []string{"a"}}, {Key: "zone"}}},
				{MatchLabelExpressions: []corev1.TopologySelectorLabelRequirement{{Key: "zone", Values: []string{"a"}}}},
			},
		}, []string{
			"allowedTopologies[1].matchLabelExpressions[1].values: Required value",
			`allowedTopologies[1].matchLabelExpressions[1].key: Duplicate value: "zone"`,
			`allowedTopologies[2].matchLabelExpressions: Duplicate value: ""`,
		}},
		{"valid csidriver", CSIDrivers(), func() runtime.Object {
			d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "csi.example.com"}}
			CSIDrivers().Default(d)
			return d
		}(), nil},
		{"csidriver undefaulted and bad", CSIDrivers(), &storagev1.CSIDriver{
			ObjectMeta: metav1.ObjectMeta{Name: "csi.example.com"},
			Spec: storagev1.CSIDriverSpec{
				FSGroupPolicy:        ptr(storagev1.FSGroupPolicy("Some")),
				VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{"Forever"},
				TokenRequests:        []storagev1.TokenRequest{{Audience: "a", ExpirationSeconds: ptr[int64](60)}, {Audience: "a"}},
			},
		}, []string{
			"spec.attachedRequired: Required value",
			"spec.podInfoOnMount: Required value",
			"spec.storageCapacity: Required value",
			`spec.fsGroupPolicy: Unsupported value: "Some": supported values: "File", "None", "ReadWriteOnceWithFSType"`,
			"spec.tokenRequests[0].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
			`spec.tokenRequests[1].audience: Duplicate value: "a"`,
			`spec.volumeLifecycleModes: Unsupported value: "Forever": supported values: "Persistent", "Ephemeral"`,
			"spec.seLinuxMount: Required value",
		}},
		{"csinode", CSINodes(), &storagev1.CSINode{
			ObjectMeta: metav1.ObjectMeta{Name: "node-1"},
			Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{
				{Name: "csi.example.com", NodeID: "n1", TopologyKeys: []string{"zone", "zone"}},
				{Name: "csi.example.com"},
			}},
		}, []string{
			`spec.drivers[0]: Duplicate value: "zone"`,
			"spec.drivers[1].nodeID: Required value",
			`spec.drivers[1].name: Duplicate value: "csi.example.com"`,
		}},
		{"valid volumeattachment", VolumeAttachments(), &storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: "va"},
			Spec:       storagev1.VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: "node-1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}},
		}, nil},
		{"volumeattachment empty", VolumeAttachments(), &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "va"}, Spec: storagev1.VolumeAttachmentSpec{NodeName: "n"}}, []string{
			"spec.attacher: Required value",
			"spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName",
			"spec.attacher: Required value",
			`spec.attacher: Invalid value: "": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
		}},
		{"csistoragecapacity", CSIStorageCapacities(), &storagev1.CSIStorageCapacity{
			ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "kube-system"}, StorageClassName: "Fast!", Capacity: &bad,
		}, []string{
			`storageClassName: Invalid value: "Fast!": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')`,
			`capacity: Invalid value: "-1": must be greater than or equal to 0`,
		}},
		{"volumeattributesclass without parameters", VolumeAttributesClasses(), &storagev1.VolumeAttributesClass{
			ObjectMeta: metav1.ObjectMeta{Name: "gold"}, DriverName: "csi.example.com",
		}, []string{"parameters: Required value: must contain at least one key/value pair"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, ok := tc.obj.(*storagev1.StorageClass); ok {
				tc.strategy.Default(tc.obj) // as the server does first
			}
			if d := cmp.Diff(tc.want, errStrings(tc.strategy.Validate(tc.obj))); d != "" {
				t.Errorf("errors (-want +got):\n%s", d)
			}
		})
	}
}

func TestStorageImmutability(t *testing.T) {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "s", ResourceVersion: "1"}, Provisioner: "p", Parameters: map[string]string{"a": "1"}}
	StorageClasses().Default(sc)
	sc2 := sc.DeepCopy()
	sc2.Provisioner, sc2.Parameters = "q", map[string]string{"a": "2"}
	sc2.ReclaimPolicy = ptr(corev1.PersistentVolumeReclaimRetain)
	sc2.VolumeBindingMode = ptr(storagev1.VolumeBindingWaitForFirstConsumer)
	want := []string{
		"parameters: Forbidden: updates to parameters are forbidden.",
		"provisioner: Forbidden: updates to provisioner are forbidden.",
		"reclaimPolicy: Forbidden: updates to reclaimPolicy are forbidden.",
		`volumeBindingMode: Invalid value: "WaitForFirstConsumer": field is immutable`,
	}
	if d := cmp.Diff(want, errStrings(StorageClasses().ValidateUpdate(sc2, sc))); d != "" {
		t.Errorf("storageclass (-want +got):\n%s", d)
	}

	d := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "csi.example.com", ResourceVersion: "1"}}
	CSIDrivers().Default(d)
	d2 := d.DeepCopy()
	d2.Spec.AttachRequired = ptr(false)
	d2.Spec.PodInfoOnMount = ptr(true)
	d2.Spec.VolumeLifecycleModes = append(d2.Spec.VolumeLifecycleModes, storagev1.VolumeLifecycleEphemeral)
	want = []string{
		"spec.attachRequired: Invalid value: false: field is immutable",
		`spec.volumeLifecycleModes: Invalid value: ["Persistent","Ephemeral"]: field is immutable`,
	}
	if diff := cmp.Diff(want, errStrings(CSIDrivers().ValidateUpdate(d2, d))); diff != "" {
		t.Errorf("csidriver (-want +got):\n%s", diff)
	}

	pv := "pv"
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "va", ResourceVersion: "1"},
		Spec:       storagev1.VolumeAttachmentSpec{Attacher: "csi.example.com", NodeName: "n", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}},
	}
	va2 := va.DeepCopy()
	va2.Spec.NodeName = "m"
	if errs := VolumeAttachments().ValidateUpdate(va2, va); len(errs) != 1 || errs[0].Field != "spec" || errs[0].Detail != "field is immutable" {
		t.Errorf("volumeattachment: %v", errs)
	}
	// Status writes keep the spec; spec writes keep the status.
	va2.Status.Attached = true
	out := VolumeAttachments().PrepareForStatusUpdate(va2.DeepCopy(), va).(*storagev1.VolumeAttachment)
	if out.Spec.NodeName != "n" || !out.Status.Attached {
		t.Errorf("status write: %+v", out)
	}
	main := va2.DeepCopy()
	VolumeAttachments().PrepareForUpdate(main, va)
	if main.Status.Attached {
		t.Errorf("spec write changed status")
	}

	vac := &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "gold", ResourceVersion: "1"}, DriverName: "d", Parameters: map[string]string{"iops": "1"}}
	vac2 := vac.DeepCopy()
	vac2.DriverName, vac2.Parameters = "e", map[string]string{"iops": "2"}
	want = []string{
		"driverName: Forbidden: updates to driverName are forbidden.",
		"parameters: Forbidden: updates to parameters are forbidden.",
	}
	if diff := cmp.Diff(want, errStrings(VolumeAttributesClasses().ValidateUpdate(vac2, vac))); diff != "" {
		t.Errorf("volumeattributesclass (-want +got):\n%s", diff)
	}

	capa := &storagev1.CSIStorageCapacity{ObjectMeta: metav1.ObjectMeta{Name: "c", Namespace: "ns", ResourceVersion: "1"}, StorageClassName: "fast"}
	capa2 := capa.DeepCopy()
	capa2.StorageClassName = "slow"
	if errs := CSIStorageCapacities().ValidateUpdate(capa2, capa); len(errs) != 1 || errs[0].Field != "storageClassName" {
		t.Errorf("csistoragecapacity: %v", errs)
	}

	n := &storagev1.CSINode{ObjectMeta: metav1.ObjectMeta{Name: "n", ResourceVersion: "1"}, Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{{Name: "csi.example.com", NodeID: "a"}}}}
	n2 := n.DeepCopy()
	n2.Spec.Drivers[0].NodeID = "b"
	if errs := CSINodes().ValidateUpdate(n2, n); len(errs) != 1 || errs[0].Field != "CSINodeDriver" {
		t.Errorf("csinode: %v", errs)
	}
	n2 = n.DeepCopy()
	n2.Spec.Drivers[0].Allocatable = &storagev1.VolumeNodeResources{Count: ptr[int32](3)}
	if errs := CSINodes().ValidateUpdate(n2, n); len(errs) != 0 {
		t.Errorf("csinode allocatable: %v", errs)
	}
}
