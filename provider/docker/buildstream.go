package docker

import (
	"context"
	"io"
	"regexp"
	"strings"

	"github.com/resident-dev/resident/protocol"
)

// stepLine is how the classic builder announces a step: "Step 2/3 : RUN x".
var stepLine = regexp.MustCompile(`^Step (\d+/\d+) : (.*)$`)

// followBuild reads the builder's messages to the end, reporting each line
// with the step it belongs to. The builder's error ends the build as
// invalid_request naming the step that failed (the host's Dockerfile or
// context is what has to change); a broken stream is transient.
func followBuild(ctx context.Context, body io.Reader, progress func(step, line string)) error {
	step, instruction := "", ""
	for m, err := range jsonMessages(body) {
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return protocol.Errorf(protocol.KindTransient, "image build: the engine's output broke off: %v", err)
		}
		if m.Error != nil {
			if step == "" {
				return protocol.Errorf(protocol.KindInvalidRequest, "image build failed before its first step: %s", m.Error.Message)
			}
			return protocol.Errorf(protocol.KindInvalidRequest, "image build failed at step %s (%s): %s", step, instruction, m.Error.Message)
		}
		for _, line := range strings.Split(m.Stream, "\n") {
			line = strings.TrimRight(line, "\r")
			if line == "" {
				continue
			}
			if s := stepLine.FindStringSubmatch(line); s != nil {
				step, instruction = s[1], s[2]
			}
			progress(step, line)
		}
	}
	return ctx.Err()
}
