package resident

import (
	"encoding/base64"
	"net/url"
	"strings"
	"testing"

	"github.com/resident-dev/resident/protocol"

	"github.com/resident-dev/resident/hardening/leaktest"
)

// richCanary has every character the encodings treat specially: a slash and
// a space (URL), <>& (JSON's HTML escapes, URL), a quote and a backslash
// (JSON, Go quoting), a plus (query escaping).
const richCanary = `rich/Canary&7f3a<9c>21 e5+b8"q\d06`

// installCanary is a canary that is also a valid install id, so the owner
// tag value itself carries it into list_owned and read_owner results.
const installCanary = "Install-Canary-4e8b21d7"

// TestCanaryOnEverySurface plants two canaries (credential values) and
// drives every surface a byte can leave by: exec output in every encoding,
// provider errors (a URL with the token in its userinfo and query), a
// wrapped Go error, a panic value, result fields (tags, owner), store data
// and store errors, ids echoed in notifications, and debug logs. Each site
// must show the mask (so it was exercised) and no form of either canary.
func TestCanaryOnEverySurface(t *testing.T) {
	fake := newFake()
	fake.storeFiles["secret.txt"] = "key=" + richCanary + "\n"
	notifier := &Notifier{}
	h := startHost(t, fake, func(o *Options) { o.Notifier = notifier })
	h.call(protocol.MethodInitialize, map[string]any{"protocol_version": 1, "install_id": installCanary,
		"credentials": map[string]string{"token": richCanary, "install": installCanary}}, nil)
	box := newBox(t, h)
	// A provider notification (image pull progress) quoting the secret.
	notifier.Notify(protocol.NotifyPullProgress, protocol.PullProgress{Image: "registry.example/" + richCanary, Status: "pulling from https://bot:" + url.QueryEscape(richCanary) + "@registry.example"})

	// Exec output, stdout and stderr: every encoded form, one per line, as
	// a process would print them, once as one write and once per line.
	var lines []string
	for pad := range 3 {
		prefixed := []byte(strings.Repeat("x", pad) + richCanary)
		lines = append(lines, base64.StdEncoding.EncodeToString(prefixed), base64.RawURLEncoding.EncodeToString(prefixed))
	}
	for name, f := range leaktest.Forms(richCanary) {
		if !strings.HasPrefix(name, "base64") { // those are fragments, not whole encodings
			lines = append(lines, "<"+f+">")
		}
	}
	h.call(protocol.MethodSandboxExec, execParams(box, "out-one", "echo", strings.Join(lines, "\n")), nil)
	h.call(protocol.MethodSandboxExec, execParams(box, "out-many", append([]string{"bytes"}, lines...)...), nil)
	h.call(protocol.MethodSandboxExec, execParams(box, "err-one", "err", strings.Join(lines, "\n")), nil)
	for _, id := range []string{"out-one", "out-many"} {
		leaktest.Masked(t, "exec stdout "+id, h.output(id, "stdout"))
		leaktest.NoLeak(t, "exec stdout "+id, h.output(id, "stdout"), richCanary)
	}
	leaktest.Masked(t, "exec stderr", h.output("err-one", "stderr"))
	leaktest.NoLeak(t, "exec stderr", h.output("err-one", "stderr"), richCanary)

	sites := map[string]string{}
	// A provider error quoting a URL with the token in userinfo and query.
	leakyURL := (&url.URL{Scheme: "https", User: url.UserPassword("bot", richCanary), Host: "registry.example",
		Path: "/v2/" + richCanary, RawQuery: "token=" + url.QueryEscape(richCanary)}).String()
	sites["provider error with URL"] = h.callErr(protocol.MethodSandboxExec, execParams(box, "e-url", "fail", "not_found", "GET", leakyURL, "failed"), protocol.KindNotFound)
	// A wrapped Go error with no kind (it reaches the host as transient).
	sites["wrapped Go error"] = h.callErr(protocol.MethodSandboxExec, execParams(box, "e-wrap", "wrapped", "dial", richCanary), protocol.KindTransient)
	// A panic whose value quotes the secret: the resident turns it into an
	// internal error that includes the panic value.
	sites["panic message"] = h.callErr(protocol.MethodSandboxExec, execParams(box, "e-panic", "panic", "token", richCanary, "in", installCanary), protocol.KindInternal)
	// An exec id that is the secret: notifications and the conflict error echo it.
	running := h.send(protocol.MethodSandboxExec, execParams(box, richCanary, "sleep"))
	sites["exec_id conflict"] = h.callErr(protocol.MethodSandboxExec, execParams(box, richCanary, "echo"), protocol.KindConflict)
	h.call(protocol.MethodExecKill, map[string]any{"exec_id": richCanary}, nil)
	h.await(running)
	// Store: data, an error quoting the path, a stream id.
	var file protocol.ReadFileResult
	h.call(protocol.MethodStoreReadFile, map[string]any{"root": "v", "path": "secret.txt", "stream_id": "s-" + richCanary}, &file)
	if !file.Redacted {
		t.Error("read_file must say it redacted")
	}
	sites["store error"] = h.callErr(protocol.MethodStoreReadFile, map[string]any{"root": "v", "path": "dir/" + richCanary, "stream_id": "s2"}, protocol.KindNotFound)
	// Results: tags in list_owned, the owner in read_owner.
	var created protocol.CreateResult
	h.call(protocol.MethodSandboxCreate, map[string]any{"tags": map[string]string{"note": "see " + richCanary}}, &created)
	m := h.await(h.send(protocol.MethodSandboxList, nil))
	sites["list_owned result"] = string(m.Result)
	m = h.await(h.send(protocol.MethodSandboxOwner, map[string]any{"sandbox_id": created.SandboxID}))
	sites["read_owner result"] = string(m.Result)
	h.call(protocol.MethodShutdown, nil, nil)
	<-h.done
	h.done <- nil

	for site, text := range sites {
		leaktest.Masked(t, site, text)
		leaktest.NoLeak(t, site, text, richCanary, installCanary)
	}
	raw := h.rawOutput()
	leaktest.NoLeak(t, "stdout frames", leaktest.FramesView(t, raw), richCanary, installCanary)
	for _, n := range h.notifications(protocol.NotifyStoreData) {
		leaktest.Masked(t, "store/data", leaktest.FramesView(t, string(protocol.AppendFrame(nil, []byte(`{"params":`+string(n.Params)+`}`)))))
	}
	if notes := h.notifications(protocol.NotifyPullProgress); len(notes) != 1 {
		t.Errorf("%d pull_progress notifications", len(notes))
	} else {
		leaktest.Masked(t, "pull_progress notification", string(notes[0].Params))
		leaktest.NoLeak(t, "pull_progress notification", leaktest.FramesView(t, string(protocol.AppendFrame(nil, []byte(`{"params":`+string(notes[0].Params)+`}`)))), richCanary)
	}
	logs := h.logs.String()
	leaktest.NoLeak(t, "debug logs", leaktest.LinesView(t, logs), richCanary, installCanary)
	for _, want := range []string{"request panicked", "request served"} {
		if !strings.Contains(logs, want) {
			t.Errorf("debug logs lack %q: the log sites were not exercised", want)
		}
	}
	leaktest.Masked(t, "debug logs", logs)
}
