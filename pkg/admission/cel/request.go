package cel

import (
	"encoding/json"
	"fmt"
	"reflect"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// RequestValue returns req as the request variable shows it, as
// Kubernetes converts it: its JSON form (fields that are empty and omitted
// in JSON are absent: has(request.subResource) is false for a request to
// a resource itself), without uid, object and oldObject, with options as
// the options object at meta.k8s.io/v1 (null when there are none).
func RequestValue(req *admissionv1.AdmissionRequest) map[string]any {
	if req == nil {
		return nil
	}
	// built by hand, as the JSON encoding would (omitempty fields absent
	// when empty), for speed
	gvk := func(k metav1.GroupVersionKind) map[string]any {
		return map[string]any{"group": k.Group, "version": k.Version, "kind": k.Kind}
	}
	gvr := func(r metav1.GroupVersionResource) map[string]any {
		return map[string]any{"group": r.Group, "version": r.Version, "resource": r.Resource}
	}
	out := map[string]any{
		"kind":      gvk(req.Kind),
		"resource":  gvr(req.Resource),
		"operation": string(req.Operation),
	}
	setString := func(m map[string]any, k, v string) {
		if v != "" {
			m[k] = v
		}
	}
	setString(out, "subResource", req.SubResource)
	setString(out, "requestSubResource", req.RequestSubResource)
	setString(out, "name", req.Name)
	setString(out, "namespace", req.Namespace)
	if req.RequestKind != nil {
		out["requestKind"] = gvk(*req.RequestKind)
	}
	if req.RequestResource != nil {
		out["requestResource"] = gvr(*req.RequestResource)
	}
	if req.DryRun != nil {
		out["dryRun"] = *req.DryRun
	}
	user := map[string]any{}
	setString(user, "username", req.UserInfo.Username)
	setString(user, "uid", req.UserInfo.UID)
	if len(req.UserInfo.Groups) > 0 {
		groups := make([]any, len(req.UserInfo.Groups))
		for i, g := range req.UserInfo.Groups {
			groups[i] = g
		}
		user["groups"] = groups
	}
	if len(req.UserInfo.Extra) > 0 {
		extra := make(map[string]any, len(req.UserInfo.Extra))
		for k, v := range req.UserInfo.Extra {
			vs := make([]any, len(v))
			for i, x := range v {
				vs[i] = x
			}
			extra[k] = vs
		}
		user["extra"] = extra
	}
	out["userInfo"] = user
	var opts any
	switch {
	case req.Options.Object != nil:
		if m, err := ObjectValue(req.Options.Object, optionsKind(req.Options.Object)); err == nil && m != nil {
			opts = m
		}
	case len(req.Options.Raw) > 0:
		var m map[string]any
		if json.Unmarshal(req.Options.Raw, &m) == nil {
			opts = m
		}
	}
	out["options"] = opts
	return out
}

// optionsKind is the kind of the options of a write, which Kubernetes
// sends at meta.k8s.io/v1.
func optionsKind(obj runtime.Object) schema.GroupVersionKind {
	switch obj.(type) {
	case *metav1.CreateOptions:
		return metav1.SchemeGroupVersion.WithKind("CreateOptions")
	case *metav1.UpdateOptions:
		return metav1.SchemeGroupVersion.WithKind("UpdateOptions")
	case *metav1.PatchOptions:
		return metav1.SchemeGroupVersion.WithKind("PatchOptions")
	case *metav1.DeleteOptions:
		return metav1.SchemeGroupVersion.WithKind("DeleteOptions")
	}
	return schema.GroupVersionKind{}
}

// ObjectValue converts obj to the JSON-like map CEL expressions read, nil
// for no object. Typed objects go through
// runtime.DefaultUnstructuredConverter; unstructured ones are used as
// they are (not copied: do not change the result). When obj does not say
// its apiVersion and kind, gvk (if set) fills them in, as Kubernetes'
// versioned objects always have them.
func ObjectValue(obj runtime.Object, gvk schema.GroupVersionKind) (map[string]any, error) {
	if obj == nil || (reflect.ValueOf(obj).Kind() == reflect.Pointer && reflect.ValueOf(obj).IsNil()) {
		return nil, nil
	}
	var m map[string]any
	if u, ok := obj.(*unstructured.Unstructured); ok {
		m = u.Object
	} else {
		var err error
		if m, err = runtime.DefaultUnstructuredConverter.ToUnstructured(obj); err != nil {
			return nil, fmt.Errorf("converting %T for CEL: %w", obj, err)
		}
	}
	if gvk.Empty() {
		return m, nil
	}
	if _, ok := m["kind"]; !ok {
		if _, ok := obj.(*unstructured.Unstructured); ok {
			m = shallowCopy(m)
		}
		m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
	}
	return m, nil
}

func shallowCopy(m map[string]any) map[string]any {
	out := make(map[string]any, len(m)+2)
	for k, v := range m {
		out[k] = v
	}
	return out
}
