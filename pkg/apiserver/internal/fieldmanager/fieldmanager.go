package fieldmanager

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/merge"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
)

// Manager names kube-apiserver gives the owners it makes up.
const (
	// BeforeFirstApply owns what an untracked object held when it was
	// first applied to.
	BeforeFirstApply = "before-first-apply"
	// AncientChanges owns the merged fields of the oldest Update managers
	// once there are more than MaxUpdateManagers.
	AncientChanges = "ancient-changes"
	// MaxUpdateManagers is how many Update managers an object keeps.
	MaxUpdateManagers = 10
	// LastAppliedAnnotation holds the configuration kubectl applied
	// client-side.
	LastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"
	// kubectlManager is the manager whose applies honour LastAppliedAnnotation.
	kubectlManager = "kubectl"
	// currentOperation is the temporary owner of what one update changes.
	currentOperation = "\x00current-operation"
)

// Config configures New.
type Config struct {
	// Types parses objects of Kind (and of its other Versions). Required.
	Types TypeConverter
	// Kind is the kind and version the endpoint reads and writes. Required.
	Kind schema.GroupVersionKind
	// Subresource is the endpoint's subresource ("status", "scale"), empty
	// for the resource itself.
	Subresource string
	// Reset holds the fields the endpoint resets to their stored values
	// (the status through the resource, the spec through status): they are
	// never owned through it.
	Reset *fieldpath.Set
	// Versions are all served versions of the kind ("v1", "v2"); only
	// Kind's version when empty.
	Versions []string
	// Convert returns obj, an object of the kind at some served version,
	// at version gv. Nil when the kind has one version; a manager recorded
	// at a version that cannot be converted to is then forgotten.
	Convert func(obj runtime.Object, gv schema.GroupVersion) (runtime.Object, error)
	// New returns an empty object of Kind. Required.
	New func() runtime.Object
	// Clock stamps managedFields entries; the real clock when nil.
	Clock clock.PassiveClock
}

// FieldManager maintains managedFields and merges applied configurations
// for one endpoint. It is safe for concurrent use.
type FieldManager struct {
	cfg     Config
	version fieldpath.APIVersion
	updater *merge.Updater
}

// New returns the FieldManager of an endpoint.
func New(cfg Config) (*FieldManager, error) {
	if cfg.Types == nil || cfg.New == nil || cfg.Kind.Kind == "" || cfg.Kind.Version == "" {
		return nil, errors.New("fieldmanager: Types, Kind and New are required")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if len(cfg.Versions) == 0 {
		cfg.Versions = []string{cfg.Kind.Version}
	}
	f := &FieldManager{cfg: cfg, version: fieldpath.APIVersion(cfg.Kind.GroupVersion().String())}
	b := merge.UpdaterBuilder{Converter: versionConverter{f}}
	if cfg.Reset != nil && !cfg.Reset.Empty() {
		b.IgnoreFilter = map[fieldpath.APIVersion]fieldpath.Filter{}
		for _, v := range cfg.Versions {
			gv := schema.GroupVersion{Group: cfg.Kind.Group, Version: v}
			b.IgnoreFilter[fieldpath.APIVersion(gv.String())] = fieldpath.NewExcludeSetFilter(cfg.Reset)
		}
	}
	f.updater = b.BuildUpdater()
	return f, nil
}

// Update records in obj's managedFields the fields a create, update or
// patch by manager changed from live (an empty object for a create) to
// obj, and returns obj. It does not fail: when the fields cannot be
// tracked (an object its schema does not describe), obj keeps live's
// managedFields.
func (f *FieldManager) Update(live, obj runtime.Object, manager string) runtime.Object {
	lm, om := accessor(live), accessor(obj)
	if lm == nil || om == nil {
		return obj
	}
	m := f.managedForUpdate(lm, om)
	om.SetManagedFields(nil)
	if len(m.fields) == 0 && lm.GetUID() != "" {
		// An existing object nobody tracked yet: tracking starts at its
		// first apply.
		return obj
	}
	m, err := f.recordUpdate(live, obj, m, manager)
	if err == nil {
		var entries []metav1.ManagedFieldsEntry
		if entries, err = encodeManaged(m); err == nil {
			om.SetManagedFields(entries)
			return obj
		}
	}
	om.SetManagedFields(lm.GetManagedFields())
	return obj
}

// managedForUpdate picks the managedFields an update starts from: those
// the client sent, unless it sent none, an unreadable list or wrote
// through a subresource, in which case the live object's; none when the
// client asked for a reset.
func (f *FieldManager) managedForUpdate(lm, om metav1.Object) managed {
	if f.cfg.Subresource == "" {
		if isReset(om.GetManagedFields()) {
			return emptyManaged()
		}
		if m, err := decodeManaged(om.GetManagedFields()); err == nil && len(m.fields) > 0 {
			return m
		}
	}
	m, err := decodeManaged(lm.GetManagedFields())
	if err != nil {
		return emptyManaged()
	}
	return m
}

// recordUpdate gives manager the fields that changed from live to obj.
func (f *FieldManager) recordUpdate(live, obj runtime.Object, m managed, manager string) (managed, error) {
	liveT, err := f.cfg.Types.ToTyped(withKind(live, f.cfg.Kind), typed.AllowDuplicates)
	if err != nil {
		return m, err
	}
	objT, err := f.cfg.Types.ToTyped(withKind(obj, f.cfg.Kind), typed.AllowDuplicates)
	if err != nil {
		return m, err
	}
	_, fields, err := f.updater.Update(liveT, objT, f.version, m.fields, currentOperation)
	if err != nil {
		return m, err
	}
	m.fields = fields
	id := f.id(manager, metav1.ManagedFieldsOperationUpdate)
	if changed, ok := fields[currentOperation]; ok {
		delete(fields, currentOperation)
		set := changed.Set()
		if prev, ok := fields[id]; ok {
			set = set.Union(prev.Set())
		}
		fields[id] = fieldpath.NewVersionedSet(set, f.version, false)
		m.times[id] = f.now()
	}
	stripServerFields(m, id)
	f.capUpdateManagers(m)
	return m, nil
}

// Apply merges config, an applied configuration of Kind, into live (an
// empty object when it does not exist yet) as manager, and returns the
// object to store with its managedFields. Unless force is set, changing
// a field another manager owns fails with a 409 Conflict. An apply that
// changes nothing returns live unchanged.
func (f *FieldManager) Apply(live, config runtime.Object, manager string, force bool) (runtime.Object, error) {
	if gvk := config.GetObjectKind().GroupVersionKind(); gvk != f.cfg.Kind {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid object type: %v", gvk))
	}
	cm := accessor(config)
	if cm == nil {
		return nil, apierrors.NewBadRequest("an applied configuration must be an object with metadata")
	}
	if cm.GetManagedFields() != nil {
		return nil, apierrors.NewBadRequest("metadata.managedFields must be nil")
	}
	lm := accessor(live)
	m, err := decodeManaged(lm.GetManagedFields())
	if err != nil {
		return nil, fmt.Errorf("failed to decode managed fields: %w", err)
	}
	live = withKind(live, f.cfg.Kind)
	if len(m.fields) == 0 && lm.GetUID() != "" {
		// First apply to an untracked object: what it holds so far
		// belongs to a manager of its own, so that the apply conflicts
		// with it rather than silently taking it over.
		if m, err = f.recordUpdate(withKind(f.cfg.New(), f.cfg.Kind), live, m, BeforeFirstApply); err != nil {
			return nil, fmt.Errorf("failed to create manager for existing fields: %w", err)
		}
	}
	liveT, err := f.cfg.Types.ToTyped(live, typed.AllowDuplicates)
	if err != nil {
		return nil, fmt.Errorf("failed to create typed live object (%s): %w", describeObject(live), err)
	}
	configT, err := f.cfg.Types.ToTyped(config)
	if err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("failed to create typed patch object (%s): %v", describeObject(config), err))
	}
	id := f.id(manager, metav1.ManagedFieldsOperationApply)
	// The updater changes the managers it is given; kubectl's retry over
	// its last-applied configuration needs them as they were.
	var before fieldpath.ManagedFields
	if manager == kubectlManager {
		before = m.fields.Copy()
	}
	merged, fields, err := f.updater.Apply(liveT, configT, f.version, m.fields, id, force)
	var conflicts merge.Conflicts
	if errors.As(err, &conflicts) && manager == kubectlManager {
		merged, fields, err = f.applyOverLastApplied(live, liveT, configT, before, id, conflicts)
	}
	if err != nil {
		if errors.As(err, &conflicts) {
			return nil, conflictError(conflicts)
		}
		return nil, apierrors.NewBadRequest(err.Error())
	}
	m.fields = fields
	var out runtime.Object
	if merged != nil {
		if out, err = f.cfg.Types.FromTyped(merged, f.cfg.Kind); err != nil {
			return nil, fmt.Errorf("failed to convert the applied object: %w", err)
		}
		m.times[id] = f.now()
	} else {
		out = live.DeepCopyObject()
	}
	stripServerFields(m, id)
	om := accessor(out)
	if manager == kubectlManager && lastApplied(om) != "" {
		setLastApplied(om, config)
	}
	entries, err := encodeManaged(m)
	if err != nil {
		return nil, err
	}
	om.SetManagedFields(entries)
	return out, nil
}

// applyOverLastApplied retries an apply by kubectl that conflicted, taking
// the conflicting fields that the object's client-side
// last-applied-configuration holds with their live values: kubectl applied
// them before and nobody changed them since. Other conflicts remain.
func (f *FieldManager) applyOverLastApplied(live runtime.Object, liveT, configT *typed.TypedValue, fields fieldpath.ManagedFields, id string, conflicts merge.Conflicts) (*typed.TypedValue, fieldpath.ManagedFields, error) {
	allowed, ok := f.unchangedSinceLastApplied(live, liveT)
	if !ok {
		return nil, nil, conflicts
	}
	var left merge.Conflicts
	for _, c := range conflicts {
		if !allowed.Has(c.Path) {
			left = append(left, c)
		}
	}
	if len(left) > 0 {
		return nil, nil, left
	}
	return f.updater.Apply(liveT, configT, f.version, fields, id, true)
}

// unchangedSinceLastApplied returns the fields of live's
// last-applied-configuration that still hold the values it gave them.
func (f *FieldManager) unchangedSinceLastApplied(live runtime.Object, liveT *typed.TypedValue) (*fieldpath.Set, bool) {
	raw := lastApplied(accessor(live))
	if raw == "" {
		return nil, false
	}
	last := &unstructured.Unstructured{}
	if err := json.Unmarshal([]byte(raw), &last.Object); err != nil || last.GetAPIVersion() != f.cfg.Kind.GroupVersion().String() {
		return nil, false
	}
	lastT, err := f.cfg.Types.ToTyped(withKind(last, f.cfg.Kind))
	if err != nil {
		return nil, false
	}
	set, err := lastT.ToFieldSet()
	if err != nil {
		return nil, false
	}
	diff, err := lastT.Compare(liveT)
	if err != nil {
		return nil, false
	}
	return set.Difference(diff.Modified).Difference(diff.Added).Difference(diff.Removed), true
}

// id returns the identity of manager for an operation through this
// endpoint; a nameless manager is "unknown".
func (f *FieldManager) id(manager string, op metav1.ManagedFieldsOperationType) string {
	if manager == "" {
		manager = "unknown"
	}
	return managerID(&metav1.ManagedFieldsEntry{Manager: manager, Operation: op, APIVersion: string(f.version), Subresource: f.cfg.Subresource})
}

func (f *FieldManager) now() *metav1.Time {
	t := metav1.NewTime(f.cfg.Clock.Now().UTC())
	return &t
}

// serverFields are the fields the server sets and nobody owns.
var serverFields = fieldpath.NewSet(
	fieldpath.MakePathOrDie("apiVersion"),
	fieldpath.MakePathOrDie("kind"),
	fieldpath.MakePathOrDie("metadata"),
	fieldpath.MakePathOrDie("metadata", "name"),
	fieldpath.MakePathOrDie("metadata", "namespace"),
	fieldpath.MakePathOrDie("metadata", "creationTimestamp"),
	fieldpath.MakePathOrDie("metadata", "selfLink"),
	fieldpath.MakePathOrDie("metadata", "uid"),
	fieldpath.MakePathOrDie("metadata", "clusterName"),
	fieldpath.MakePathOrDie("metadata", "generation"),
	fieldpath.MakePathOrDie("metadata", "managedFields"),
	fieldpath.MakePathOrDie("metadata", "resourceVersion"),
)

// stripServerFields removes serverFields from the set of manager id, and
// the manager when it owns nothing else.
func stripServerFields(m managed, id string) {
	vs, ok := m.fields[id]
	if !ok {
		return
	}
	set := vs.Set().Difference(serverFields)
	if set.Empty() {
		delete(m.fields, id)
		delete(m.times, id)
		return
	}
	m.fields[id] = fieldpath.NewVersionedSet(set, vs.APIVersion(), vs.Applied())
}

// capUpdateManagers merges the oldest Update managers, per apiVersion, into
// one AncientChanges manager until at most MaxUpdateManagers remain.
func (f *FieldManager) capUpdateManagers(m managed) {
	var updaters []string
	for id, vs := range m.fields {
		if !vs.Applied() {
			updaters = append(updaters, id)
		}
	}
	if len(updaters) <= MaxUpdateManagers {
		return
	}
	slices.SortFunc(updaters, func(a, b string) int {
		if d := unixSeconds(m.times[a]) - unixSeconds(m.times[b]); d != 0 {
			if d < 0 {
				return -1
			}
			return 1
		}
		switch {
		case a < b:
			return -1
		case a > b:
			return 1
		}
		return 0
	})
	// The first manager of a version seen becomes that version's bucket
	// once a second one of the version has to be merged.
	firstOfVersion := map[fieldpath.APIVersion]string{}
	count := len(updaters)
	for _, id := range updaters {
		if count <= MaxUpdateManagers {
			break
		}
		vs := m.fields[id]
		v := vs.APIVersion()
		first, ok := firstOfVersion[v]
		if !ok {
			firstOfVersion[v] = id
			continue
		}
		bucket := managerID(&metav1.ManagedFieldsEntry{Manager: AncientChanges, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: string(v)})
		if _, ok := m.fields[bucket]; !ok {
			m.fields[bucket] = m.fields[first]
			delete(m.fields, first)
			delete(m.times, first)
		}
		m.fields[bucket] = fieldpath.NewVersionedSet(vs.Set().Union(m.fields[bucket].Set()), v, false)
		m.times[bucket] = m.times[id]
		delete(m.fields, id)
		delete(m.times, id)
		count--
	}
}

// versionConverter converts typed values of the endpoint's version to the
// other versions of the kind, for managers recorded at another version.
type versionConverter struct{ f *FieldManager }

func (c versionConverter) Convert(v *typed.TypedValue, version fieldpath.APIVersion) (*typed.TypedValue, error) {
	if version == c.f.version {
		return v, nil
	}
	gv, err := schema.ParseGroupVersion(string(version))
	if err != nil || gv.Group != c.f.cfg.Kind.Group || c.f.cfg.Convert == nil {
		return nil, &missingVersionError{gvk: gv.WithKind(c.f.cfg.Kind.Kind)}
	}
	obj, err := c.f.cfg.Types.FromTyped(v, c.f.cfg.Kind)
	if err != nil {
		return nil, err
	}
	out, err := c.f.cfg.Convert(obj, gv)
	if err != nil {
		return nil, &missingVersionError{gvk: gv.WithKind(c.f.cfg.Kind.Kind)}
	}
	return c.f.cfg.Types.ToTyped(withKind(out, gv.WithKind(c.f.cfg.Kind.Kind)), typed.AllowDuplicates)
}

func (versionConverter) IsMissingVersionError(err error) bool {
	var missing *missingVersionError
	return errors.As(err, &missing)
}

// accessor returns obj's metadata, or nil for an object without.
func accessor(obj runtime.Object) metav1.Object {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	return m
}

// withKind returns obj with its apiVersion and kind set to gvk, copying it
// when they differ so that the caller's object is left as it was.
func withKind(obj runtime.Object, gvk schema.GroupVersionKind) runtime.Object {
	if obj.GetObjectKind().GroupVersionKind() == gvk {
		return obj
	}
	obj = obj.DeepCopyObject()
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj
}

func describeObject(obj runtime.Object) string {
	name, namespace := "<unknown>", "<unknown>"
	if m := accessor(obj); m != nil {
		name, namespace = m.GetName(), m.GetNamespace()
	}
	return fmt.Sprintf("%s/%s; %v", namespace, name, obj.GetObjectKind().GroupVersionKind())
}

func lastApplied(m metav1.Object) string {
	return m.GetAnnotations()[LastAppliedAnnotation]
}

// setLastApplied records config, without its own annotation, as m's
// last-applied-configuration, leaving the annotation out when the
// annotations would grow past their size limit.
func setLastApplied(m metav1.Object, config runtime.Object) {
	c := config.DeepCopyObject()
	cm := accessor(c)
	annotations := cm.GetAnnotations()
	delete(annotations, LastAppliedAnnotation)
	if len(annotations) == 0 {
		annotations = nil
	}
	cm.SetAnnotations(annotations)
	raw, err := json.Marshal(c)
	if err != nil {
		return
	}
	all := m.GetAnnotations()
	if all == nil {
		all = map[string]string{}
	}
	all[LastAppliedAnnotation] = string(raw)
	if err := apivalidation.ValidateAnnotationsSize(all); err != nil {
		delete(all, LastAppliedAnnotation)
	}
	m.SetAnnotations(all)
}
