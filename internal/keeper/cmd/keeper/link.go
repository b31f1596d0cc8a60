package main

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// inputWindow is the credit the keeper grants each stream's input.
const inputWindow = 256 << 10

// link addresses one stream of one holder.
type link struct {
	s   *server
	p   *peer
	gen uint64
	id  uint32
}

func (l link) send(typ byte, payload []byte) error {
	return l.p.send(keeperproto.Frame{Type: typ, Stream: l.id, Gen: l.gen, Payload: payload})
}

func (l link) sendJSON(typ byte, v any) error {
	return l.p.send(jsonFrame(typ, l.id, l.gen, v))
}

func (l link) fail(kind, reason, msg string) {
	_ = l.sendJSON(keeperproto.ChanFailure, keeperproto.Failure{Kind: kind, Reason: reason, Msg: msg})
}

func (l link) result(r keeperproto.Result) { _ = l.sendJSON(keeperproto.ChanResult, r) }

func (l link) decode(payload []byte, v any) bool {
	if err := json.Unmarshal(payload, v); err != nil {
		l.fail(keeperproto.KindInvalidRequest, "", "bad request: "+err.Error())
		return false
	}
	return true
}

func jsonFrame(typ byte, stream uint32, gen uint64, v any) keeperproto.Frame {
	payload, _ := json.Marshal(v)
	return keeperproto.Frame{Type: typ, Stream: stream, Gen: gen, Payload: payload}
}

func newExecID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
