package protocol

import (
	"errors"
	"testing"
)

func TestDecodeParamsStrict(t *testing.T) {
	var p CreateParams
	if err := DecodeParams([]byte(`{"spec":{"image":"x","env":{"A":"1"}},"tags":{"t":"v"},"future_field":1}`), &p); err != nil {
		t.Fatalf("valid params: %v", err)
	}
	if p.Spec.Image != "x" || p.Tags["t"] != "v" {
		t.Fatalf("decoded: %+v", p)
	}
	refused := []string{
		`{"spec":{"Image":"x"}}`,                         // case-variant field
		`{"tags":{"k":"a","k":"b"}}`,                     // duplicate map key
		`{"spec":{"volumes":[{"name":"a","Name":"b"}]}}`, // nested in an array
		`{"spec":{"image":"x"},"spec":{"image":"y"}}`,    // duplicate field
		`{"spec":{"memory_mb":"lots"}}`,                  // wrong type
		`[1]`,                                            // not an object
	}
	for _, raw := range refused {
		var p CreateParams
		err := DecodeParams([]byte(raw), &p)
		if KindOf(err) != KindInvalidRequest {
			t.Fatalf("%s: want invalid_request, got %v", raw, err)
		}
	}
	var e ExecParams
	if err := DecodeParams([]byte(`{"env":{"A":"1","a":"2"}}`), &e); err != nil || e.Env["a"] != "2" {
		t.Fatalf("env names are case-sensitive: %v", err)
	}
	if err := DecodeParams(nil, &p); err != nil {
		t.Fatalf("absent params: %v", err)
	}
}

func TestKindOf(t *testing.T) {
	if KindOf(Errorf(Kind("rate_limited"), "x")) != KindTransient {
		t.Fatal("unknown kinds are transient")
	}
	if KindOf(Errorf(KindNotFound, "outer: %w", Errorf(KindConflict, "inner"))) != KindNotFound {
		t.Fatal("the outermost kind wins")
	}
	if CodeOf(Errorf(KindQuota, "q")) != CodeQuota {
		t.Fatal("code follows kind")
	}
}

func TestErrorfPrintsCauseOnce(t *testing.T) {
	cause := errors.New("socket closed")
	err := Errorf(KindTransient, "container start: %w", cause)
	if err.Error() != "container start: socket closed" || !errors.Is(err, cause) {
		t.Fatalf("got %q", err)
	}
}

// A key the spec does not have is refused, named, with the keys it has: an
// ignored one would shape the sandbox in a way nobody enforces.
func TestDecodeParamsRefusesUnknownSpecKeys(t *testing.T) {
	cases := map[string]string{
		`{"spec":{"image":"x","read_only_rot":true}}`:              `spec has no key "read_only_rot" (known: cpus, env, image, lifetime_s, memory_mb, network, pids_limit, read_only_root, require_isolation, user, volumes, workdir)`,
		`{"spec":{"volumes":[{"name":"v","path":"p","rw":true}]}}`: `spec.volumes entry has no key "rw" (known: name, path, read_only)`,
	}
	for raw, want := range cases {
		var p CreateParams
		err := DecodeParams([]byte(raw), &p)
		if KindOf(err) != KindInvalidRequest || err.Error() != "params: "+want {
			t.Errorf("%s: want invalid_request %q, got %v", raw, want, err)
		}
	}
	// Elsewhere unknown keys stay allowed, for a newer host.
	var p CreateParams
	if err := DecodeParams([]byte(`{"spec":{},"future_field":{"x":1}}`), &p); err != nil {
		t.Fatalf("an unknown params key: %v", err)
	}
}
