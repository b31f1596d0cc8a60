package resident

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// The name rules, as loops rather than regexps: a counted repetition like
// {0,255} compiles into a program hundreds of states long, which cost the
// resident milliseconds of start-up and runs on every env name of every
// exec. validate_test.go holds them to the regexps they replaced.

// validInstallID: ^[A-Za-z0-9._-]{1,64}$ (also store volume names).
func validInstallID(s string) bool { return nameOf(s, 64, "._-", false) }

// validTagPrefix: ^[A-Za-z0-9][A-Za-z0-9._-]{0,31}$
func validTagPrefix(s string) bool { return nameOf(s, 32, "._-", true) }

// validTagKey: ^[A-Za-z0-9][A-Za-z0-9._/-]{0,127}$
func validTagKey(s string) bool { return nameOf(s, 128, "._/-", true) }

// validEnvName: ^[A-Za-z_][A-Za-z0-9_]{0,255}$
func validEnvName(s string) bool {
	return nameOf(s, 256, "_", false) && (s[0] == '_' || !isDigit(s[0]))
}

// nameOf reports whether s is 1 to maxLen ASCII letters, digits and bytes
// of extra, starting with a letter or digit when alnumFirst.
func nameOf(s string, maxLen int, extra string, alnumFirst bool) bool {
	if len(s) == 0 || len(s) > maxLen {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isAlnum(c) || (strings.IndexByte(extra, c) >= 0 && !(alnumFirst && i == 0)) {
			continue
		}
		return false
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isAlnum(c byte) bool {
	return isDigit(c) || ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z')
}

const (
	maxTags        = 64
	maxTagValueLen = 256
	maxEnvVars     = 1024
	maxEnvValueLen = 128 << 10
	maxArgs        = 65536
	maxIDLen       = 256
	// maxPathBytes is Linux's PATH_MAX: no kernel call takes a longer path,
	// and a longer one reached a provider as an internal error (an argv
	// too long for the store helper) instead of the host's mistake.
	maxPathBytes = 4096
)

func invalid(format string, args ...any) error {
	return protocol.Errorf(protocol.KindInvalidRequest, format, args...)
}

func checkInstallID(id string) error {
	if !validInstallID(id) {
		return invalid("install_id must be 1-64 characters of A-Za-z0-9._-")
	}
	return nil
}

func checkTagPrefix(prefix string) error {
	if !validTagPrefix(prefix) {
		return invalid("tag_prefix must be 1-32 characters of A-Za-z0-9._- starting with a letter or digit")
	}
	return nil
}

// checkTags refuses every owner-shaped key and the resident's namespace
// (provider.CheckHostTags): ownership is the one tag a host can never set,
// under its own prefix or anyone else's.
func checkTags(tags map[string]string) error {
	if len(tags) > maxTags {
		return invalid("at most %d tags", maxTags)
	}
	if err := provider.CheckHostTags(tags); err != nil {
		return err
	}
	for k, v := range tags {
		if !validTagKey(k) {
			return invalid("tag key %q must be 1-128 characters of A-Za-z0-9._/- starting with a letter or digit", k)
		}
		if len(v) > maxTagValueLen || !printable(v) {
			return invalid("tag %q: value must be at most %d printable characters", k, maxTagValueLen)
		}
	}
	return nil
}

// checkEnv refuses names the shell could not hold and any name the provider
// treats as secret: secrets never enter a sandbox.
func checkEnv(field string, env map[string]string, secretPrefixes []string) error {
	if len(env) > maxEnvVars {
		return invalid("%s: at most %d variables", field, maxEnvVars)
	}
	for k, v := range env {
		if !validEnvName(k) {
			return invalid("%s: %q is not a valid variable name", field, k)
		}
		for _, prefix := range secretPrefixes {
			if strings.HasPrefix(strings.ToUpper(k), strings.ToUpper(prefix)) {
				return invalid("%s: %q has the secret prefix %q; secrets are never passed into sandboxes", field, k, prefix)
			}
		}
		if len(v) > maxEnvValueLen || strings.ContainsRune(v, 0) {
			return invalid("%s: %q must be at most %d bytes with no NUL", field, k, maxEnvValueLen)
		}
	}
	return nil
}

func checkArgv(argv []string) error {
	if len(argv) == 0 || argv[0] == "" {
		return invalid("argv must be a non-empty array whose first element names the program")
	}
	if len(argv) > maxArgs {
		return invalid("argv: at most %d arguments", maxArgs)
	}
	for i, a := range argv {
		if strings.ContainsRune(a, 0) {
			return invalid("argv[%d] contains a NUL byte", i)
		}
	}
	return nil
}

// checkID bounds a host-chosen id (sandbox, exec, stream) before it is used
// as a key or echoed.
func checkID(field, id string) error {
	if id == "" {
		return invalid("%s is required", field)
	}
	if len(id) > maxIDLen || !printable(id) {
		return invalid("%s must be at most %d printable characters", field, maxIDLen)
	}
	return nil
}

// checkPath is the one bound on every path a host sends (store/*,
// write_file, exec cwd, spec.workdir, spec.volumes[].path): at most
// maxPathBytes, printable. What the path may name is the provider's rule.
func checkPath(field, p string) error {
	if len(p) > maxPathBytes {
		return invalid("%s is %d bytes; paths are at most %d bytes (limits.max_path_bytes)", field, len(p), maxPathBytes)
	}
	if !printable(p) {
		return invalid("%s must be printable", field)
	}
	return nil
}

func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return false
		}
	}
	return true
}

func checkSpec(spec *protocol.Spec, secretPrefixes []string) error {
	if err := checkEnv("spec.env", spec.Env, secretPrefixes); err != nil {
		return err
	}
	switch {
	case spec.CPUs < 0:
		return invalid("spec.cpus must not be negative")
	case spec.MemoryMB < 0:
		return invalid("spec.memory_mb must not be negative")
	case spec.LifetimeS < 0:
		return invalid("spec.lifetime_s must not be negative")
	case spec.PidsLimit < 0:
		return invalid("spec.pids_limit must not be negative")
	}
	if err := checkPath("spec.workdir", spec.Workdir); err != nil {
		return err
	}
	if err := checkUser("spec.user", spec.User); err != nil {
		return err
	}
	seen := map[string]bool{}
	for i, v := range spec.Volumes {
		if !validInstallID(v.Name) || v.Name == "." || v.Name == ".." {
			return invalid("spec.volumes[%d].name must be 1-64 characters of A-Za-z0-9._-", i)
		}
		if v.Path == "" {
			return invalid("spec.volumes[%d].path is required", i)
		}
		if err := checkPath(fmt.Sprintf("spec.volumes[%d].path", i), v.Path); err != nil {
			return err
		}
		if seen[v.Path] {
			return invalid("spec.volumes[%d].path %q is mounted twice", i, v.Path)
		}
		seen[v.Path] = true
	}
	return nil
}

// checkVolumeName: the names store volumes may have.
func checkVolumeName(name string) error {
	if !validInstallID(name) || name == "." || name == ".." {
		return invalid("name must be 1-64 characters of A-Za-z0-9._-, not . or ..")
	}
	return nil
}

// checkUser: a name, a uid or uid:gid, printable and short; whether it
// exists is the sandbox's /etc/passwd's to say.
func checkUser(field, user string) error {
	if user == "" {
		return nil
	}
	if len(user) > 64 || !printable(user) || strings.ContainsAny(user, " /") || strings.Count(user, ":") > 1 {
		return invalid("%s must be a user name, a uid or uid:gid (at most 64 printable characters)", field)
	}
	return nil
}
