// Package schema generates the JSON Schema of the resident wire protocol
// from the Go types in package protocol, so hosts in other languages (the
// Python package, the editor extension) build their types from one
// machine-readable source instead of copying method names by hand. The
// committed copy is docs/protocol.schema.json; TestSchemaIsCurrent fails when
// it and the Go types differ (regenerate with `go generate ./protocol/schema`).
package schema

//go:generate go test -run ^TestSchemaIsCurrent$ -update

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/resident-dev/resident/protocol"
)

// ModulePath is the import path the comments of protocol/ are filed under.
const ModulePath = "github.com/resident-dev/resident"

// Document is the whole schema: every type in $defs, and a table of the
// wire's methods naming the $defs of their params and results. "methods" and
// "notifications" are annotations (JSON Schema ignores unknown keywords); a
// validator checks a message by its params' or result's definition.
type Document struct {
	Schema          string                        `json:"$schema"`
	ID              string                        `json:"$id"`
	Title           string                        `json:"title"`
	Description     string                        `json:"description"`
	ProtocolVersion int                           `json:"protocol_version"`
	Methods         map[string]Method             `json:"methods"`
	Notifications   map[string]Notification       `json:"notifications"`
	ErrorData       *jsonschema.Schema            `json:"error_data"`
	Defs            map[string]*jsonschema.Schema `json:"$defs"`
}

// Method is one request a host sends and the resident answers.
type Method struct {
	Params *jsonschema.Schema `json:"params"`
	Result *jsonschema.Schema `json:"result"`
}

// Notification is one message that gets no response.
type Notification struct {
	// Direction is "host_to_resident" or "resident_to_host".
	Direction string             `json:"direction"`
	Params    *jsonschema.Schema `json:"params"`
}

// Generate builds the document. repoRoot is the directory holding protocol/,
// read for the doc comments that become descriptions.
func Generate(repoRoot string) ([]byte, error) {
	r := &jsonschema.Reflector{
		Anonymous: true,
		Mapper:    mapSpecialTypes,
	}
	if err := addComments(r, repoRoot); err != nil {
		return nil, err
	}
	doc := Document{
		Schema:          "https://json-schema.org/draft/2020-12/schema",
		ID:              fmt.Sprintf("urn:resident:protocol:%d", protocol.Version),
		Title:           fmt.Sprintf("resident wire protocol, version %d", protocol.Version),
		Description:     "Generated from the Go types of package protocol; docs/protocol.md is the prose. Bytes travel as base64 strings, slices are never null, optional fields may be absent.",
		ProtocolVersion: protocol.Version,
		Methods:         map[string]Method{},
		Notifications:   map[string]Notification{},
		Defs:            map[string]*jsonschema.Schema{},
	}
	ref := func(t reflect.Type) *jsonschema.Schema { return reflectInto(r, doc.Defs, t) }
	for _, c := range protocol.Catalog {
		if c.Notification {
			dir := "resident_to_host"
			if c.FromHost {
				dir = "host_to_resident"
			}
			doc.Notifications[c.Method] = Notification{Direction: dir, Params: ref(c.Params)}
			continue
		}
		doc.Methods[c.Method] = Method{Params: ref(c.Params), Result: ref(c.Result)}
	}
	doc.ErrorData = ref(reflect.TypeFor[protocol.ErrorData]())
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("schema encode: %w", err)
	}
	return out.Bytes(), nil
}

// reflectInto reflects t, files every definition it needs into defs, and
// returns a reference to t's own.
func reflectInto(r *jsonschema.Reflector, defs map[string]*jsonschema.Schema, t reflect.Type) *jsonschema.Schema {
	s := r.ReflectFromType(t)
	for name, d := range s.Definitions {
		defs[name] = d
	}
	s.Definitions = nil
	s.Version = ""
	allowNulls(defs, t, map[reflect.Type]bool{})
	return s
}

// allowNulls marks the pointer fields that are always present as nullable:
// encoding/json writes a nil one as null (read_owner's owner), which the
// reflected schema would otherwise refuse.
func allowNulls(defs map[string]*jsonschema.Schema, t reflect.Type, seen map[reflect.Type]bool) {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] {
		return
	}
	seen[t] = true
	def := defs[t.Name()]
	for i := range t.NumField() {
		f := t.Field(i)
		allowNulls(defs, f.Type, seen)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		if def == nil || f.Type.Kind() != reflect.Pointer || strings.Contains(opts, "omitempty") || name == "" || name == "-" {
			continue
		}
		if prop, ok := def.Properties.Get(name); ok {
			def.Properties.Set(name, &jsonschema.Schema{
				AnyOf:       []*jsonschema.Schema{prop, {Type: "null"}},
				Description: prop.Description,
			})
			prop.Description = ""
		}
	}
}

func addComments(r *jsonschema.Reflector, repoRoot string) error {
	// AddGoComments files each package under base joined with the directory
	// it walked, so the walk must start from the module root.
	abs, err := filepath.Abs(repoRoot)
	if err != nil {
		return err
	}
	err = withDir(abs, func() error {
		return r.AddGoComments(ModulePath, "protocol", jsonschema.WithFullComment())
	})
	for k, text := range r.CommentMap {
		r.CommentMap[k] = unwrap(text)
	}
	return err
}

// unwrap joins a doc comment's wrapped lines, keeping paragraph breaks, so a
// description reads the same in any host's generated code.
func unwrap(text string) string {
	paras := strings.Split(strings.TrimSpace(text), "\n\n")
	for i, p := range paras {
		paras[i] = strings.Join(strings.Fields(p), " ")
	}
	return strings.Join(paras, "\n\n")
}

// mapSpecialTypes gives the closed sets (error kinds, reasons, pull phases) as enums;
// everything else reflects from its Go type.
func mapSpecialTypes(t reflect.Type) *jsonschema.Schema {
	if t == reflect.TypeFor[protocol.PullPhase]() {
		phases := make([]any, len(protocol.PullPhases))
		for i, p := range protocol.PullPhases {
			phases[i] = string(p)
		}
		return &jsonschema.Schema{Type: "string", Enum: phases, Description: "A layer's step in an image pull, from a closed set."}
	}
	if t == reflect.TypeFor[protocol.Reason]() {
		reasons := make([]any, len(protocol.Reasons))
		for i, r := range protocol.Reasons {
			reasons[i] = string(r)
		}
		return &jsonschema.Schema{Type: "string", Enum: reasons, Description: "What went wrong with a file, a directory, a program or a volume, from a closed set."}
	}
	if t == reflect.TypeFor[protocol.Kind]() {
		kinds := make([]any, len(protocol.Kinds))
		for i, k := range protocol.Kinds {
			kinds[i] = string(k)
		}
		return &jsonschema.Schema{Type: "string", Enum: kinds, Description: "One of the closed set of error kinds; branch on it."}
	}
	return nil
}
