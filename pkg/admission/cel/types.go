package cel

import (
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

	kcel "github.com/kplane/kplane/pkg/cel"
)

// The declared types of request and namespaceObject, as Kubernetes
// declares them: reading a field they do not have is a compile error.
var (
	requestType = sync.OnceValue(func() *kcel.DeclType {
		return kcel.SchemaDeclType("kubernetes.AdmissionRequest", requestSchema(), false)
	})
	namespaceType = sync.OnceValue(func() *kcel.DeclType {
		return kcel.SchemaDeclType("kubernetes.Namespace", namespaceSchema(), false)
	})
)

func object(props map[string]apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "object", Properties: props}
}

func str() apiextensionsv1.JSONSchemaProps { return apiextensionsv1.JSONSchemaProps{Type: "string"} }

func integer() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "integer"}
}

func timestamp() apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "string", Format: "date-time"}
}

func listOf(s apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "array", Items: &apiextensionsv1.JSONSchemaPropsOrArray{Schema: &s}}
}

func mapOf(s apiextensionsv1.JSONSchemaProps) apiextensionsv1.JSONSchemaProps {
	return apiextensionsv1.JSONSchemaProps{Type: "object", AdditionalProperties: &apiextensionsv1.JSONSchemaPropsOrBool{Allows: true, Schema: &s}}
}

// requestSchema is the AdmissionRequest without uid, object and oldObject
// (expressions read the objects as variables of their own).
func requestSchema() *apiextensionsv1.JSONSchemaProps {
	gvk := object(map[string]apiextensionsv1.JSONSchemaProps{"group": str(), "version": str(), "kind": str()})
	gvr := object(map[string]apiextensionsv1.JSONSchemaProps{"group": str(), "version": str(), "resource": str()})
	s := object(map[string]apiextensionsv1.JSONSchemaProps{
		"kind":               gvk,
		"resource":           gvr,
		"subResource":        str(),
		"requestKind":        gvk,
		"requestResource":    gvr,
		"requestSubResource": str(),
		"name":               str(),
		"namespace":          str(),
		"operation":          str(),
		"userInfo": object(map[string]apiextensionsv1.JSONSchemaProps{
			"username": str(),
			"uid":      str(),
			"groups":   listOf(str()),
			"extra":    mapOf(listOf(str())),
		}),
		"dryRun": {Type: "boolean"},
		// any options object: dynamically typed (the declared types
		// make int-or-string dyn)
		"options": {XIntOrString: true},
	})
	return &s
}

// namespaceSchema is the part of a Namespace Kubernetes exposes: not its
// managedFields, ownerReferences and the like.
func namespaceSchema() *apiextensionsv1.JSONSchemaProps {
	s := object(map[string]apiextensionsv1.JSONSchemaProps{
		"metadata": object(map[string]apiextensionsv1.JSONSchemaProps{
			"name":         str(),
			"generateName": str(),
			"namespace":    str(),
			"labels":       mapOf(str()),
			"annotations":  mapOf(str()),
			// Kubernetes declares the uid under this name, which no
			// namespace has: kept so that the same expressions compile
			"UID":                        str(),
			"creationTimestamp":          timestamp(),
			"deletionGracePeriodSeconds": integer(),
			"deletionTimestamp":          timestamp(),
			"generation":                 integer(),
			"resourceVersion":            str(),
			"finalizers":                 listOf(str()),
		}),
		"spec": object(map[string]apiextensionsv1.JSONSchemaProps{"finalizers": listOf(str())}),
		"status": object(map[string]apiextensionsv1.JSONSchemaProps{
			"conditions": listOf(object(map[string]apiextensionsv1.JSONSchemaProps{
				"status": str(), "type": str(), "lastTransitionTime": timestamp(), "message": str(), "reason": str(),
			})),
			"phase": str(),
		}),
	})
	return &s
}
