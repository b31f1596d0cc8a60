package main

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// takeover makes p the holder with a new generation. The previous
// holder's streams end: its non-detached execs are killed, detached ones
// go on without it.
func (s *server) takeover(p *peer, f keeperproto.Frame) {
	var hello keeperproto.Hello
	if err := json.Unmarshal(f.Payload, &hello); err != nil || hello.Version != keeperproto.ChanVersion {
		_ = p.send(jsonFrame(keeperproto.ChanFailure, 0, f.Gen, keeperproto.Failure{Kind: keeperproto.KindInvalidRequest, Msg: fmt.Sprintf("hello: version %d, this keeper speaks %d", hello.Version, keeperproto.ChanVersion)}))
		return
	}
	sealer, err := helloSealer(hello)
	if err != nil {
		_ = p.send(jsonFrame(keeperproto.ChanFailure, 0, f.Gen, keeperproto.Failure{Kind: keeperproto.KindInvalidRequest, Msg: "hello: " + err.Error()}))
		return
	}
	s.mu.Lock()
	s.gen++
	gen := s.gen
	old, ended := s.holder, s.streams
	s.holder, s.streams = p, map[uint32]stream{}
	s.lastSeen.Store(time.Now().UnixNano())
	// Before any frame of gen can be sent: the Welcome below, and the
	// streams the holder opens once this returns.
	p.setSeal(gen, sealer)
	s.mu.Unlock()
	if hello.LeaseMS > 0 {
		go s.watchLease(p, gen, time.Duration(hello.LeaseMS)*time.Millisecond)
	}
	for _, st := range ended {
		st.end()
	}
	if old != nil {
		_ = old.send(jsonFrame(keeperproto.ChanFenced, 0, gen-1, keeperproto.Fenced{Generation: gen, Msg: "the channel was taken over"}))
		if old != p {
			old.close()
		}
	}
	_ = p.send(jsonFrame(keeperproto.ChanWelcome, 0, gen, keeperproto.Welcome{
		Version:    keeperproto.ChanVersion,
		Nonce:      hello.Nonce,
		Generation: gen,
		Features: []string{keeperproto.FeatureExec, keeperproto.FeatureDetach, keeperproto.FeatureTTY,
			keeperproto.FeatureUser, keeperproto.FeatureFiles, keeperproto.FeatureOOMCount,
			keeperproto.FeatureAttachStdin, keeperproto.FeatureFileStage, keeperproto.FeatureNet, keeperproto.FeatureSeal, keeperproto.FeatureShutdown},
		Window:    inputWindow,
		Protected: s.protected,
		Env:       s.env,
		Cwd:       s.cwd,
	}))
}

// helloSealer is the sealer of a Hello's key; nil when it sent none.
func helloSealer(hello keeperproto.Hello) (*keeperproto.Sealer, error) {
	if hello.SealKey == "" {
		return nil, nil
	}
	key, err := base64.StdEncoding.DecodeString(hello.SealKey)
	if err != nil {
		return nil, fmt.Errorf("seal_key: %w", err)
	}
	return keeperproto.NewSealer(key)
}

// watchLease ends a holder that went silent for its whole lease: on an
// attach stream the keeper never sees the holder's transport end, so
// silence is how it learns the holder died. Its streams end as if the
// transport had (non-detached execs are killed) and its generation is
// refused from then on; a Hello takes the channel over again.
func (s *server) watchLease(p *peer, gen uint64, lease time.Duration) {
	for {
		time.Sleep(lease / 4)
		s.mu.Lock()
		if s.gen != gen || s.holder != p {
			s.mu.Unlock()
			return
		}
		if time.Since(time.Unix(0, s.lastSeen.Load())) < lease {
			s.mu.Unlock()
			continue
		}
		ended := s.streams
		s.streams, s.holder = map[uint32]stream{}, nil
		s.mu.Unlock()
		fmt.Fprintf(os.Stderr, "keeper serve: the holder of generation %d said nothing for %v: its execs end\n", gen, lease)
		for _, st := range ended {
			st.end()
		}
		return
	}
}
