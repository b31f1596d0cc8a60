package resident

import "sync"

// dataBuffers recycles the buffers the data of upload/data frames is
// decoded into. A 256 KiB upload/data costs a 256 KiB buffer for its data
// and a 350 KB one for its frame; made new for each frame, they were a
// quarter of the resident's CPU in an upload as garbage collection. The
// frame's body is reused by the read loop itself (frameStream.spare); the
// data lives until its handler has written it into the upload's pipe,
// which copies it before Write returns, and then comes back here.
//
// Only upload/data gives its buffer back: exec/stdin and write_file's data
// go to writers of providers, which must not keep it either (io.Writer)
// but are not all ours to vouch for; theirs is garbage as before.
var dataBuffers dataPool

// maxPooledData is the largest buffer kept: what the Go client and
// residentctl send (client.UploadChunkBytes) and some room, not a frame of
// max_frame_bytes that one host sent once.
const maxPooledData = 1 << 20

type dataPool struct{ pool sync.Pool }

// get is a recycled buffer, or nil (ParseDataEnvelopeInto then makes one).
func (p *dataPool) get() []byte {
	if b, ok := p.pool.Get().(*[]byte); ok {
		return *b
	}
	return nil
}

// put keeps b for a later frame; nil and oversized buffers are dropped.
func (p *dataPool) put(b []byte) {
	if b == nil || cap(b) > maxPooledData {
		return
	}
	b = b[:0]
	p.pool.Put(&b)
}
