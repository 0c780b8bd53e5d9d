package apiserver

import (
	"fmt"
	"reflect"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"github.com/kplane/kplane/pkg/admission"
	"github.com/kplane/kplane/pkg/apiserver/internal/fieldmanager"
)

// admissionMerger merges MutatingAdmissionPolicy apply configurations
// into objects with the schemas server-side apply uses.
type admissionMerger struct{ s *Server }

var _ admission.Merger = admissionMerger{}

// Merge implements admission.Merger as kube-apiserver merges apply
// configurations of policies: by structured-merge-diff, without tracking
// who owns the fields set, refusing configurations that set atomic
// lists, maps or structs (setting one would drop what it does not
// repeat, a surprise no policy author wants).
func (m admissionMerger) Merge(gvk schema.GroupVersionKind, obj runtime.Object, config map[string]any) (runtime.Object, error) {
	tc, err := m.typeConverter(gvk)
	if err != nil {
		return nil, err
	}
	cfg := &unstructured.Unstructured{Object: config}
	cfg.SetGroupVersionKind(gvk)
	cfgT, err := tc.ToTyped(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to convert patch object to typed object: %w", err)
	}
	if atomics := atomicPaths(nil, cfgT.Schema(), cfgT.TypeRef(), cfgT.AsValue()); len(atomics) > 0 {
		return nil, fmt.Errorf("invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: %v", strings.Join(atomics, ", "))
	}
	live := obj.DeepCopyObject()
	live.GetObjectKind().SetGroupVersionKind(gvk)
	liveT, err := tc.ToTyped(live)
	if err != nil {
		return nil, fmt.Errorf("failed to convert original object to typed object: %w", err)
	}
	merged, err := liveT.Merge(cfgT)
	if err != nil {
		return nil, fmt.Errorf("failed to merge patch: %w", err)
	}
	out, err := tc.FromTyped(merged, gvk)
	if err != nil {
		return nil, fmt.Errorf("failed to convert typed object to object: %w", err)
	}
	if u, ok := out.(*unstructured.Unstructured); ok {
		if _, wasUnstructured := obj.(*unstructured.Unstructured); !wasUnstructured {
			// a kind without a Go type of its own in the converter
			// (Scale): back to obj's
			typed, ok := reflect.New(reflect.TypeOf(obj).Elem()).Interface().(runtime.Object)
			if !ok {
				return nil, fmt.Errorf("failed to convert typed object to object: no new %T", obj)
			}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, typed); err != nil {
				return nil, fmt.Errorf("failed to convert typed object to object: %w", err)
			}
			out = typed
		}
	}
	return out, nil
}

// typeConverter returns the converter of the kind gvk: its resource's, a
// deduced one for Scale (a map of scalars), a ServiceUnavailable error
// for a kind not served (yet: a CRD just created), as Kubernetes answers.
func (m admissionMerger) typeConverter(gvk schema.GroupVersionKind) (fieldmanager.TypeConverter, error) {
	if gvk == scaleGVK {
		return fieldmanager.NewDeducedTypeConverter(), nil
	}
	res := m.s.served.Load().byGVK[gvk]
	if res == nil || res.info.GVK != gvk {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("Resource kind %s not found. There can be a delay between when CustomResourceDefinitions are created and when they are available.", gvk))
	}
	return m.s.typeConverter(res)
}

// atomicPaths lists the paths in v (of type tr in s) that are atomic
// lists, maps or structs.
func atomicPaths(path fieldpath.Path, s *smdschema.Schema, tr smdschema.TypeRef, v value.Value) []string {
	a, ok := s.Resolve(tr)
	if !ok || v == nil {
		return nil
	}
	var out []string
	switch {
	case v.IsMap() && a.Map != nil:
		if a.Map.ElementRelationship == smdschema.Atomic {
			out = append(out, path.String())
		}
		// as in Kubernetes, only the fields of structs are looked into,
		// not the values of maps
		v.AsMap().Iterate(func(key string, val value.Value) bool {
			if f, ok := a.Map.FindField(key); ok {
				out = append(out, atomicPaths(append(path[:len(path):len(path)], fieldpath.PathElement{FieldName: &key}), s, f.Type, val)...)
			}
			return true
		})
	case v.IsList() && a.List != nil:
		if a.List.ElementRelationship == smdschema.Atomic {
			out = append(out, path.String())
		}
		l := v.AsList()
		for i := range l.Length() {
			out = append(out, atomicPaths(append(path[:len(path):len(path)], fieldpath.PathElement{Index: &i}), s, a.List.ElementType, l.At(i))...)
		}
	}
	return out
}
