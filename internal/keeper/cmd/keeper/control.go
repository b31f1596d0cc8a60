package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// childStdin is /dev/null unless the exec asked for stdin; then it is a
// pipe fed from the data frames.
func childStdin(want bool) (*os.File, *os.File, error) {
	if !want {
		f, err := os.Open(os.DevNull)
		return f, nil, err
	}
	return os.Pipe()
}

// control reads frames from the provider. It never blocks on the child for
// long: data goes through a small queue to a separate writer, so a kill frame
// behind data is still read unless the child stops reading its stdin AND the
// queue fills (then the provider's "keeper kill" exec is the way in). A raw
// EOF means the provider's connection is gone: nobody can collect output or
// stop the exec any more, so the tree is killed. So does a frame that is
// not one (unknown type, oversized, cut short): the stream is no longer the
// provider's, so nothing more it seems to say can be trusted, and the exec
// ends at once, as killed, saying why on stderr.
func control(in io.Reader, feed *os.File, k *treeKiller) {
	queue := make(chan []byte, 64)
	var wg sync.WaitGroup
	if feed != nil {
		wg.Go(func() {
			broken := false
			for b := range queue {
				if !broken {
					_, err := feed.Write(b)
					broken = err != nil
				}
			}
			feed.Close()
		})
	}
	closeFeed := sync.OnceFunc(func() { close(queue) })
	defer closeFeed()
	for {
		typ, payload, err := keeperproto.ReadFrame(in)
		if err != nil {
			if err != io.EOF && !errors.Is(err, os.ErrClosed) {
				fmt.Fprintf(os.Stderr, "resident: keeper: corrupted control frame (%v): exec killed\n", err)
			}
			k.trigger()
			return
		}
		switch typ {
		case keeperproto.FrameData:
			if feed != nil {
				queue <- payload
			}
		case keeperproto.FrameEOF:
			closeFeed()
		case keeperproto.FrameKill:
			k.trigger()
		default:
			fmt.Fprintf(os.Stderr, "resident: keeper: unexpected control frame type %#x: exec killed\n", typ)
			k.trigger()
			return
		}
	}
}
