package main

import (
	"bytes"
	"errors"
	"io"
	"strings"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// maxEnvBytes bounds the environment a run takes from its frames, as the
// kernel bounds a command line and environment.
const maxEnvBytes = 1 << 20

// readEnvFrames reads FrameEnv frames up to the empty one that ends them:
// NAME=VALUE pairs, each NUL-terminated. It reads exactly those bytes, so
// the control frames that follow are left for control().
func readEnvFrames(in io.Reader) ([]string, error) {
	var env []string
	total := 0
	for {
		typ, payload, err := keeperproto.ReadFrame(in)
		if err != nil {
			return nil, err
		}
		if typ != keeperproto.FrameEnv {
			return nil, errors.New("expected an env frame")
		}
		if len(payload) == 0 {
			return env, nil
		}
		if total += len(payload); total > maxEnvBytes {
			return nil, errors.New("environment too large")
		}
		for _, kv := range bytes.Split(bytes.TrimSuffix(payload, []byte{0}), []byte{0}) {
			if !bytes.Contains(kv, []byte("=")) || bytes.HasPrefix(kv, []byte("=")) {
				return nil, errors.New("env pair without a name")
			}
			env = append(env, string(kv))
		}
	}
}

// mergeEnv is base with extra laid over it: a name in both takes extra's
// value (the last of extra's), once, where base had it.
func mergeEnv(base, extra []string) []string {
	value := map[string]string{}
	var order []string
	for _, kv := range append(append([]string{}, base...), extra...) {
		k, v, _ := strings.Cut(kv, "=")
		if _, seen := value[k]; !seen {
			order = append(order, k)
		}
		value[k] = v
	}
	out := make([]string, 0, len(order))
	for _, k := range order {
		out = append(out, k+"="+value[k])
	}
	return out
}
