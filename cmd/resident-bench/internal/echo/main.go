// Command echo is resident-bench's process-hop floor: a child that reads
// framed requests on stdin and answers each at once with an empty result,
// with the resident's own frame codec and nothing else. The time a host
// waits for it is what any out-of-process resident costs before it does
// any work: two pipe hops and the wake-ups on both sides.
package main

import (
	"encoding/json"
	"os"

	"github.com/resident-dev/resident/protocol"
)

func main() {
	in := protocol.NewFrameReader(os.Stdin, 1<<20)
	var out []byte
	for {
		body, err := in.Read()
		if err != nil {
			return
		}
		var req struct {
			ID json.RawMessage `json:"id"`
		}
		if json.Unmarshal(body, &req) != nil || req.ID == nil {
			continue
		}
		out = protocol.AppendFrame(out[:0], append(append([]byte(`{"jsonrpc":"2.0","id":`), req.ID...), `,"result":[]}`...))
		if _, err := os.Stdout.Write(out); err != nil {
			return
		}
	}
}
