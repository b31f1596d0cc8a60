package provider_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Every optional ability a provider implementation has (by method names)
// carries an interface guard, `var _ provider.X = (*T)(nil)`: without one, a
// signature that drifts from the interface compiles and the resident's
// type assertion silently turns the ability off. The guard itself makes the
// compiler check the signatures; this test makes sure it is there.
func TestOptionalAbilitiesHaveInterfaceGuards(t *testing.T) {
	optional := interfaceMethods(t, parseDir(t, "."), "Provider", "Process")
	dirs, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, d := range dirs {
		if !d.IsDir() || d.Name() == "providertest" || d.Name() == "testdata" {
			continue
		}
		files := parseDir(t, d.Name())
		methods, guards := methodsAndGuards(files)
		for typ, have := range methods {
			for iface, want := range optional {
				if !containsAll(have, want) {
					continue
				}
				checked++
				if !slices.Contains(guards[typ], iface) {
					t.Errorf("provider/%s: *%s has the methods of provider.%s but no guard `var _ provider.%s = (*%s)(nil)`", d.Name(), typ, iface, iface, typ)
				}
			}
		}
	}
	if checked == 0 {
		t.Fatal("no provider implementation found")
	}
}

func parseDir(t *testing.T, dir string) []*ast.File {
	t.Helper()
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	return files
}

// interfaceMethods: the method names of each exported interface of package
// provider, except the ones every provider must have anyway.
func interfaceMethods(t *testing.T, files []*ast.File, except ...string) map[string][]string {
	out := map[string][]string{}
	for _, f := range files {
		ast.Inspect(f, func(n ast.Node) bool {
			spec, ok := n.(*ast.TypeSpec)
			if !ok || !spec.Name.IsExported() || slices.Contains(except, spec.Name.Name) {
				return true
			}
			if it, ok := spec.Type.(*ast.InterfaceType); ok {
				for _, m := range it.Methods.List {
					for _, name := range m.Names {
						out[spec.Name.Name] = append(out[spec.Name.Name], name.Name)
					}
				}
			}
			return true
		})
	}
	if len(out) == 0 {
		t.Fatal("package provider has no optional interfaces?")
	}
	return out
}

// methodsAndGuards: the methods of each pointer receiver type, and the
// interfaces each type is guarded against.
func methodsAndGuards(files []*ast.File) (methods, guards map[string][]string) {
	methods, guards = map[string][]string{}, map[string][]string{}
	for _, f := range files {
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil || len(d.Recv.List) != 1 {
					continue
				}
				if star, ok := d.Recv.List[0].Type.(*ast.StarExpr); ok {
					if id, ok := star.X.(*ast.Ident); ok {
						methods[id.Name] = append(methods[id.Name], d.Name.Name)
					}
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					vs, ok := s.(*ast.ValueSpec)
					if !ok || len(vs.Names) != 1 || vs.Names[0].Name != "_" || len(vs.Values) != 1 {
						continue
					}
					sel, ok := vs.Type.(*ast.SelectorExpr)
					if !ok {
						continue
					}
					if typ := nilPointerType(vs.Values[0]); typ != "" {
						guards[typ] = append(guards[typ], sel.Sel.Name)
					}
				}
			}
		}
	}
	return methods, guards
}

// nilPointerType: "T" for (*T)(nil).
func nilPointerType(e ast.Expr) string {
	call, ok := e.(*ast.CallExpr)
	if !ok || len(call.Args) != 1 {
		return ""
	}
	paren, ok := call.Fun.(*ast.ParenExpr)
	if !ok {
		return ""
	}
	star, ok := paren.X.(*ast.StarExpr)
	if !ok {
		return ""
	}
	id, ok := star.X.(*ast.Ident)
	if !ok {
		return ""
	}
	return id.Name
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}
