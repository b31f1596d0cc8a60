package keeperproto

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"slices"
)

// Sealing (FeatureSeal): a holder whose transport logs what the keeper
// writes (a pod's stdout is the node's pod log) sends a fresh random key
// in Hello.SealKey, on the direction that is not logged (the container's
// stdin); the keeper then writes every frame for that holder's
// generation as a ChanSealed frame, AES-256-GCM under that key, so the
// log and every other reader of the stream hold ciphertext only:
//
//	outer header  type ChanSealed, stream 0, the generation, length, CRC
//	payload       counter [8] big-endian, then the AEAD's output of
//	              inner type [1], inner stream [4], inner payload
//	nonce         "k2c\x00" then the counter: the keeper's frames only;
//	              the counter starts at 0 and counts every sealed frame
//	aad           the outer header's first 20 bytes (magic, type, pad,
//	              stream, generation)
//
// A key is one holder's (one Hello's): a reopen or a takeover sends a
// new one, so no (key, nonce) pair is ever used twice. The reader
// (Opener) refuses a frame that does not authenticate and one whose
// counter is not above the last it took (a replay, a reordering).
// Fenced frames and a refused Hello's Failure, both on stream 0, stay
// plaintext: they carry no payload of the sandbox, and a holder that was
// fenced no longer has a key the keeper would use.
const (
	ChanSealed byte = 'Z' // k→c a sealed frame (see above)

	// SealKeySize is the key's length (AES-256).
	SealKeySize = 32
	// SealOverhead is what sealing adds to a frame's payload: the
	// counter, the inner type and stream, the AEAD's tag.
	SealOverhead = 8 + 5 + 16
	// MaxSealedPayload bounds a ChanSealed frame's payload: a whole
	// frame of MaxPayload, sealed.
	MaxSealedPayload = MaxPayload + SealOverhead
)

// FeatureSeal: the keeper seals its frames when the Hello carries a key.
const FeatureSeal = "seal"

var sealNoncePrefix = [4]byte{'k', '2', 'c', 0}

// Errors of Opener.Open.
var (
	// ErrSealForged is a sealed frame that does not authenticate: it was
	// tampered with, or sealed with another key.
	ErrSealForged = errors.New("keeperproto: sealed frame does not authenticate")
	// ErrSealReplayed is a sealed frame whose counter is not above the
	// last one taken.
	ErrSealReplayed = errors.New("keeperproto: sealed frame replayed or out of order")
)

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != SealKeySize {
		return nil, fmt.Errorf("keeperproto: seal key of %d bytes, want %d", len(key), SealKeySize)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Sealer seals the frames of one generation (keeper side). It is not
// safe for concurrent use (the keeper's peer holds its lock).
type Sealer struct {
	aead    cipher.AEAD
	counter uint64
}

// NewSealer seals with key (SealKeySize bytes).
func NewSealer(key []byte) (*Sealer, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	return &Sealer{aead: aead}, nil
}

// AppendFrame appends f, sealed, as one ChanSealed frame of f's
// generation.
func (s *Sealer) AppendFrame(buf []byte, f Frame) ([]byte, error) {
	if len(f.Payload) > MaxPayload {
		return buf, fmt.Errorf("keeperproto: frame payload %d > %d", len(f.Payload), MaxPayload)
	}
	start := len(buf)
	buf = append(buf, magic[:]...)
	buf = append(buf, ChanSealed, 0, 0, 0)
	buf = binary.BigEndian.AppendUint32(buf, 0)
	buf = binary.BigEndian.AppendUint64(buf, f.Gen)
	buf = binary.BigEndian.AppendUint32(buf, uint32(len(f.Payload)+SealOverhead))
	buf = append(buf, 0, 0, 0, 0) // CRC, below
	n := s.counter
	s.counter++
	buf = binary.BigEndian.AppendUint64(buf, n)
	pt := len(buf)
	buf = append(buf, f.Type)
	buf = binary.BigEndian.AppendUint32(buf, f.Stream)
	buf = append(buf, f.Payload...)
	buf = slices.Grow(buf, s.aead.Overhead()) // the tag: sealed in place
	nonce := sealNonce(n)
	aad := buf[start : start+20]
	sealed := s.aead.Seal(buf[pt:pt], nonce[:], buf[pt:], aad)
	buf = buf[:pt+len(sealed)]
	crc := crc32.Update(crc32.ChecksumIEEE(buf[start:start+24]), crc32.IEEETable, buf[start+HeaderSize:])
	binary.BigEndian.PutUint32(buf[start+24:start+28], crc)
	return buf, nil
}

func sealNonce(n uint64) [12]byte {
	var nonce [12]byte
	copy(nonce[:4], sealNoncePrefix[:])
	binary.BigEndian.PutUint64(nonce[4:], n)
	return nonce
}

// Opener opens the sealed frames of one generation (holder side). It is
// not safe for concurrent use (a Conn's read loop owns it).
type Opener struct {
	aead cipher.AEAD
	next uint64 // the lowest counter still acceptable
}

// NewOpener opens what a Sealer of key sealed.
func NewOpener(key []byte) (*Opener, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	return &Opener{aead: aead}, nil
}

// Open returns the frame f (a ChanSealed frame) carries, or
// ErrSealForged or ErrSealReplayed. It decrypts in place: f's payload is
// the returned frame's, and may be handed back with ReleasePayload.
func (o *Opener) Open(f Frame) (Frame, error) {
	if f.Type != ChanSealed || f.Stream != 0 || len(f.Payload) < SealOverhead {
		return Frame{}, ErrSealForged
	}
	n := binary.BigEndian.Uint64(f.Payload[:8])
	if n < o.next {
		return Frame{}, ErrSealReplayed
	}
	var aad [20]byte
	copy(aad[:4], magic[:])
	aad[4] = ChanSealed
	binary.BigEndian.PutUint64(aad[12:], f.Gen)
	nonce := sealNonce(n)
	ct := f.Payload[8:]
	pt, err := o.aead.Open(ct[:0], nonce[:], ct, aad[:])
	if err != nil {
		return Frame{}, ErrSealForged
	}
	o.next = n + 1
	inner := Frame{Type: pt[0], Stream: binary.BigEndian.Uint32(pt[1:5]), Gen: f.Gen}
	// Move the payload to the buffer's start, so a pooled buffer goes
	// back to the pool whole (ReleasePayload checks its capacity).
	inner.Payload = f.Payload[:copy(f.Payload, pt[5:])]
	return inner, nil
}
