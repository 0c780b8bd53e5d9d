package apiextensions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// column is one printer column with its parsed path.
type column struct {
	def  metav1.TableColumnDefinition
	path *JSONPath
}

// newColumns returns the table columns of a version: NAME, then the
// printer columns, or NAME and AGE when it defines none, as kube-apiserver.
func newColumns(defs []apiextensionsv1.CustomResourceColumnDefinition) ([]column, error) {
	cols := []column{{def: metav1.TableColumnDefinition{
		Name: "Name", Type: "string", Format: "name",
		Description: "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
	}}}
	if len(defs) == 0 {
		defs = []apiextensionsv1.CustomResourceColumnDefinition{{
			Name: "Age", Type: "date", JSONPath: ".metadata.creationTimestamp",
			Description: "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata",
		}}
	}
	for _, d := range defs {
		p, err := ParseJSONPath(d.JSONPath)
		if err != nil {
			return nil, fmt.Errorf("printer column %s: %w", d.Name, err)
		}
		cols = append(cols, column{path: p, def: metav1.TableColumnDefinition{
			Name: d.Name, Type: d.Type, Format: d.Format, Description: d.Description, Priority: d.Priority,
		}})
	}
	return cols, nil
}

// ConvertToTable implements registry.TableConvertor.
func (cr *CustomResource) ConvertToTable(obj runtime.Object, now time.Time, opts metav1.TableOptions) (*metav1.Table, error) {
	table := &metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: "Table"}}
	var items []unstructured.Unstructured
	switch t := obj.(type) {
	case *unstructured.UnstructuredList:
		items = t.Items
		table.ResourceVersion, table.Continue, table.RemainingItemCount = t.GetResourceVersion(), t.GetContinue(), t.GetRemainingItemCount()
	case *unstructured.Unstructured:
		items = []unstructured.Unstructured{*t}
		table.ResourceVersion = t.GetResourceVersion()
	default:
		return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot convert %T to a table", obj))
	}
	if !opts.NoHeaders {
		for _, c := range cr.columns {
			table.ColumnDefinitions = append(table.ColumnDefinitions, c.def)
		}
	}
	table.Rows = make([]metav1.TableRow, 0, len(items))
	for i := range items {
		u := &items[i]
		row := metav1.TableRow{Cells: make([]any, 0, len(cr.columns))}
		row.Cells = append(row.Cells, u.GetName())
		for _, c := range cr.columns[1:] {
			row.Cells = append(row.Cells, cell(c, u.Object, now))
		}
		switch opts.IncludeObject {
		case metav1.IncludeNone:
		case metav1.IncludeObject:
			row.Object.Object = u.DeepCopy()
		default:
			m, err := meta.Accessor(u)
			if err != nil {
				return nil, err
			}
			pom := &metav1.PartialObjectMetadata{
				TypeMeta: metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: "PartialObjectMetadata"},
			}
			pom.ObjectMeta = metav1.ObjectMeta{
				Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(), ResourceVersion: m.GetResourceVersion(),
				Generation: m.GetGeneration(), CreationTimestamp: m.GetCreationTimestamp(), DeletionTimestamp: m.GetDeletionTimestamp(),
				DeletionGracePeriodSeconds: m.GetDeletionGracePeriodSeconds(), Labels: m.GetLabels(), Annotations: m.GetAnnotations(),
				OwnerReferences: m.GetOwnerReferences(), Finalizers: m.GetFinalizers(), GenerateName: m.GetGenerateName(),
				ManagedFields: m.GetManagedFields(),
			}
			row.Object.Object = pom
		}
		table.Rows = append(table.Rows, row)
	}
	return table, nil
}

// cell renders the value a column selects as kube-apiserver does: the
// first value found, typed by the column (dates as ages); nil when the
// path selects nothing or a value of another type.
func cell(c column, obj map[string]any, now time.Time) any {
	found := c.path.Find(obj)
	if len(found) == 0 || found[0] == nil {
		return nil
	}
	v := found[0]
	switch c.def.Type {
	case "string":
		switch s := v.(type) {
		case string:
			return s
		case map[string]any, []any:
			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			if err := enc.Encode(s); err != nil {
				return nil
			}
			return string(bytes.TrimSpace(buf.Bytes()))
		default:
			return fmt.Sprint(s)
		}
	case "integer":
		switch n := v.(type) {
		case int64:
			return n
		case float64:
			if n == float64(int64(n)) {
				return int64(n)
			}
		}
	case "number":
		switch n := v.(type) {
		case int64:
			return n
		case float64:
			return n
		}
	case "boolean":
		if b, ok := v.(bool); ok {
			return b
		}
	case "date":
		if s, ok := v.(string); ok {
			t, err := time.Parse(time.RFC3339, s)
			if err != nil {
				return nil
			}
			if t.IsZero() {
				return "<unknown>"
			}
			return duration.HumanDuration(now.Sub(t))
		}
	}
	return nil
}
