package resident

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// buildFake builds by reading the context to EOF and echoing each of its
// lines as progress: the resident's part (the stream, the notifications,
// scrubbing, refusals) is what is tested here; Docker's is in providertest.
type buildFake struct{ *fakeProvider }

var _ provider.ImageBuilder = buildFake{}

func (f buildFake) Info() provider.Info {
	info := f.fakeProvider.Info()
	info.Capabilities.ImageBuild = true
	return info
}

func (f buildFake) BuildImage(_ context.Context, _ provider.Owner, req provider.BuildRequest) (protocol.ImageBuildResult, error) {
	data, err := io.ReadAll(req.Context)
	if err != nil {
		return protocol.ImageBuildResult{}, err
	}
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		req.Progress(string(rune('1'+i))+"/2", line)
	}
	sum := sha256.Sum256(data)
	return protocol.ImageBuildResult{ImageID: "sha256:" + hex.EncodeToString(sum[:]), Image: protocol.BuildPrefix + req.Tag}, nil
}

// The context streams in through upload/data under context_stream_id, the
// builder's lines come back as image/build_progress with secrets masked,
// and a provider without builds is refused by the capability's name.
func TestImageBuildStreamsItsContext(t *testing.T) {
	const secret = "build-secret-9f8e7d6c"
	h := startHost(t, buildFake{newFake()})
	if !h.initialize(map[string]any{"credentials": map[string]string{"t": secret}}).Capabilities.ImageBuild {
		t.Fatal("capabilities.image_build is false with an ImageBuilder")
	}
	build := h.send(protocol.MethodImageBuild, map[string]any{"context_stream_id": "ctx", "tag": "t1"})
	h.call(protocol.MethodUploadData, map[string]any{"stream_id": "ctx", "data": []byte("FROM base\n")}, nil)
	h.call(protocol.MethodUploadData, map[string]any{"stream_id": "ctx", "data": []byte("RUN echo " + secret + "\n"), "eof": true}, nil)
	msg := h.await(build)
	var res protocol.ImageBuildResult
	if msg.Error != nil || json.Unmarshal(msg.Result, &res) != nil || res.Image != "build:t1" {
		t.Fatalf("image/build answered %s %v", msg.Result, msg.Error)
	}
	notes := h.notifications(protocol.NotifyBuildProgress)
	if len(notes) != 2 {
		t.Fatalf("%d progress notifications, want 2", len(notes))
	}
	var second protocol.BuildProgress
	_ = json.Unmarshal(notes[1].Params, &second)
	if second.Tag != "t1" || second.Step != "2/2" || strings.Contains(second.Line, secret) || !strings.Contains(second.Line, hardening.Mask) {
		t.Fatalf("progress %+v: want step 2/2 with the secret masked", second)
	}
	h.callErr(protocol.MethodImageBuild, map[string]any{"context_stream_id": "c2", "tag": "a:b"}, protocol.KindInvalidRequest)
	h.callErr(protocol.MethodImageBuild, map[string]any{"context_stream_id": "c3", "tag": "t", "dockerfile": "../x"}, protocol.KindInvalidRequest)

	plain := startHost(t, newFake())
	if plain.initialize(nil).Capabilities.ImageBuild {
		t.Fatal("capabilities.image_build without an ImageBuilder")
	}
	for _, c := range []struct {
		method string
		params any
	}{
		{protocol.MethodImageBuild, map[string]any{"context_stream_id": "s", "tag": "t"}},
		{protocol.MethodSandboxCreate, map[string]any{"spec": map[string]any{"image": "build:t"}}},
	} {
		if msg := plain.callErr(c.method, c.params, protocol.KindInvalidRequest); !strings.Contains(msg, "capabilities.image_build") {
			t.Fatalf("%s: the refusal does not name the capability: %s", c.method, msg)
		}
	}
}
