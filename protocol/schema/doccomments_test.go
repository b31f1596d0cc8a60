package schema

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"
)

// TestEveryWireTypeIsDocumented: the schema's descriptions and the hosts'
// generated types come from these comments, so none may be missing.
func TestEveryWireTypeIsDocumented(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(repoRoot, "protocol", "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.TYPE {
				continue
			}
			for _, spec := range gen.Specs {
				ts := spec.(*ast.TypeSpec)
				if ts.Name.IsExported() && ts.Doc == nil && gen.Doc == nil {
					t.Errorf("%s: type %s has no doc comment", fset.Position(ts.Pos()), ts.Name)
				}
			}
		}
	}
}
