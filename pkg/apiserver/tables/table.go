package tables

import (
	"fmt"
	"net/http"
	"reflect"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// printer turns objects of one type into rows.
type printer struct {
	// columns returns fresh column definitions, so that callers may modify
	// a returned Table without affecting later ones.
	columns func() []metav1.TableColumnDefinition
	// row returns the cells of obj (a pointer to the printer's type) in
	// column order, and the row's conditions.
	row func(obj runtime.Object, now time.Time) ([]any, []metav1.TableRowCondition)
}

// Convert returns the Table kube-apiserver answers for obj, a single object
// or a list (such as *corev1.PodList), with AGE and other durations measured
// up to now. Rows carry the object's metadata as a PartialObjectMetadata,
// Kubernetes' default (includeObject=Metadata). It is ConvertWith with
// zero options.
func Convert(obj runtime.Object, now time.Time) (*metav1.Table, error) {
	return ConvertWith(obj, now, metav1.TableOptions{})
}

// ConvertWith is Convert with the options of a table request:
// opts.NoHeaders leaves out the column definitions and opts.IncludeObject
// chooses what each row's Object holds — None (nothing), Metadata or empty
// (a meta.k8s.io/v1 PartialObjectMetadata holding a copy of the object's
// metadata) or Object (a deep copy of the object). An unknown IncludeObject
// is a 400 Bad Request, and an object without metadata a 406 Not
// Acceptable, both as *apierrors.StatusError. The Table shares no memory
// with obj.
//
// Objects of the kinds kplane serves (pods, deployments, replica sets,
// namespaces, nodes, events, config maps, secrets, leases, and scales) get the
// columns and cells of Kubernetes' printers, wide columns included (with
// priority 1), as kube-apiserver always sends them; any other object gets
// kube-apiserver's default columns, Name and Created At. The ListMeta of a
// list (resourceVersion, continue, remainingItemCount) becomes the Table's;
// for a single object the Table carries its resourceVersion.
func ConvertWith(obj runtime.Object, now time.Time, opts metav1.TableOptions) (*metav1.Table, error) {
	if errs := metav1validation.ValidateTableOptions(&opts); len(errs) > 0 {
		// kube-apiserver's wording.
		return nil, apierrors.NewBadRequest(fmt.Sprintf("Unable to convert to Table as requested: %v", errs[0].Error()))
	}
	if obj == nil || (reflect.ValueOf(obj).Kind() == reflect.Pointer && reflect.ValueOf(obj).IsNil()) {
		return nil, apierrors.NewBadRequest("no object to convert to a Table")
	}

	table := &metav1.Table{TypeMeta: metav1.TypeMeta{APIVersion: metav1.SchemeGroupVersion.String(), Kind: "Table"}}
	var items []runtime.Object
	var itemType reflect.Type
	if meta.IsListType(obj) {
		var err error
		items, err = meta.ExtractList(obj)
		if err != nil {
			return nil, notAcceptable(obj)
		}
		itemType = listItemType(obj)
		if l, err := meta.ListAccessor(obj); err == nil {
			table.ResourceVersion = l.GetResourceVersion()
			table.Continue = l.GetContinue()
			table.RemainingItemCount = l.GetRemainingItemCount()
		}
	} else {
		items = []runtime.Object{obj}
		itemType = reflect.TypeOf(obj)
		if m, err := meta.CommonAccessor(obj); err == nil {
			table.ResourceVersion = m.GetResourceVersion()
		}
	}

	p := printerFor(itemType)
	if p == nil {
		p = defaultPrinter()
	}
	if !opts.NoHeaders {
		table.ColumnDefinitions = p.columns()
	}
	table.Rows = make([]metav1.TableRow, 0, len(items))
	for _, item := range items {
		m, err := meta.Accessor(item)
		if err != nil {
			return nil, notAcceptable(item)
		}
		var cells []any
		var conds []metav1.TableRowCondition
		if pi := printerFor(reflect.TypeOf(item)); pi != nil {
			cells, conds = pi.row(item, now)
		} else {
			cells, conds = defaultRow(m)
		}
		row := metav1.TableRow{Cells: cells, Conditions: conds}
		switch opts.IncludeObject {
		case metav1.IncludeObject:
			row.Object.Object = item.DeepCopyObject()
		case metav1.IncludeMetadata, "":
			partial := &metav1.PartialObjectMetadata{ObjectMeta: *metaCopy(m)}
			partial.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("PartialObjectMetadata"))
			row.Object.Object = partial
		}
		table.Rows = append(table.Rows, row)
	}
	return table, nil
}

// metaCopy returns a deep copy of an object's metadata.
func metaCopy(m metav1.Object) *metav1.ObjectMeta {
	if om, ok := m.(*metav1.ObjectMeta); ok {
		return om.DeepCopy()
	}
	return meta.AsPartialObjectMetadata(m).ObjectMeta.DeepCopy()
}

// listItemType returns the pointer type of a list's items (*corev1.Pod for
// a *corev1.PodList), or nil when the list has no typed Items slice.
func listItemType(list runtime.Object) reflect.Type {
	v := reflect.ValueOf(list)
	for v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	if v.Kind() != reflect.Struct {
		return nil
	}
	items := v.FieldByName("Items")
	if !items.IsValid() || items.Kind() != reflect.Slice {
		return nil
	}
	elem := items.Type().Elem()
	if elem.Kind() == reflect.Pointer {
		return elem
	}
	return reflect.PointerTo(elem)
}

func notAcceptable(obj runtime.Object) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status:  metav1.StatusFailure,
		Code:    http.StatusNotAcceptable,
		Reason:  metav1.StatusReasonNotAcceptable,
		Message: fmt.Sprintf("objects of type %T do not support being converted to a Table", obj),
	}}
}

// metaDoc is the description of an ObjectMeta field.
func metaDoc(field string) string { return metav1.ObjectMeta{}.SwaggerDoc()[field] }

// nameColumn and ageColumn are the columns most printers share.
func nameColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Name", Type: "string", Format: "name", Description: metaDoc("name")}
}

func ageColumn() metav1.TableColumnDefinition {
	return metav1.TableColumnDefinition{Name: "Age", Type: "string", Description: metaDoc("creationTimestamp")}
}

// defaultPrinter is kube-apiserver's default table convertor, used for
// resources without a printer of their own.
func defaultPrinter() *printer {
	return &printer{
		columns: func() []metav1.TableColumnDefinition {
			return []metav1.TableColumnDefinition{
				nameColumn(),
				{Name: "Created At", Type: "date", Description: metaDoc("creationTimestamp")},
			}
		},
	}
}

func defaultRow(m metav1.Object) ([]any, []metav1.TableRowCondition) {
	return []any{m.GetName(), m.GetCreationTimestamp().UTC().Format(time.RFC3339)}, nil
}

// since is the age of a timestamp in Kubernetes' human-readable form ("5s",
// "3m20s", "2d4h"), or "<unknown>" for the zero time.
func since(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}
