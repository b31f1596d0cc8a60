package docker_test

import (
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/tests"

	"github.com/resident-dev/resident/hardening/leaktest"
)

// dockerSecret is lower case so it fits in an image reference; dockerPass
// is a registry password inside the docker_auth_config credential.
const (
	dockerSecret = "dkr-canary-6a0f3e8d51"
	dockerPass   = "reg-pass-canary-92c7d1"
)

// Docker error texts quote what the host sent: an image name holding the
// canary (pulled from a registry that refuses, and malformed), a network
// and a volume name the engine refuses, a store root it does not have.
// Every one of those texts reaches the host and the logs masked.
func TestDockerErrorTextsAreScrubbed(t *testing.T) {
	image := NeedDocker(t)
	h := SpawnDocker(t, tests.LiveOpts{Args: []string{"--log-level", "debug"}, KeepRaw: true}, "")
	authCfg, _ := json.Marshal(map[string]any{"auths": map[string]any{"127.0.0.1:9": map[string]string{
		"auth": base64.StdEncoding.EncodeToString([]byte("bot:" + dockerPass))}}})
	h.Init(tests.UniqueInstall("dcanary"), map[string]any{"credentials": map[string]string{"token": dockerSecret, "docker_auth_config": string(authCfg)}})

	create := func(spec map[string]any) string {
		t.Helper()
		m := h.Await(h.Send(protocol.MethodSandboxCreate, map[string]any{"spec": spec}))
		if m.Error == nil {
			var res protocol.CreateResult
			_ = json.Unmarshal(m.Result, &res)
			h.SendQuiet(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": res.SandboxID})
			t.Fatalf("create %v succeeded", spec)
		}
		t.Logf("create %v: %s: %s", spec, m.Error.Data.Kind, m.Error.Message)
		return m.Error.Message
	}
	start := time.Now()
	sites := map[string]string{
		"pull from a refusing registry": create(map[string]any{"image": "127.0.0.1:9/" + dockerSecret + ":v1"}),
		"pull with a password":          create(map[string]any{"image": "127.0.0.1:9/x/" + dockerPass}),
		"malformed image reference":     create(map[string]any{"image": "Bad_Ref/" + dockerSecret + ":::"}),
		"unknown network":               create(map[string]any{"image": image, "network": dockerSecret}),
		"volume name Docker refuses":    create(map[string]any{"image": image, "volumes": []map[string]any{{"name": "_" + dockerSecret, "path": "/v"}}}),
		"missing store volume":          h.CallErr(protocol.MethodStoreListDir, map[string]any{"root": dockerSecret}, protocol.KindNotFound),
		"missing sandbox":               h.CallErr(protocol.MethodSandboxExec, map[string]any{"sandbox_id": dockerSecret, "exec_id": "x", "argv": []string{"true"}}, protocol.KindNotFound),
	}
	t.Logf("error texts gathered in %s", time.Since(start).Round(time.Millisecond))
	h.Call(protocol.MethodShutdown, nil, nil)
	h.CloseAndWait(20 * time.Second)
	for site, text := range sites {
		leaktest.Masked(t, site, text)
		leaktest.NoLeak(t, site, text, dockerSecret, dockerPass)
	}
	leaktest.NoLeak(t, "stdout", leaktest.FramesView(t, h.RawStdout()), dockerSecret, dockerPass)
	logs := h.Stderr()
	leaktest.NoLeak(t, "stderr logs (debug)", leaktest.LinesView(t, logs), dockerSecret, dockerPass)
	leaktest.Masked(t, "stderr logs", logs)
	if !strings.Contains(logs, `"level":"debug"`) {
		t.Error("no debug line: the debug level was not exercised")
	}
}
