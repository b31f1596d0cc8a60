// Package testhost holds what the module's test hosts share: the tests that
// drive a resident over its stdio in resident/, client/ and tests/.
package testhost

import (
	"bytes"
	"encoding/json"
	"sync"

	"github.com/resident-dev/resident/protocol"
)

// Message is one JSON-RPC message as a host reads it off the wire: a
// response (ID with Result or Error) or a notification (Method, Params).
type Message struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64              `json:"code"`
		Message string             `json:"message"`
		Data    protocol.ErrorData `json:"data"`
	} `json:"error"`
}

// Kind is the error kind of a response, "" for a result.
func (m Message) Kind() protocol.Kind {
	if m.Error == nil {
		return ""
	}
	return m.Error.Data.Kind
}

// SyncBuffer is a bytes.Buffer one goroutine writes (a child's stderr, a
// logger) while another reads it.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
