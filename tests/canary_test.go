package tests

import (
	"encoding/base64"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/protocol"

	"github.com/resident-dev/resident/hardening/leaktest"
)

// Canaries for the real binary. richSecret has every character an encoding
// treats specially; installSecret is also a valid install id (so the owner
// tag value carries it into results); envSecret is in the resident's own
// environment under the local provider's secret prefix.
const (
	richSecret    = `live/Canary&5d1e<7b>90 c4+a2"q\e8`
	installSecret = "Live-Install-Canary-3c9d"
	envSecret     = "env-canary-0b7e4f19d2"
)

// printForms is an argv that prints every whole encoding of secret, one per
// line: raw, base64 at three alignments (both alphabets, padded or not),
// URL, JSON and Go escaped.
func printForms(secret string) []string {
	argv := []string{"printf", `%s\n`}
	for pad := range 3 {
		prefixed := []byte(strings.Repeat("x", pad) + secret)
		argv = append(argv, base64.StdEncoding.EncodeToString(prefixed), base64.RawURLEncoding.EncodeToString(prefixed))
	}
	for name, f := range leaktest.Forms(secret) {
		if !strings.HasPrefix(name, "base64") {
			argv = append(argv, "<"+f+">")
		}
	}
	return argv
}

// TestCanaryNeverLeavesTheBinary plants canaries in the credentials, the
// install id and the resident's environment, runs the real binary at debug
// level and drives every surface: exec stdout and stderr in every encoding,
// provider errors quoting a URL with the token in userinfo and query, an
// error echoing a Go-quoted id, list_owned and read_owner results, store
// data and store errors. Each site shows the mask; no form of a canary is
// in any byte of stdout or stderr.
func TestCanaryNeverLeavesTheBinary(t *testing.T) {
	h := SpawnLive(t, LiveOpts{Args: []string{"--log-level", "debug"}, Env: []string{"RESIDENT_SECRET_CANARY=" + envSecret}, KeepRaw: true, KeepOut: true})
	h.Init(installSecret, map[string]any{"credentials": map[string]string{"token": richSecret, "install": installSecret}})
	box := h.Create(map[string]any{"volumes": []map[string]any{{"name": "work", "path": "work"}}})

	for _, secret := range []string{richSecret, envSecret} {
		execID := "forms-" + strconv.Itoa(len(secret))
		h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": execID, "argv": printForms(secret)}, nil)
		leaktest.Masked(t, "exec stdout", string(h.Out(execID, "stdout")))
	}
	h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "stderr",
		"argv": []string{"sh", "-c", `printf '%s\n' "$0" >&2`, richSecret}}, nil)
	leaktest.Masked(t, "exec stderr", string(h.Out("stderr", "stderr")))

	sites := map[string]string{}
	leakyURL := (&url.URL{Scheme: "https", User: url.UserPassword("bot", richSecret), Host: "registry.example",
		Path: "/v2/x", RawQuery: "token=" + url.QueryEscape(richSecret)}).String()
	sites["provider error quoting a URL"] = h.CallErr(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "url",
		"argv": []string{"/nonexistent/" + leakyURL}}, protocol.KindNotFound)
	sites["cwd error"] = h.CallErr(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "cwd",
		"argv": []string{"true"}, "cwd": "/missing/" + richSecret}, protocol.KindNotFound)
	// An exec id is taken while its exec runs: the conflict error echoes it.
	running := h.Send(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": richSecret, "argv": []string{"sleep", "60"}})
	sites["exec_id conflict"] = h.CallErr(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": richSecret, "argv": []string{"true"}}, protocol.KindConflict)
	h.Call(protocol.MethodExecKill, map[string]any{"exec_id": richSecret}, nil)
	h.Await(running)

	// Store: a file holding the secrets, errors quoting a path.
	h.Call(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": box, "path": "/work/secret.txt",
		"data": []byte("token=" + richSecret + "\nenv=" + envSecret + "\n")}, nil)
	var file protocol.ReadFileResult
	h.Call(protocol.MethodStoreReadFile, map[string]any{"root": "work", "path": "secret.txt", "stream_id": "s1"}, &file)
	if !file.Redacted {
		t.Error("read_file must say it redacted")
	}
	sites["store read_file error"] = h.CallErr(protocol.MethodStoreReadFile, map[string]any{"root": "work", "path": "dir/" + richSecret, "stream_id": "s2"}, protocol.KindNotFound)
	sites["store list_dir error"] = h.CallErr(protocol.MethodStoreListDir, map[string]any{"root": "work", "path": envSecret}, protocol.KindNotFound)

	// Results carrying the canaries: a tag value, the owner.
	h.Call(protocol.MethodSandboxCreate, map[string]any{"tags": map[string]string{"note": "see " + richSecret}}, nil)
	sites["list_owned result"] = string(h.Await(h.Send(protocol.MethodSandboxList, nil)).Result)
	sites["read_owner result"] = string(h.Await(h.Send(protocol.MethodSandboxOwner, map[string]any{"sandbox_id": box})).Result)
	h.Call(protocol.MethodShutdown, nil, nil)
	h.CloseAndWait(20 * time.Second)

	for site, text := range sites {
		leaktest.Masked(t, site, text)
		leaktest.NoLeak(t, site, text, richSecret, installSecret, envSecret)
	}
	raw := h.RawStdout()
	view := leaktest.FramesView(t, raw)
	leaktest.NoLeak(t, "stdout", view, richSecret, installSecret, envSecret)
	if !strings.Contains(view, "token="+hardening.Mask+"\nenv="+hardening.Mask) {
		t.Error("store/data was not exercised: the decoded file is not in the frames, masked")
	}
	logs := h.stderr.String()
	leaktest.NoLeak(t, "stderr logs (debug)", leaktest.LinesView(t, logs), richSecret, installSecret, envSecret)
	leaktest.Masked(t, "stderr logs (debug)", logs)
	if !strings.Contains(logs, `"level":"debug"`) {
		t.Error("no debug line in the logs: the debug level was not exercised")
	}
}
