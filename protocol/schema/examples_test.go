package schema

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/resident-dev/resident/protocol"
)

// docExample is one frame body quoted in a document.
type docExample struct {
	where string
	msg   map[string]json.RawMessage
}

// placeholder marks a quoted frame that elides parts on purpose.
func placeholder(line string) bool {
	return strings.Contains(line, "…") || strings.Contains(line, "{ ... }") || strings.Contains(line, ":<")
}

// frameExamples finds every line of path that quotes a JSON-RPC message:
// bare, after an arrow (→ ←), or after a Content-Length header.
func frameExamples(t *testing.T, path string) []docExample {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []docExample
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		i := strings.Index(line, `{"`)
		if i < 0 || !strings.Contains(line[i:], `"jsonrpc"`) {
			continue
		}
		body := strings.TrimSpace(line[i:])
		where := fmt.Sprintf("%s:%d", filepath.Base(path), n)
		if placeholder(body) {
			continue
		}
		var msg map[string]json.RawMessage
		if err := json.Unmarshal([]byte(body), &msg); err != nil {
			t.Errorf("%s: a quoted frame is not JSON: %v", where, err)
			continue
		}
		out = append(out, docExample{where: where, msg: msg})
	}
	return out
}

func compileDoc(t *testing.T) *jsonschema.Compiler {
	t.Helper()
	raw, err := Generate(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.AssertFormat()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	return c
}

// TestDocExamplesMatchSchema checks every frame quoted in docs/protocol.md
// and the README against the schema: a request's params by its method, a
// response's result by the method of the request with the same id quoted
// before it, an error's data, a notification's params. An example that a
// host author would copy cannot then disagree with the types.
func TestDocExamplesMatchSchema(t *testing.T) {
	c := compileDoc(t)
	compiled := map[string]*jsonschema.Schema{}
	validate := func(where, pointer string, raw json.RawMessage) {
		sch, ok := compiled[pointer]
		if !ok {
			var err error
			if sch, err = c.Compile("schema.json#" + pointer); err != nil {
				t.Fatalf("compile %s: %v", pointer, err)
			}
			compiled[pointer] = sch
		}
		if len(raw) == 0 {
			raw = json.RawMessage("{}")
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
		if err != nil {
			t.Errorf("%s: %v", where, err)
			return
		}
		if err := sch.Validate(v); err != nil {
			t.Errorf("%s: does not match %s:\n%v", where, pointer, err)
		}
	}
	checked := 0
	for _, path := range []string{filepath.Join(repoRoot, "docs", "protocol.md"), filepath.Join(repoRoot, "README.md")} {
		methodOfID := map[string]string{}
		for _, ex := range frameExamples(t, path) {
			checked++
			var method string
			if m, ok := ex.msg["method"]; ok {
				if err := json.Unmarshal(m, &method); err != nil {
					t.Errorf("%s: method: %v", ex.where, err)
					continue
				}
			}
			id, hasID := ex.msg["id"]
			switch {
			case method != "":
				call, ok := protocol.CallOf(method)
				if !ok {
					if !strings.HasPrefix(method, "no/") {
						t.Errorf("%s: method %q is not in protocol.Catalog", ex.where, method)
					}
					continue
				}
				if hasID && !call.Notification {
					methodOfID[string(id)] = method
				}
				validate(ex.where, "/$defs/"+call.Params.Name(), ex.msg["params"])
			case ex.msg["error"] != nil:
				var e struct {
					Data json.RawMessage `json:"data"`
				}
				if err := json.Unmarshal(ex.msg["error"], &e); err != nil {
					t.Errorf("%s: error: %v", ex.where, err)
					continue
				}
				validate(ex.where, "/$defs/ErrorData", e.Data)
			case ex.msg["result"] != nil:
				method, ok := methodOfID[string(id)]
				if !ok {
					continue // a result quoted without its request
				}
				call, _ := protocol.CallOf(method)
				validate(ex.where, "/$defs/"+call.Result.Name(), ex.msg["result"])
			}
		}
	}
	if checked < 20 {
		t.Fatalf("found only %d quoted frames; the extraction is broken", checked)
	}
}
