package markers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// Module is a Go module whose packages Sources reads.
type Module struct {
	// Path is the module path, such as "k8s.io/api".
	Path string
	// Packages lists the packages to read, relative to the module root;
	// nil means every package of the module (except testdata).
	Packages []string
}

// Modules are the modules whose types kplane's OpenAPI documents describe:
// every group version of k8s.io/api, the apimachinery packages whose types
// appear in the definitions, and the CustomResourceDefinition types kplane
// serves as a built-in resource.
var Modules = []Module{
	{Path: "k8s.io/api"},
	{Path: "k8s.io/apimachinery", Packages: []string{"pkg/apis/meta/v1", "pkg/runtime", "pkg/util/intstr", "pkg/api/resource"}},
	{Path: "k8s.io/apiextensions-apiserver", Packages: []string{"pkg/apis/apiextensions/v1"}},
}

// Source is what Sources found: the packages to read and the version of
// each module, in the order of the modules given.
type Source struct {
	Packages []Package
	// Versions are "path version" strings, one per module.
	Versions []string
}

// Sources locates mods with `go list -m` run in dir (any directory of the
// main module, whose go.mod selects the versions) and lists their packages.
// It runs the go command and blocks until it exits.
func Sources(ctx context.Context, dir string, mods []Module) (*Source, error) {
	args := []string{"list", "-m", "-json"}
	for _, m := range mods {
		args = append(args, m.Path)
	}
	cmd := exec.CommandContext(ctx, "go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list -m: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	type listed struct{ Path, Version, Dir string }
	found := map[string]listed{}
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var l listed
		if err := dec.Decode(&l); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decode go list -m output: %w", err)
		}
		found[l.Path] = l
	}
	src := &Source{}
	for _, m := range mods {
		l, ok := found[m.Path]
		if !ok || l.Dir == "" {
			return nil, fmt.Errorf("module %s is not in the module cache; run go mod download", m.Path)
		}
		src.Versions = append(src.Versions, m.Path+" "+l.Version)
		rels := m.Packages
		if rels == nil {
			if rels, err = packageDirs(l.Dir); err != nil {
				return nil, fmt.Errorf("module %s: %w", m.Path, err)
			}
		}
		for _, rel := range rels {
			ip := m.Path
			if rel != "." {
				ip += "/" + filepath.ToSlash(rel)
			}
			src.Packages = append(src.Packages, Package{Dir: filepath.Join(l.Dir, rel), ImportPath: ip})
		}
	}
	return src, nil
}

// packageDirs lists, relative to root and sorted, the directories under it
// that hold Go sources, leaving out testdata and nested modules.
func packageDirs(root string) ([]string, error) {
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") || strings.HasPrefix(d.Name(), "_")) {
				return filepath.SkipDir
			}
			return nil
		}
		if skipFile(d.Name()) {
			return nil
		}
		rel, err := filepath.Rel(root, filepath.Dir(path))
		if err != nil {
			return err
		}
		if len(dirs) == 0 || dirs[len(dirs)-1] != rel {
			dirs = append(dirs, rel)
		}
		return nil
	})
	slices.Sort(dirs)
	return slices.Compact(dirs), err
}
