package providertest

import (
	"bytes"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// runSelfCheckFiles restates the file cases of inspect_ai's sandbox self
// check (its sandbox conformance suite) in resident's terms: a harness
// ported from inspect_ai relies on each of these behaving as there, through
// write_file and sandbox/read_file alone, with no exec cat to fake them.
// inspect_ai's read limit case has no counterpart: resident streams a file
// of any size and sets no read limit (README, "inspect_ai's self check").
func runSelfCheckFiles(t *testing.T, h Harness) {
	e := newEnv(t, h)
	fw, canWrite := e.p.(provider.FileWriter)
	files, canRead := e.p.(provider.SandboxFiles)
	caps := e.p.Info().Capabilities
	if !canWrite || !canRead || !caps.WriteFile || !caps.SandboxFiles {
		t.Skip("provider cannot both write and read a sandbox's files")
	}
	id := e.create(protocol.Spec{}, nil)
	write := func(t *testing.T, path string, data []byte) error {
		t.Helper()
		return fw.WriteFile(ctx(t), id, path, data, nil)
	}
	roundTrip := func(t *testing.T, path string, data []byte) {
		t.Helper()
		if err := write(t, path, data); err != nil {
			t.Fatalf("write %q: %v", path, err)
		}
		got, err := readSandboxFile(t, files, id, path)
		if err != nil {
			t.Fatalf("read %q: %v", path, err)
		}
		sameBytes(t, path, got, data)
	}
	// errorNames checks the reason and that the message names what failed,
	// as inspect_ai's cases ask of their exceptions.
	errorNames := func(t *testing.T, what string, err error, reason protocol.Reason, word string) {
		t.Helper()
		wantReason(t, what, err, reason)
		if !strings.Contains(err.Error(), word) {
			t.Fatalf("%s: message %q does not name %q", what, err, word)
		}
	}

	t.Run("text", func(t *testing.T) { roundTrip(t, "sc_text.file", []byte("great #content\nincluding newlines")) })
	t.Run("text_utf8", func(t *testing.T) { roundTrip(t, "sc_utf8.file", []byte("✨☽︎✨🌞︎︎✨🚀✨")) })
	t.Run("binary_invalid_utf8", func(t *testing.T) { roundTrip(t, "sc_binary.file", []byte{0xc3, 0x28}) })
	t.Run("large_binary", func(t *testing.T) { roundTrip(t, "sc_large.file", bytes.Repeat([]byte{0xc3}, 5_000_000)) })
	t.Run("absolute_path_with_directory", func(t *testing.T) {
		roundTrip(t, "/tmp/sc_abs_dir/test.file", []byte("absolutely in a directory"))
	})
	t.Run("relative_path_with_directory", func(t *testing.T) {
		roundTrip(t, "sc_rel_dir/test.file", []byte("relatively in a directory"))
	})
	t.Run("read_zero_length", func(t *testing.T) {
		e.sh(id, "/", "touch sc_zero.file")
		if got, err := readSandboxFile(t, files, id, "sc_zero.file"); err != nil || len(got) != 0 {
			t.Fatalf("zero-length read: %q, %v", got, err)
		}
	})
	t.Run("read_not_found", func(t *testing.T) {
		_, err := readSandboxFile(t, files, id, "nonexistent")
		errorNames(t, "read of a missing file", err, protocol.ReasonNoSuchFile, "nonexistent")
	})
	t.Run("read_nonsense_name", func(t *testing.T) {
		_, err := readSandboxFile(t, files, id, "https:/en.wikipedia.org/wiki/Bart%C5%82omiej_Kasprzykowski")
		errorNames(t, "read of a nonsense name", err, protocol.ReasonNoSuchFile, "wikipedia")
	})
	t.Run("read_not_allowed", func(t *testing.T) {
		if err := write(t, "sc_noread.file", []byte("inaccessible #content")); err != nil {
			t.Fatal(err)
		}
		e.sh(id, "/", "chmod a-r sc_noread.file")
		_, err := readSandboxFile(t, files, id, "sc_noread.file")
		if e.canDo(id, "cat sc_noread.file") {
			if err != nil {
				t.Fatalf("the sandbox's user may read it (root with its capabilities), and read_file said %v", err)
			}
			return
		}
		errorNames(t, "read of an unreadable file", err, protocol.ReasonPermissionDenied, "sc_noread.file")
	})
	t.Run("read_is_directory", func(t *testing.T) {
		_, err := readSandboxFile(t, files, id, "/etc")
		errorNames(t, "read of /etc", err, protocol.ReasonIsDirectory, "directory")
	})
	for _, kind := range []struct {
		name string
		data []byte
	}{{"text", []byte("to the moon")}, {"binary", []byte{0xc3, 0x28}}} {
		t.Run("write_"+kind.name+"_zero_length", func(t *testing.T) { roundTrip(t, "sc_zero_"+kind.name, nil) })
		t.Run("write_"+kind.name+"_name_with_space", func(t *testing.T) {
			roundTrip(t, "sc file with space."+kind.name, kind.data)
		})
		t.Run("write_"+kind.name+"_is_directory", func(t *testing.T) {
			dir := "/tmp/sc_is_dir_" + kind.name
			if err := write(t, dir+"/file", []byte("unused")); err != nil {
				t.Fatal(err)
			}
			errorNames(t, "write onto a directory", write(t, dir, kind.data), protocol.ReasonIsDirectory, "directory")
		})
		t.Run("write_"+kind.name+"_without_permissions", func(t *testing.T) {
			name := "sc_nowrite_" + kind.name
			if err := write(t, name, []byte("impervious #content")); err != nil {
				t.Fatal(err)
			}
			e.sh(id, "/", "chmod a-w "+name)
			err := write(t, name, kind.data)
			if e.canDo(id, ": >> "+name) {
				if err != nil {
					t.Fatalf("the sandbox's user may write it (root with its capabilities), and write_file said %v", err)
				}
				return
			}
			errorNames(t, "write over a read-only file", err, protocol.ReasonPermissionDenied, name)
		})
		t.Run("write_"+kind.name+"_exists", func(t *testing.T) {
			name := "sc_exists_" + kind.name
			roundTrip(t, name, []byte("mundane content"))
			roundTrip(t, name, kind.data)
		})
	}
}
