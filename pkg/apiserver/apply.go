package apiserver

import (
	"fmt"
	"net/http"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

// serveApply handles a server-side apply: a PATCH whose body, of type
// application/apply-patch+yaml, is the configuration the field manager
// named by the fieldManager parameter wants (YAML or JSON). The
// configuration merges into the stored object by its schema, creating it
// when it does not exist; see package fieldmanager for the rules.
func (s *Server) serveApply(w http.ResponseWriter, r *http.Request, q *request, f format, opts writeOptions, body []byte) {
	content := map[string]any{}
	if err := yaml.Unmarshal(body, &content); err != nil {
		s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("error decoding YAML: %v", err)))
		return
	}
	if content == nil {
		content = map[string]any{}
	}
	// Duplicate fields are only an error under strict field validation
	// (a warning under Warn); fields the schema does not know always are.
	var strictErr error
	if opts.fieldValidation == metav1.FieldValidationStrict || opts.fieldValidation == metav1.FieldValidationWarn {
		strictErr = yaml.UnmarshalStrict(body, &map[string]any{})
	}
	var warnings []string
	if strictErr != nil {
		if opts.fieldValidation == metav1.FieldValidationStrict {
			s.writeError(w, r, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding YAML: %v", strictErr)))
			return
		}
		warnings = append(warnings, strictErr.Error())
	}
	config := &unstructured.Unstructured{Object: content}
	if q.subresource == "scale" {
		var err error
		if config, err = s.scaleConfig(q, config); err != nil {
			s.writeError(w, r, err)
			return
		}
	}
	fm := s.fieldManager(q.res, q.subresource)
	if fm == nil {
		s.writeError(w, r, apierrors.NewMethodNotSupported(q.gr(), "apply"))
		return
	}
	aq := *q
	aq.createMissing = true
	aq.http = r
	aq.adm = newWriteAdmission(opts)
	compute := func(current runtime.Object) (runtime.Object, error) {
		missing := accessor(current).GetResourceVersion() == ""
		if missing && q.subresource != "" {
			return nil, apierrors.NewNotFound(q.gr(), q.name)
		}
		q.res.setKind(current)
		out, err := fm.Apply(current, config.DeepCopy(), opts.fieldManager, opts.force)
		if err != nil {
			return nil, err
		}
		m := accessor(out)
		if missing && m.GetUID() != "" {
			return nil, apierrors.NewConflict(q.gr(), q.name, fmt.Errorf("uid mismatch: the provided object specified uid %s, and no existing object was found", m.GetUID()))
		}
		if err := checkNameAndNamespace(q, out); err != nil {
			return nil, err
		}
		q.res.strategy.Default(out)
		return out, nil
	}
	out, created, err := s.write(r.Context(), &aq, opts.dryRun, compute)
	s.answerWrite(w, r, &aq, f, out, created, warnings, err)
}

// scaleConfig turns a configuration applied through the scale subresource
// (an autoscaling/v1 Scale) into the configuration of the object it
// scales: its name and its desired replicas.
func (s *Server) scaleConfig(q *request, config *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	if gvk := config.GroupVersionKind(); gvk != scaleGVK {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("invalid object type: %v", gvk))
	}
	scale := &autoscalingv1.Scale{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(config.Object, scale); err != nil {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding the applied Scale: %v", err))
	}
	// A Scale that names no object is the one of the URL: its name is
	// that of the live Scale it merges into, as in kube-apiserver.
	if scale.Name != "" && scale.Name != q.name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", scale.Name, q.name))
	}
	out := &unstructured.Unstructured{Object: map[string]any{}}
	if err := unstructured.SetNestedField(out.Object, int64(scale.Spec.Replicas), replicasPath(q.res)...); err != nil {
		return nil, err
	}
	out.SetGroupVersionKind(q.res.info.GVK)
	out.SetName(q.name)
	if q.res.info.Namespaced {
		out.SetNamespace(q.namespace)
	}
	return out, nil
}

// replicasPath is where res's objects keep their desired replicas.
func replicasPath(res *resource) []string {
	if res.custom != nil {
		for _, v := range res.custom.CRD().Spec.Versions {
			if v.Name == res.info.GVK.Version && v.Subresources != nil && v.Subresources.Scale != nil {
				return strings.Split(strings.TrimPrefix(v.Subresources.Scale.SpecReplicasPath, "."), ".")
			}
		}
	}
	return []string{"spec", "replicas"}
}
