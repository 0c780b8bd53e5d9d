package fieldmanager

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// managed is the decoded managedFields of an object: each manager's field
// set (keyed by its identity, see managerID) and the time it last changed.
type managed struct {
	fields fieldpath.ManagedFields
	times  map[string]*metav1.Time
}

func emptyManaged() managed {
	return managed{fields: fieldpath.ManagedFields{}, times: map[string]*metav1.Time{}}
}

// identity is what names a manager: the fields of its entry that are not
// its field set or time, and no apiVersion for an Apply manager.
type identity struct {
	Manager     string                            `json:"manager,omitempty"`
	Operation   metav1.ManagedFieldsOperationType `json:"operation,omitempty"`
	APIVersion  string                            `json:"apiVersion,omitempty"`
	Subresource string                            `json:"subresource,omitempty"`
}

// managerID returns the key of the manager of entry e.
func managerID(e *metav1.ManagedFieldsEntry) string {
	id := identity{Manager: e.Manager, Operation: e.Operation, APIVersion: e.APIVersion, Subresource: e.Subresource}
	if id.Operation == metav1.ManagedFieldsOperationApply {
		id.APIVersion = ""
	}
	b, _ := json.Marshal(id) // a struct of strings always marshals
	return string(b)
}

// parseID is the inverse of managerID.
func parseID(id string) (identity, bool) {
	var out identity
	if err := json.Unmarshal([]byte(id), &out); err != nil {
		return identity{}, false
	}
	return out, true
}

// decodeManaged decodes managedFields entries, refusing the malformed ones
// kube-apiserver refuses.
func decodeManaged(entries []metav1.ManagedFieldsEntry) (managed, error) {
	m := managed{fields: make(fieldpath.ManagedFields, len(entries)), times: make(map[string]*metav1.Time, len(entries))}
	for i := range entries {
		e := &entries[i]
		switch e.Operation {
		case metav1.ManagedFieldsOperationApply, metav1.ManagedFieldsOperationUpdate:
		default:
			return managed{}, fmt.Errorf("operation must be `Apply` or `Update`")
		}
		if e.APIVersion == "" {
			return managed{}, fmt.Errorf("apiVersion must not be empty")
		}
		switch e.FieldsType {
		case "FieldsV1":
		case "":
			return managed{}, fmt.Errorf("missing fieldsType in managed fields entry %d", i)
		default:
			return managed{}, fmt.Errorf("invalid fieldsType %q in managed fields entry %d", e.FieldsType, i)
		}
		set := &fieldpath.Set{}
		raw := []byte("{}")
		if e.FieldsV1 != nil && len(e.FieldsV1.GetRawBytes()) > 0 {
			raw = e.FieldsV1.GetRawBytes()
		}
		if err := set.FromJSON(bytes.NewReader(raw)); err != nil {
			return managed{}, fmt.Errorf("error decoding set of managed fields entry %d: %w", i, err)
		}
		id := managerID(e)
		m.fields[id] = fieldpath.NewVersionedSet(set, fieldpath.APIVersion(e.APIVersion), e.Operation == metav1.ManagedFieldsOperationApply)
		m.times[id] = e.Time
	}
	return m, nil
}

// encodeManaged returns the managedFields entries of m in Kubernetes'
// order, or nil when no manager owns anything.
func encodeManaged(m managed) ([]metav1.ManagedFieldsEntry, error) {
	if len(m.fields) == 0 {
		return nil, nil
	}
	out := make([]metav1.ManagedFieldsEntry, 0, len(m.fields))
	for id, vs := range m.fields {
		who, ok := parseID(id)
		if !ok {
			return nil, fmt.Errorf("fieldmanager: bad manager identity %q", id)
		}
		raw, err := vs.Set().ToJSON()
		if err != nil {
			return nil, fmt.Errorf("fieldmanager: encode the fields of %s: %w", who.Manager, err)
		}
		e := metav1.ManagedFieldsEntry{
			Manager:     who.Manager,
			Operation:   metav1.ManagedFieldsOperationUpdate,
			APIVersion:  string(vs.APIVersion()),
			Subresource: who.Subresource,
			FieldsType:  "FieldsV1",
			FieldsV1:    metav1.NewFieldsV1(string(raw)),
			Time:        m.times[id],
		}
		if vs.Applied() {
			e.Operation = metav1.ManagedFieldsOperationApply
		}
		out = append(out, e)
	}
	slices.SortFunc(out, compareEntries)
	return out, nil
}

// compareEntries orders entries as kube-apiserver does: Apply before
// Update, older before newer (by second), then by manager, apiVersion and
// subresource.
func compareEntries(a, b metav1.ManagedFieldsEntry) int {
	if c := strings.Compare(string(a.Operation), string(b.Operation)); c != 0 {
		return c
	}
	if c := unixSeconds(a.Time) - unixSeconds(b.Time); c != 0 {
		if c < 0 {
			return -1
		}
		return 1
	}
	if c := strings.Compare(a.Manager, b.Manager); c != 0 {
		return c
	}
	if c := strings.Compare(a.APIVersion, b.APIVersion); c != 0 {
		return c
	}
	return strings.Compare(a.Subresource, b.Subresource)
}

func unixSeconds(t *metav1.Time) int64 {
	if t == nil {
		return 0
	}
	return t.Unix()
}

// isReset reports whether entries asks to clear managedFields: an empty
// list that is not nil, or a single empty entry.
func isReset(entries []metav1.ManagedFieldsEntry) bool {
	switch len(entries) {
	case 0:
		return entries != nil
	case 1:
		e := entries[0]
		return e.Manager == "" && e.Operation == "" && e.APIVersion == "" && e.Time == nil &&
			e.FieldsType == "" && e.FieldsV1 == nil && e.Subresource == ""
	}
	return false
}

// describeManager renders a manager for conflict messages, as
// kube-apiserver words them: `"kubectl"`, `"ctl" with subresource "scale"`,
// `"ctl" using apps/v1`.
func describeManager(id string) string {
	who, ok := parseID(id)
	if !ok {
		return fmt.Sprintf("%q", id)
	}
	s := fmt.Sprintf("%q", who.Manager)
	if who.Subresource != "" {
		s += fmt.Sprintf(" with subresource %q", who.Subresource)
	}
	if who.Operation == metav1.ManagedFieldsOperationUpdate {
		return s + " using " + who.APIVersion
	}
	return s
}
