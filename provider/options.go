package provider

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Options are the operator's settings for one provider (the resident's
// repeated --provider-opt key=value), as text. A provider reads them through
// the Option values it declared when it registered; Open refuses a key the
// provider did not declare and a value its type does not parse, before the
// factory runs, so a factory never sees a bad one.
type Options struct {
	values map[string]string
}

// NewOptions holds values (key to text) as a provider's options.
func NewOptions(values map[string]string) Options {
	return Options{values: maps.Clone(values)}
}

// Keys lists the keys set, sorted.
func (o Options) Keys() []string { return slices.Sorted(maps.Keys(o.values)) }

func (o Options) lookup(key string) (string, bool) {
	v, ok := o.values[key]
	return v, ok
}

// OptionSpec is one option a provider declares: what Register keeps and
// `resident --help` lists. Option[T] is the only implementation.
type OptionSpec interface {
	OptionName() string
	// Usage is the option's one-line doc, with its type and default.
	Usage() string
	check(text string) error
}

// Option declares a typed option with its default, and reads it. T is the
// option's type: string, bool (strconv.ParseBool) or time.Duration
// (time.ParseDuration, not negative).
type Option[T string | bool | time.Duration] struct {
	Name    string
	Default T
	Doc     string // one line, for resident --help
}

// From is the option's value in opts, or its default when it is not set.
// (A value that does not parse never reaches a factory through Open; a
// caller that builds Options itself gets the default for one.)
func (o Option[T]) From(opts Options) T {
	text, ok := opts.lookup(o.Name)
	if !ok {
		return o.Default
	}
	v, err := parseOption[T](text)
	if err != nil {
		return o.Default
	}
	return v
}

// OptionName is the key the option is set by.
func (o Option[T]) OptionName() string { return o.Name }

// Usage is "doc (TYPE, default X)".
func (o Option[T]) Usage() string {
	return fmt.Sprintf("%s (%s, default %v)", o.Doc, typeName[T](), o.Default)
}

func (o Option[T]) check(text string) error {
	_, err := parseOption[T](text)
	return err
}

func typeName[T string | bool | time.Duration]() string {
	var zero T
	switch any(zero).(type) {
	case bool:
		return "bool"
	case time.Duration:
		return "duration"
	}
	return "string"
}

func parseOption[T string | bool | time.Duration](text string) (T, error) {
	var out T
	switch p := any(&out).(type) {
	case *string:
		*p = text
	case *bool:
		b, err := strconv.ParseBool(text)
		if err != nil {
			return out, fmt.Errorf("%q is not a bool (true or false)", text)
		}
		*p = b
	case *time.Duration:
		d, err := time.ParseDuration(text)
		if err != nil || d < 0 {
			return out, fmt.Errorf("%q is not a duration such as 30s or 2m", text)
		}
		*p = d
	}
	return out, nil
}

// checkOptions refuses a key provider name did not declare, naming the key
// and the ones it has, and a value its option's type does not parse.
func checkOptions(name string, declared []OptionSpec, opts Options) error {
	byName := map[string]OptionSpec{}
	for _, spec := range declared {
		byName[spec.OptionName()] = spec
	}
	for _, key := range opts.Keys() {
		spec, ok := byName[key]
		if !ok {
			if len(declared) == 0 {
				return fmt.Errorf("unknown option %q: provider %s takes no options", key, name)
			}
			return fmt.Errorf("unknown option %q (provider %s takes: %s)", key, name, strings.Join(slices.Sorted(maps.Keys(byName)), ", "))
		}
		text, _ := opts.lookup(key)
		if err := spec.check(text); err != nil {
			return fmt.Errorf("option %s: %w", key, err)
		}
	}
	return nil
}
