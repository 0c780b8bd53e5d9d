package testenv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kplane/kplane/pkg/client"
	"github.com/kplane/kplane/pkg/registry"
)

// seed is one object to create when an environment starts.
type seed struct {
	// source says where the object came from, for errors: "WithObjects
	// argument 2" or "dir/app.yaml, document 3".
	source string
	// info is the object's resource.
	info registry.Info
	// obj is the object as JSON values, apiVersion and kind set.
	obj map[string]any
}

// seedFromValue turns a Go value into a seed. Its kind comes from its
// apiVersion and kind when set, otherwise from its Go type.
func seedFromValue(source string, obj runtime.Object, resources []registry.Strategy) (seed, error) {
	if obj == nil || reflect.ValueOf(obj).Kind() == reflect.Pointer && reflect.ValueOf(obj).IsNil() {
		return seed{}, fmt.Errorf("%s: nil object", source)
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return seed{}, fmt.Errorf("%s: encode %T: %w", source, obj, err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		return seed{}, fmt.Errorf("%s: encode %T: %w", source, obj, err)
	}
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	if apiVersion == "" || kind == "" {
		st := strategyForType(obj, resources)
		if st == nil {
			return seed{}, fmt.Errorf("%s: %T is not a type the API server serves; set its apiVersion and kind or use one of %s", source, obj, servedKinds(resources))
		}
		gvk := st.Info().GVK
		m["apiVersion"], m["kind"] = gvk.GroupVersion().String(), gvk.Kind
	}
	return newSeed(source, m, resources)
}

// strategyForType returns the resource whose objects have obj's Go type.
func strategyForType(obj runtime.Object, resources []registry.Strategy) registry.Strategy {
	t := reflect.TypeOf(obj)
	for _, st := range resources {
		if reflect.TypeOf(st.New()) == t {
			return st
		}
	}
	return nil
}

// newSeed finds the resource of m by its apiVersion and kind.
func newSeed(source string, m map[string]any, resources []registry.Strategy) (seed, error) {
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	if apiVersion == "" || kind == "" {
		return seed{}, fmt.Errorf("%s: apiVersion and kind are required", source)
	}
	for _, st := range resources {
		info := st.Info()
		if info.GVK.GroupVersion().String() == apiVersion && info.GVK.Kind == kind {
			return seed{source: source, info: info, obj: m}, nil
		}
	}
	return seed{}, fmt.Errorf("%s: kind %s %s is not served; served kinds are %s", source, apiVersion, kind, servedKinds(resources))
}

// servedKinds lists the served kinds for error messages.
func servedKinds(resources []registry.Strategy) string {
	var names []string
	for _, st := range resources {
		gvk := st.Info().GVK
		names = append(names, gvk.GroupVersion().String()+" "+gvk.Kind)
	}
	return strings.Join(names, ", ")
}

// seedsFromDir reads every .yaml, .yml and .json file under dir (sub
// directories included, in lexical order). A file may hold several YAML
// documents separated by "---" lines; a document of a kind ending in "List"
// (such as v1 List) contributes its items.
func seedsFromDir(dir string, resources []registry.Strategy) ([]seed, error) {
	var seeds []seed
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		switch strings.ToLower(path.Ext(p)) {
		case ".yaml", ".yml", ".json":
		default:
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		s, err := seedsFromYAML(p, data, resources)
		seeds = append(seeds, s...)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("testenv: read objects from %s: %w", dir, err)
	}
	return seeds, nil
}

// seedsFromYAML parses the documents of one file.
func seedsFromYAML(file string, data []byte, resources []registry.Strategy) ([]seed, error) {
	var seeds []seed
	for i, doc := range splitYAML(data) {
		source := fmt.Sprintf("%s, document %d", file, i+1)
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", source, err)
		}
		js = bytes.TrimSpace(js)
		if len(js) == 0 || string(js) == "null" {
			continue // an empty document, such as after a trailing "---"
		}
		var m map[string]any
		if err := json.Unmarshal(js, &m); err != nil {
			return nil, fmt.Errorf("%s: not an object: %w", source, err)
		}
		kind, _ := m["kind"].(string)
		if items, ok := m["items"].([]any); ok && strings.HasSuffix(kind, "List") {
			for j, item := range items {
				im, ok := item.(map[string]any)
				if !ok {
					return nil, fmt.Errorf("%s, item %d: not an object", source, j+1)
				}
				s, err := newSeed(fmt.Sprintf("%s, item %d", source, j+1), im, resources)
				if err != nil {
					return nil, err
				}
				seeds = append(seeds, s)
			}
			continue
		}
		s, err := newSeed(source, m, resources)
		if err != nil {
			return nil, err
		}
		seeds = append(seeds, s)
	}
	return seeds, nil
}

// splitYAML splits a stream at document separators: lines that are "---",
// possibly followed by a space and a comment.
func splitYAML(data []byte) [][]byte {
	var docs [][]byte
	var cur bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), len(data)+1)
	for sc.Scan() {
		line := sc.Bytes()
		trimmed := bytes.TrimRight(line, " \t\r")
		if bytes.Equal(trimmed, []byte("---")) || bytes.HasPrefix(line, []byte("--- ")) {
			docs = append(docs, bytes.Clone(cur.Bytes()))
			cur.Reset()
			continue
		}
		cur.Write(line)
		cur.WriteByte('\n')
	}
	return append(docs, cur.Bytes())
}

// createSeeds creates the seeds, namespaces first and the rest in order.
// An object with a status whose resource has a status subresource gets
// that status written after its creation, since create ignores it.
func createSeeds(ctx context.Context, c *client.Client, seeds []seed) error {
	ordered := slices.Clone(seeds)
	slices.SortStableFunc(ordered, func(a, b seed) int {
		return boolRank(!isNamespace(a.info)) - boolRank(!isNamespace(b.info))
	})
	for _, s := range ordered {
		if err := createSeed(ctx, c, s); err != nil {
			return err
		}
	}
	return nil
}

func isNamespace(info registry.Info) bool {
	return info.GVK.Group == "" && info.GVK.Kind == "Namespace"
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

func createSeed(ctx context.Context, c *client.Client, s seed) error {
	meta, _ := s.obj["metadata"].(map[string]any)
	if meta == nil {
		meta = map[string]any{}
		s.obj["metadata"] = meta
	}
	name, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	if s.info.Namespaced && ns == "" {
		ns = "default"
		meta["namespace"] = ns
	}
	if !s.info.Namespaced {
		ns = ""
		delete(meta, "namespace")
	}
	// The server assigns these; seeds are often copies of live objects.
	delete(meta, "resourceVersion")
	delete(meta, "uid")
	delete(meta, "creationTimestamp")
	delete(meta, "managedFields")

	what := s.info.GVK.Kind + " " + name
	if ns != "" {
		what = s.info.GVK.Kind + " " + ns + "/" + name
	}
	body, err := json.Marshal(s.obj)
	if err != nil {
		return fmt.Errorf("testenv: seed %s (%s): %w", s.source, what, err)
	}
	resp, err := c.Do(ctx, client.Request{Method: http.MethodPost, Path: collectionPath(s.info, ns), Body: body})
	if err != nil {
		return fmt.Errorf("testenv: seed %s (%s): %w", s.source, what, err)
	}
	status, hasStatus := s.obj["status"]
	if !hasStatus || !s.info.Status || isEmpty(status) {
		return nil
	}
	var created map[string]any
	if err := json.Unmarshal(resp.Body, &created); err != nil {
		return fmt.Errorf("testenv: seed %s (%s): decode created object: %w", s.source, what, err)
	}
	created["status"] = status
	body, err = json.Marshal(created)
	if err != nil {
		return fmt.Errorf("testenv: seed %s (%s): %w", s.source, what, err)
	}
	createdName := name
	if cm, ok := created["metadata"].(map[string]any); ok {
		createdName, _ = cm["name"].(string) // generateName resolved
	}
	if createdName == "" {
		return errors.New("testenv: seed " + s.source + ": created object has no name")
	}
	_, err = c.Do(ctx, client.Request{Method: http.MethodPut, Path: collectionPath(s.info, ns) + "/" + createdName + "/status", Body: body})
	if err != nil {
		return fmt.Errorf("testenv: seed %s (%s): write status: %w", s.source, what, err)
	}
	return nil
}

func isEmpty(v any) bool {
	m, ok := v.(map[string]any)
	return v == nil || ok && len(m) == 0
}

// collectionPath is the URL path of the resource's objects in namespace ns
// ("" for all namespaces or a cluster-scoped resource).
func collectionPath(info registry.Info, ns string) string {
	if !info.Namespaced {
		ns = ""
	}
	return client.CollectionPath(info.GVK.GroupVersion().WithResource(info.Resource), ns)
}
