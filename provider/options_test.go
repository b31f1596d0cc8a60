package provider

import (
	"strings"
	"testing"
	"time"
)

var (
	testTimeout = Option[time.Duration]{Name: "timeout", Default: time.Minute, Doc: "how long"}
	testFlag    = Option[bool]{Name: "flag", Doc: "a switch"}
	testName    = Option[string]{Name: "name", Default: "x", Doc: "a name"}
)

func init() {
	Register("options-test", "a provider with options, for this test", func(cfg Config) (Provider, error) {
		seen = cfg.Options
		return nil, nil
	}, testTimeout, testFlag, testName)
}

var seen Options

// Open refuses a key the provider did not declare (naming it and the known
// ones) and a value its type does not parse, before the factory runs.
func TestOpenChecksOptions(t *testing.T) {
	refused := map[string]string{
		"colour=red":  `unknown option "colour" (provider options-test takes: flag, name, timeout)`,
		"timeout=abc": `option timeout: "abc" is not a duration`,
		"timeout=-1s": `option timeout: "-1s" is not a duration`,
		"flag=maybe":  `option flag: "maybe" is not a bool`,
	}
	for kv, want := range refused {
		key, value, _ := strings.Cut(kv, "=")
		seen = Options{}
		_, err := Open("options-test", Config{Options: NewOptions(map[string]string{key: value})})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: want an error with %q, got %v", kv, want, err)
		}
		if seen.values != nil {
			t.Errorf("%s: the factory ran", kv)
		}
	}
	if _, err := Open("local-less", Config{}); err == nil {
		t.Fatal("an unknown provider opened")
	}
}

func TestOptionsReadTypedWithDefaults(t *testing.T) {
	if _, err := Open("options-test", Config{Options: NewOptions(map[string]string{"timeout": "90s", "flag": "true"})}); err != nil {
		t.Fatal(err)
	}
	if got := testTimeout.From(seen); got != 90*time.Second {
		t.Errorf("timeout = %v", got)
	}
	if !testFlag.From(seen) {
		t.Error("flag not set")
	}
	if got := testName.From(seen); got != "x" {
		t.Errorf("an unset option reads %q, want its default", got)
	}
	if got := testTimeout.Usage(); got != "how long (duration, default 1m0s)" {
		t.Errorf("usage = %q", got)
	}
	if names := OptionsOf("options-test"); len(names) != 3 || names[0].OptionName() != "timeout" {
		t.Errorf("OptionsOf = %v", names)
	}
}

func TestRegisterRefusesARepeatedOption(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("no panic")
		}
	}()
	Register("options-dup", "", func(Config) (Provider, error) { return nil, nil }, testName, testName)
}
