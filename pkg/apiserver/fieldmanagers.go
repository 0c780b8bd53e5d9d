package apiserver

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kplane/kplane/pkg/apiserver/internal/fieldmanager"
	"github.com/kplane/kplane/pkg/apiserver/openapi"
	"github.com/kplane/kplane/pkg/registry"
)

// fieldManagers holds the field managers of one resource, built on first
// use, one per subresource ("" for the resource itself).
type fieldManagers struct {
	mu     sync.Mutex
	byName map[string]*fieldmanager.FieldManager
	types  fieldmanager.TypeConverter
}

// builtinTypes caches the type converter of each built-in kind for the
// life of the process: the Go types never change, and building one takes
// a while.
var builtinTypes sync.Map // schema.GroupVersionKind -> *typesOnce

type typesOnce struct {
	once sync.Once
	tc   fieldmanager.TypeConverter
	err  error
}

// fieldManager returns the field manager of res written through
// subresource, or nil when res cannot track fields (a kind whose schema
// does not convert): its writes then store no managedFields.
func (s *Server) fieldManager(res *resource, subresource string) *fieldmanager.FieldManager {
	fms := res.fms
	fms.mu.Lock()
	defer fms.mu.Unlock()
	if fm, ok := fms.byName[subresource]; ok {
		return fm
	}
	fm, err := s.newFieldManager(res, subresource)
	if err != nil {
		s.cfg.Logger.Warn("field management disabled", "resource", res.info.GroupVersionResource(), "subresource", subresource, "err", err)
		fm = nil
	}
	if fms.byName == nil {
		fms.byName = map[string]*fieldmanager.FieldManager{}
	}
	fms.byName[subresource] = fm
	return fm
}

func (s *Server) newFieldManager(res *resource, subresource string) (*fieldmanager.FieldManager, error) {
	tc, err := s.typeConverter(res)
	if err != nil {
		return nil, err
	}
	var reset *fieldpath.Set
	switch {
	case subresource == "" && res.info.Status:
		reset = fieldpath.NewSet(fieldpath.MakePathOrDie("status"))
	case subresource == "status":
		reset = fieldpath.NewSet(fieldpath.MakePathOrDie("spec"))
	}
	return fieldmanager.New(fieldmanager.Config{
		Types:       tc,
		Kind:        res.info.GVK,
		Subresource: subresource,
		Reset:       reset,
		Versions:    s.servedVersions(res),
		Convert:     s.versionConvert(res),
		New:         res.strategy.New,
		Clock:       s.clock,
	})
}

// typeConverter returns the converter of res's kind: from its Go type for
// a built-in, from its CRD's schema for a custom resource.
func (s *Server) typeConverter(res *resource) (fieldmanager.TypeConverter, error) {
	fms := res.fms
	if fms.types != nil {
		return fms.types, nil
	}
	var tc fieldmanager.TypeConverter
	var err error
	if res.custom != nil {
		tc, err = customTypeConverter(res)
	} else {
		v, _ := builtinTypes.LoadOrStore(res.info.GVK, &typesOnce{})
		once := v.(*typesOnce)
		once.once.Do(func() { once.tc, once.err = builtinTypeConverter(res) })
		tc, err = once.tc, once.err
	}
	if err != nil {
		return nil, err
	}
	fms.types = tc
	return tc, nil
}

func builtinTypeConverter(res *resource) (fieldmanager.TypeConverter, error) {
	models, names, err := openapi.Models([]openapi.Kind{{
		GVK: res.info.GVK, Resource: res.info.Resource, Namespaced: res.info.Namespaced,
		Object: res.strategy.New(), List: res.strategy.NewList(),
	}})
	if err != nil {
		return nil, err
	}
	gvk := res.info.GVK
	return fieldmanager.NewTypeConverter(models, map[schema.GroupVersionKind]string{gvk: names[gvk]}, func(k schema.GroupVersionKind) runtime.Object {
		if k == gvk {
			return res.strategy.New()
		}
		return nil
	}, false)
}

// customTypeConverter builds the converter of a custom resource version
// from its schema; a version without one, or whose schema does not
// convert, is deduced from the objects as kube-apiserver does.
func customTypeConverter(res *resource) (fieldmanager.TypeConverter, error) {
	sch := res.custom.Schema()
	if sch == nil {
		return fieldmanager.NewDeducedTypeConverter(), nil
	}
	models, names, err := openapi.Models([]openapi.Kind{{
		GVK: res.info.GVK, Resource: res.info.Resource, Namespaced: res.info.Namespaced, Schema: sch,
	}})
	if err != nil {
		return fieldmanager.NewDeducedTypeConverter(), nil
	}
	gvk := res.info.GVK
	tc, err := fieldmanager.NewTypeConverter(models, map[schema.GroupVersionKind]string{gvk: names[gvk]}, nil, preservesUnknown(sch))
	if err != nil {
		return fieldmanager.NewDeducedTypeConverter(), nil
	}
	return tc, nil
}

func preservesUnknown(s *apiextensionsv1.JSONSchemaProps) bool {
	return s.XPreserveUnknownFields != nil && *s.XPreserveUnknownFields
}

// servedVersions lists the versions res's kind is served at.
func (s *Server) servedVersions(res *resource) []string {
	set := s.served.Load()
	var out []string
	for _, gv := range set.groups {
		if gv.Group != res.info.GVK.Group {
			continue
		}
		if other := set.byGVR[gv.WithResource(res.info.Resource)]; other != nil {
			out = append(out, gv.Version)
		}
	}
	return out
}

// versionConvert returns how an object of res converts to another served
// version of its resource: through the storage version for built-ins, by
// its apiVersion for custom resources (whose versions share one schema
// unless a conversion webhook says otherwise). Nil when res has one
// version.
func (s *Server) versionConvert(res *resource) func(runtime.Object, schema.GroupVersion) (runtime.Object, error) {
	if len(s.servedVersions(res)) < 2 {
		return nil
	}
	return func(obj runtime.Object, gv schema.GroupVersion) (runtime.Object, error) {
		other := s.lookup(gv.WithResource(res.info.Resource))
		if other == nil {
			return nil, fmt.Errorf("version %s of %s is not served", gv, res.info.Resource)
		}
		if res.custom != nil {
			out := obj.DeepCopyObject()
			out.GetObjectKind().SetGroupVersionKind(other.info.GVK)
			return out, nil
		}
		stored := obj
		if conv, ok := res.strategy.(registry.VersionConverter); ok {
			var err error
			if stored, err = conv.ToStorage(obj); err != nil {
				return nil, err
			}
		}
		out := stored
		if conv, ok := other.strategy.(registry.VersionConverter); ok {
			var err error
			if out, err = conv.FromStorage(stored); err != nil {
				return nil, err
			}
		}
		out = out.DeepCopyObject()
		out.GetObjectKind().SetGroupVersionKind(other.info.GVK)
		return out, nil
	}
}

// managerName is the manager a write is recorded under: the fieldManager
// the client named, else the start of its user agent (up to the first
// "/", printable characters, at most 128 bytes), as kube-apiserver names
// it.
func managerName(r *http.Request) string {
	if m := r.URL.Query().Get("fieldManager"); m != "" {
		return m
	}
	ua, _, _ := strings.Cut(r.UserAgent(), "/")
	var b strings.Builder
	for _, c := range ua {
		if !unicode.IsPrint(c) {
			continue
		}
		if b.Len()+utf8.RuneLen(c) > metav1validation.FieldManagerMaxLength {
			break
		}
		b.WriteRune(c)
	}
	return b.String()
}

// trackUpdate records the fields a write by the client of r changed from
// live to obj (an empty object for a create) in obj's managedFields.
func (s *Server) trackUpdate(r *http.Request, res *resource, subresource string, live, obj runtime.Object) runtime.Object {
	fm := s.fieldManager(res, subresource)
	if fm == nil {
		accessor(obj).SetManagedFields(accessor(live).GetManagedFields())
		return obj
	}
	return fm.Update(live, obj, managerName(r))
}
