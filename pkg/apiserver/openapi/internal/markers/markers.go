// Package markers reads the comment markers Kubernetes' API types carry
// for their OpenAPI schemas (+listType, +listMapKey, +mapType, +structType
// and +default) from the Go sources of the API modules, and renders them as
// the Go table the openapi package applies when it builds schemas by
// reflection, where comments are invisible.
//
// Extraction is deterministic: the same sources give the same table and
// the same rendered bytes. Markers of Kubernetes' declarative validation
// (+k8s:listType and the like) are not OpenAPI markers and are ignored, as
// Kubernetes' OpenAPI generator ignores them.
package markers

import (
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// Field holds the markers of one struct field, or, under the empty field
// name, of a type declaration.
type Field struct {
	// ListType is "atomic", "set" or "map", or empty.
	ListType string
	// ListMapKeys are the +listMapKey values in the order written.
	ListMapKeys []string
	// MapType is "atomic" or "granular" from +mapType or +structType (both
	// become x-kubernetes-map-type), or empty.
	MapType string
	// Default is the +default value as compact JSON, or empty; a
	// ref(Const) default is resolved to the constant's value.
	Default string
}

// Table holds markers by OpenAPI definition name, then by JSON field name
// ("" for the markers of the type itself). Only types and fields that carry
// at least one marker are present.
type Table map[string]map[string]Field

// Package is one Go package to read.
type Package struct {
	// Dir is the directory holding the package's sources.
	Dir string
	// ImportPath is the package's import path, such as "k8s.io/api/core/v1".
	ImportPath string
}

// Extract reads the markers of every type and field declared in pkgs.
// It returns an error for a source that does not parse, a marker with a
// value Kubernetes does not allow, a default that is not JSON, or two
// types claiming one definition name.
func Extract(pkgs []Package) (Table, error) {
	t := Table{}
	owner := map[string]string{}
	var errs []error
	for _, p := range pkgs {
		if err := extractPackage(p, t, owner); err != nil {
			errs = append(errs, fmt.Errorf("package %s: %w", p.ImportPath, err))
		}
	}
	return t, errors.Join(errs...)
}

// skipFile tells which files of a package hold no API types worth parsing.
func skipFile(name string) bool {
	return !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") ||
		strings.HasSuffix(name, ".pb.go") || name == "zz_generated.deepcopy.go"
}

type parsedPackage struct {
	files []*ast.File
	// modelNames are the OpenAPIModelName results by Go type name.
	modelNames map[string]string
	// consts are the package's constants with a literal value, by name.
	consts map[string]*ast.BasicLit
}

func parsePackage(p Package) (*parsedPackage, error) {
	entries, err := os.ReadDir(p.Dir)
	if err != nil {
		return nil, err
	}
	fset := token.NewFileSet()
	pp := &parsedPackage{modelNames: map[string]string{}, consts: map[string]*ast.BasicLit{}}
	for _, e := range entries {
		if e.IsDir() || skipFile(e.Name()) {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(p.Dir, e.Name()), nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		pp.files = append(pp.files, f)
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if recv, name, ok := modelNameMethod(d); ok {
					pp.modelNames[recv] = name
				}
			case *ast.GenDecl:
				if d.Tok != token.CONST {
					continue
				}
				for _, s := range d.Specs {
					vs := s.(*ast.ValueSpec)
					for i, n := range vs.Names {
						if i < len(vs.Values) {
							if lit, ok := vs.Values[i].(*ast.BasicLit); ok {
								pp.consts[n.Name] = lit
							}
						}
					}
				}
			}
		}
	}
	return pp, nil
}

// modelNameMethod recognizes `func (T) OpenAPIModelName() string { return "name" }`.
func modelNameMethod(d *ast.FuncDecl) (recv, name string, ok bool) {
	if d.Name.Name != "OpenAPIModelName" || d.Recv == nil || len(d.Recv.List) != 1 || d.Body == nil || len(d.Body.List) != 1 {
		return "", "", false
	}
	rt := d.Recv.List[0].Type
	if star, isStar := rt.(*ast.StarExpr); isStar {
		rt = star.X
	}
	id, isIdent := rt.(*ast.Ident)
	if !isIdent {
		return "", "", false
	}
	ret, isRet := d.Body.List[0].(*ast.ReturnStmt)
	if !isRet || len(ret.Results) != 1 {
		return "", "", false
	}
	lit, isLit := ret.Results[0].(*ast.BasicLit)
	if !isLit || lit.Kind != token.STRING {
		return "", "", false
	}
	s, err := strconv.Unquote(lit.Value)
	if err != nil {
		return "", "", false
	}
	return id.Name, s, true
}

// DefinitionName returns the OpenAPI definition name of a type named
// typeName in the package at importPath, by the rule Kubernetes uses for
// types without an OpenAPIModelName: the host reversed, slashes turned into
// dots and dashes into underscores ("k8s.io/api/core/v1".Pod becomes
// "io.k8s.api.core.v1.Pod"). The openapi package names types the same way.
func DefinitionName(importPath, typeName string) string {
	segments := strings.Split(importPath, "/")
	host := strings.Split(segments[0], ".")
	slices.Reverse(host)
	parts := append(host, segments[1:]...)
	for i, p := range parts {
		parts[i] = strings.ReplaceAll(p, "-", "_")
	}
	return strings.Join(parts, ".") + "." + typeName
}

func extractPackage(p Package, t Table, owner map[string]string) error {
	pp, err := parsePackage(p)
	if err != nil {
		return err
	}
	var errs []error
	for _, f := range pp.files {
		for _, d := range f.Decls {
			gd, ok := d.(*ast.GenDecl)
			if !ok || gd.Tok != token.TYPE {
				continue
			}
			for _, s := range gd.Specs {
				ts := s.(*ast.TypeSpec)
				doc := ts.Doc
				if doc == nil && len(gd.Specs) == 1 {
					doc = gd.Doc
				}
				if err := pp.extractType(p, ts, doc, t, owner); err != nil {
					errs = append(errs, fmt.Errorf("type %s: %w", ts.Name.Name, err))
				}
			}
		}
	}
	return errors.Join(errs...)
}

func (pp *parsedPackage) extractType(p Package, ts *ast.TypeSpec, doc *ast.CommentGroup, t Table, owner map[string]string) error {
	name := pp.modelNames[ts.Name.Name]
	if name == "" {
		name = DefinitionName(p.ImportPath, ts.Name.Name)
	}
	goName := p.ImportPath + "." + ts.Name.Name
	var errs []error
	add := func(field string, m Field, err error) {
		if err != nil {
			errs = append(errs, err)
			return
		}
		if reflect.DeepEqual(m, Field{}) {
			return
		}
		if o, dup := owner[name]; dup && o != goName {
			errs = append(errs, fmt.Errorf("definition %s is claimed by %s too", name, o))
			return
		}
		owner[name] = goName
		if t[name] == nil {
			t[name] = map[string]Field{}
		}
		t[name][field] = m
	}
	st, isStruct := ts.Type.(*ast.StructType)
	if !isStruct {
		switch ts.Type.(type) {
		case *ast.ArrayType, *ast.MapType, *ast.Ident, *ast.SelectorExpr:
			m, err := pp.parse(commentLines(doc), kindOf(ts.Type))
			add("", m, err)
		}
		return errors.Join(errs...)
	}
	m, err := pp.parse(commentLines(doc), kindStruct)
	add("", m, err)
	for _, f := range st.Fields.List {
		jsonName, ok := fieldJSONName(f)
		if !ok {
			continue
		}
		m, err := pp.parse(commentLines(f.Doc), kindOf(f.Type))
		if err != nil {
			err = fmt.Errorf("field %s: %w", jsonName, err)
		}
		add(jsonName, m, err)
	}
	return errors.Join(errs...)
}

// fieldJSONName returns the JSON property name of a struct field, or false
// for a field that is not a property of its own (unexported, tagged "-",
// or embedded without a JSON name and so inlined).
func fieldJSONName(f *ast.Field) (string, bool) {
	var tag reflect.StructTag
	if f.Tag != nil {
		s, err := strconv.Unquote(f.Tag.Value)
		if err != nil {
			return "", false
		}
		tag = reflect.StructTag(s)
	}
	jsonTag, hasTag := tag.Lookup("json")
	name, _, _ := strings.Cut(jsonTag, ",")
	if name == "-" && jsonTag == "-" {
		return "", false
	}
	if len(f.Names) == 0 {
		if name == "" {
			return "", false // embedded, inlined
		}
		return name, true
	}
	if len(f.Names) != 1 || !f.Names[0].IsExported() {
		return "", false
	}
	if !hasTag || name == "" {
		return f.Names[0].Name, true
	}
	return name, true
}

// commentLines returns the text of each line of a doc comment.
func commentLines(g *ast.CommentGroup) []string {
	if g == nil {
		return nil
	}
	var out []string
	for _, c := range g.List {
		text := c.Text
		if strings.HasPrefix(text, "//") {
			out = append(out, strings.TrimSpace(text[2:]))
			continue
		}
		text = strings.TrimSuffix(strings.TrimPrefix(text, "/*"), "*/")
		for line := range strings.SplitSeq(text, "\n") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

type typeKind int

const (
	kindOther typeKind = iota
	kindStruct
	kindList
	kindMap
)

func kindOf(e ast.Expr) typeKind {
	for {
		star, ok := e.(*ast.StarExpr)
		if !ok {
			break
		}
		e = star.X
	}
	switch e := e.(type) {
	case *ast.ArrayType:
		if id, ok := e.Elt.(*ast.Ident); ok && id.Name == "byte" {
			return kindOther // base64 string
		}
		return kindList
	case *ast.MapType:
		return kindMap
	case *ast.StructType:
		return kindStruct
	}
	return kindOther
}

var refDefault = regexp.MustCompile(`^ref\(([A-Za-z_][A-Za-z0-9_]*)\)$`)

// parse reads the markers of one doc comment. structType is only taken on
// structs (or fields whose type is not known to be a list or map: a named
// struct type), mapType on maps.
func (pp *parsedPackage) parse(lines []string, kind typeKind) (Field, error) {
	var m Field
	var errs []error
	for _, line := range lines {
		if !strings.HasPrefix(line, "+") {
			continue
		}
		key, value, _ := strings.Cut(line[1:], "=")
		value = strings.TrimSpace(value)
		switch key {
		case "listType":
			if !slices.Contains([]string{"atomic", "set", "map"}, value) {
				errs = append(errs, fmt.Errorf("+listType=%s is not atomic, set or map", value))
				continue
			}
			m.ListType = value
		case "listMapKey":
			if value == "" {
				errs = append(errs, errors.New("+listMapKey has no value"))
				continue
			}
			if !slices.Contains(m.ListMapKeys, value) {
				m.ListMapKeys = append(m.ListMapKeys, value)
			}
		case "mapType", "structType":
			if value != "atomic" && value != "granular" {
				errs = append(errs, fmt.Errorf("+%s=%s is not atomic or granular", key, value))
				continue
			}
			if kind != kindOther && (key == "mapType") != (kind == kindMap) || key == "structType" && kind == kindList {
				errs = append(errs, fmt.Errorf("+%s on a type it does not apply to", key))
				continue
			}
			m.MapType = value
		case "default":
			d, err := pp.defaultJSON(value)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			m.Default = d
		}
	}
	if m.ListType != "" && kind != kindList && kind != kindOther {
		errs = append(errs, fmt.Errorf("+listType on a type that is not a list"))
	}
	return m, errors.Join(errs...)
}

// defaultJSON returns the compact JSON of a +default value: a JSON literal,
// or ref(Const) naming a constant of the package, whose value it takes.
func (pp *parsedPackage) defaultJSON(value string) (string, error) {
	if sub := refDefault.FindStringSubmatch(value); sub != nil {
		lit, ok := pp.consts[sub[1]]
		if !ok {
			return "", fmt.Errorf("+default=%s names no constant with a literal value", value)
		}
		switch lit.Kind {
		case token.STRING:
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return "", fmt.Errorf("+default=%s: %w", value, err)
			}
			b, err := json.Marshal(s)
			return string(b), err
		case token.INT, token.FLOAT:
			value = lit.Value
		default:
			return "", fmt.Errorf("+default=%s: constant of kind %s", value, lit.Kind)
		}
	}
	var v any
	if err := json.Unmarshal([]byte(value), &v); err != nil {
		return "", fmt.Errorf("+default=%s is not JSON: %w", value, err)
	}
	b, err := json.Marshal(v)
	return string(b), err
}
