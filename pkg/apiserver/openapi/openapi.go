package openapi

import (
	"crypto/sha512"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"strings"

	openapiv2 "github.com/google/gnostic-models/openapiv2"
	openapiv3 "github.com/google/gnostic-models/openapiv3"
	"google.golang.org/protobuf/proto"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
)

// Kind describes one served resource.
type Kind struct {
	// GVK is the group, version and kind of the resource's objects. Version
	// and Kind are required; an empty Group is the core group.
	GVK schema.GroupVersionKind
	// Resource is the plural, lower-case resource name in URLs ("pods").
	Resource string
	// Namespaced tells whether objects live in a namespace.
	Namespaced bool
	// Object and List are zero values of the object and list types, such as
	// &corev1.Pod{} and &corev1.PodList{}; only their types are used.
	Object, List runtime.Object
	// Subresources lists the subresources served: "status" and "approval"
	// (read and written as the Object type) and "scale" (autoscaling/v1
	// Scale).
	Subresources []string
	// CreateOnly marks a resource that is only created, such as an access
	// review answered without being stored: its one path is the create on
	// the collection, List may be nil and it has no subresources.
	CreateOnly bool
	// Schema, for a custom resource, is its version's openAPIV3Schema:
	// the documents describe the objects by it, and Object and List are
	// not used (they may be nil).
	Schema *apiextensionsv1.JSONSchemaProps
}

// Config configures New.
type Config struct {
	// Kinds are the resources the documents describe. Two kinds may not
	// share a group, version and resource.
	Kinds []Kind
	// Title is the title of the documents; "Kubernetes" when empty, as
	// clients display it.
	Title string
	// Version is the version of the documents' info section (the server's
	// version, such as "v1.37.2"); "unversioned" when empty.
	Version string
	// Clock gives the time the Expires header of hashed OpenAPI v3 requests
	// counts from; the real clock when nil.
	Clock clock.PassiveClock
}

// Docs holds the OpenAPI documents built from a Config, serialized once,
// and serves them. It is immutable after New and safe for concurrent use.
type Docs struct {
	clock clock.PassiveClock
	// v2JSON and v2Proto are the Swagger 2.0 document as JSON and in the
	// gnostic protobuf encoding kubectl asks for.
	v2JSON, v2Proto document
	// v3Index is the /openapi/v3 discovery document.
	v3Index document
	// v3 holds each group version's OpenAPI 3.0 document, keyed like the
	// index ("api/v1", "apis/apps/v1").
	v3 map[string]*v3Doc
}

// v3Doc is one group version's OpenAPI 3.0 document.
type v3Doc struct {
	json, proto document
}

// document is a serialized document and its entity tag.
type document struct {
	data []byte
	// etag is the upper-case hex SHA-512 of data, unquoted; it is also the
	// hash query parameter of OpenAPI v3 URLs.
	etag string
}

func newDocument(data []byte) document {
	return document{data: data, etag: fmt.Sprintf("%X", sha512.Sum512(data))}
}

// scaleType is the body of every scale subresource.
var scaleType = reflect.TypeFor[autoscalingv1.Scale]()

var scaleGVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// New builds and serializes the OpenAPI v2 and v3 documents of cfg.Kinds.
// Schemas come from the Go types of Object and List by reflection (see the
// package documentation for the rules). It returns an error for an invalid
// Kind or a type with no JSON schema.
func New(cfg Config) (*Docs, error) {
	if cfg.Title == "" {
		cfg.Title = "Kubernetes"
	}
	if cfg.Version == "" {
		cfg.Version = "unversioned"
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	defs := newDefinitions()
	// Meta types referenced by every set of paths.
	for _, t := range []reflect.Type{
		reflect.TypeFor[metav1.Status](),
		reflect.TypeFor[metav1.DeleteOptions](),
		reflect.TypeFor[metav1.WatchEvent](),
		reflect.TypeFor[metav1.Patch](),
	} {
		if _, err := defs.add(t); err != nil {
			return nil, fmt.Errorf("openapi: %w", err)
		}
	}
	defs.addGVK(defStatus, schema.GroupVersionKind{Version: "v1", Kind: "Status"})

	type gvPaths struct {
		items []*pathItem
		// roots are the definitions the paths refer to.
		roots []string
	}
	byGV := make(map[schema.GroupVersion]*gvPaths)
	seen := make(map[string]bool)
	for i, k := range cfg.Kinds {
		if err := validateKind(k); err != nil {
			return nil, fmt.Errorf("openapi: kind %d (%s): %w", i, k.GVK, err)
		}
		gv := k.GVK.GroupVersion()
		key := gvKey(gv) + "/" + k.Resource
		if seen[key] {
			return nil, fmt.Errorf("openapi: resource %s is declared twice", key)
		}
		seen[key] = true
		objDef, listDef, err := defs.addKind(k)
		if err != nil {
			return nil, fmt.Errorf("openapi: kind %s: %w", k.GVK, err)
		}
		roots := []string{objDef, defStatus, defDeleteOptions, defWatchEvent, defPatch}
		if listDef != "" {
			roots = append(roots, listDef)
		}
		subDefs := map[string]string{}
		subGVKs := map[string]schema.GroupVersionKind{}
		for _, sub := range k.Subresources {
			switch sub {
			case "status", "approval":
				subDefs[sub], subGVKs[sub] = objDef, k.GVK
			case "scale":
				name, err := defs.add(scaleType)
				if err != nil {
					return nil, fmt.Errorf("openapi: %w", err)
				}
				defs.addGVK(name, scaleGVK)
				subDefs[sub], subGVKs[sub] = name, scaleGVK
				roots = append(roots, name)
			}
		}
		g := byGV[gv]
		if g == nil {
			g = &gvPaths{}
			byGV[gv] = g
		}
		g.items = append(g.items, kindPaths(k, objDef, listDef, subDefs, subGVKs)...)
		g.roots = append(g.roots, roots...)
	}
	// DeleteOptions and WatchEvent are registered in every group version.
	gvs := make([]schema.GroupVersion, 0, len(byGV))
	for gv := range byGV {
		gvs = append(gvs, gv)
	}
	sort.Slice(gvs, func(i, j int) bool { return gvKey(gvs[i]) < gvKey(gvs[j]) })
	for _, gv := range gvs {
		defs.addGVK(defDeleteOptions, gv.WithKind("DeleteOptions"))
		defs.addGVK(defWatchEvent, gv.WithKind("WatchEvent"))
	}

	info := map[string]any{"title": cfg.Title, "version": cfg.Version}
	d := &Docs{clock: cfg.Clock, v3: make(map[string]*v3Doc, len(gvs))}

	// Swagger 2.0: everything in one document.
	v2Paths := map[string]any{}
	for _, gv := range gvs {
		for _, item := range byGV[gv].items {
			v2Paths[item.path] = item.render(swagger2)
		}
	}
	v2Defs := make(map[string]any, len(defs.schemas))
	for name, s := range defs.schemas {
		v2Defs[name] = s.render(swagger2)
	}
	v2, err := json.Marshal(map[string]any{
		"swagger":     "2.0",
		"info":        info,
		"paths":       v2Paths,
		"definitions": v2Defs,
	})
	if err != nil {
		return nil, fmt.Errorf("openapi: encode v2: %w", err)
	}
	d.v2JSON = newDocument(v2)
	v2Proto, err := v2ToProto(v2)
	if err != nil {
		return nil, err
	}
	d.v2Proto = newDocument(v2Proto)

	// OpenAPI 3.0: one document per group version, with the definitions
	// its paths reach.
	index := map[string]any{}
	for _, gv := range gvs {
		g := byGV[gv]
		paths := make(map[string]any, len(g.items))
		for _, item := range g.items {
			paths[item.path] = item.render(openAPI3)
		}
		reach := defs.closure(g.roots)
		schemas := make(map[string]any, len(reach))
		for name := range reach {
			schemas[name] = defs.schemas[name].render(openAPI3)
		}
		data, err := json.Marshal(map[string]any{
			"openapi":    "3.0.0",
			"info":       info,
			"paths":      paths,
			"components": map[string]any{"schemas": schemas},
		})
		if err != nil {
			return nil, fmt.Errorf("openapi: encode v3 %s: %w", gv, err)
		}
		pb, err := v3ToProto(data)
		if err != nil {
			return nil, fmt.Errorf("openapi: %s: %w", gv, err)
		}
		doc := &v3Doc{json: newDocument(data), proto: newDocument(pb)}
		key := gvKey(gv)
		d.v3[key] = doc
		index[key] = map[string]any{"serverRelativeURL": v3URL(key, doc.json.etag)}
	}
	idx, err := json.Marshal(map[string]any{"paths": index})
	if err != nil {
		return nil, fmt.Errorf("openapi: encode v3 index: %w", err)
	}
	d.v3Index = newDocument(idx)
	return d, nil
}

// v3URL is the server-relative URL of a group version's document; the hash
// changes whenever the document does, so clients may cache by URL.
func v3URL(key, etag string) string { return "/openapi/v3/" + key + "?hash=" + etag }

// v2ToProto re-encodes the JSON Swagger document in the protobuf form of
// github.com/google/gnostic-models, which is what kubectl and client-go's
// discovery client request and decode.
func v2ToProto(data []byte) ([]byte, error) {
	doc, err := openapiv2.ParseDocument(data)
	if err != nil {
		return nil, fmt.Errorf("openapi: v2 document does not parse as Swagger 2.0: %w", err)
	}
	pb, err := proto.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("openapi: encode v2 protobuf: %w", err)
	}
	return pb, nil
}

// v3ToProto does the same for an OpenAPI 3.0 document.
func v3ToProto(data []byte) ([]byte, error) {
	doc, err := openapiv3.ParseDocument(data)
	if err != nil {
		return nil, fmt.Errorf("v3 document does not parse as OpenAPI 3.0: %w", err)
	}
	pb, err := proto.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("encode v3 protobuf: %w", err)
	}
	return pb, nil
}

var knownSubresources = []string{"status", "scale", "approval"}

func validateKind(k Kind) error {
	var errs []error
	if k.GVK.Version == "" {
		errs = append(errs, errors.New("GVK.Version is empty"))
	}
	if k.GVK.Kind == "" {
		errs = append(errs, errors.New("GVK.Kind is empty"))
	}
	if k.Resource == "" || strings.ContainsAny(k.Resource, "/{}?#") || k.Resource != strings.ToLower(k.Resource) {
		errs = append(errs, fmt.Errorf("resource %q is not a lower-case path segment", k.Resource))
	}
	for _, f := range []struct {
		name string
		obj  runtime.Object
	}{{"Object", k.Object}, {"List", k.List}} {
		name, obj := f.name, f.obj
		if obj == nil && (name == "List" && k.CreateOnly || k.Schema != nil) {
			continue
		}
		if obj == nil {
			errs = append(errs, fmt.Errorf("%s is nil", name))
			continue
		}
		t := reflect.TypeOf(obj)
		if t.Kind() != reflect.Pointer || t.Elem().Kind() != reflect.Struct {
			errs = append(errs, fmt.Errorf("%s is a %s, not a pointer to a struct", name, t))
		}
	}
	if k.CreateOnly && len(k.Subresources) > 0 {
		errs = append(errs, errors.New("a CreateOnly resource has no subresources"))
	}
	for i, sub := range k.Subresources {
		if !slices.Contains(knownSubresources, sub) {
			errs = append(errs, fmt.Errorf("subresource %q is not one of %v", sub, knownSubresources))
		}
		if slices.Contains(k.Subresources[:i], sub) {
			errs = append(errs, fmt.Errorf("subresource %q is listed twice", sub))
		}
	}
	return errors.Join(errs...)
}
