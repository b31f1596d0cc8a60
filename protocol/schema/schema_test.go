package schema

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite docs/protocol.schema.json from the Go types")

const repoRoot = "../.."

var committedPath = filepath.Join(repoRoot, "docs", "protocol.schema.json")

// TestSchemaIsCurrent keeps the committed schema equal to what the Go types
// say, so a host generating its types from it never sees a stale wire.
func TestSchemaIsCurrent(t *testing.T) {
	got, err := Generate(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile(committedPath, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(committedPath)
	if err != nil {
		t.Fatalf("%v (run `go generate ./protocol/schema`)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("docs/protocol.schema.json differs from the Go types in protocol/; run `go generate ./protocol/schema` and commit it")
	}
}

func TestGenerateIsDeterministic(t *testing.T) {
	a, err := Generate(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Generate(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a, b) {
		t.Fatal("two generations differ")
	}
}
