package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// helperReply reads a helper's one JSON line.
func helperReply(r *bufio.Reader) fileReply {
	line, err := r.ReadBytes('\n')
	var reply fileReply
	if err != nil || json.Unmarshal(line, &reply) != nil || (reply.Result == nil && reply.Failure == nil) {
		return fileReply{Failure: &keeperproto.Failure{Kind: keeperproto.KindInternal, Msg: "keeper helper: no answer"}}
	}
	return reply
}

// fileStream is a WriteFile or ReadFile in flight: its input (upload
// bytes, credit), and how to cancel it when the holder goes.
type fileStream struct {
	l      link
	in     *inputQueue // WriteFile
	out    *credit     // ReadFile
	pid    int
	cancel sync.Once
}

func (st *fileStream) input(f keeperproto.Frame) {
	switch f.Type {
	case keeperproto.ChanStdin:
		if st.in != nil {
			st.in.push(st.l, f.Payload)
		}
	case keeperproto.ChanStdinEOF:
		if st.in != nil {
			st.in.closeInput()
		}
	case keeperproto.ChanCredit:
		if st.out != nil {
			st.out.grant(creditFrom(f.Payload))
		}
	case keeperproto.ChanRelease:
		st.end()
	}
}

// end cancels: an upload leaves nothing behind, a read stops. A write
// helper is not killed: its input ends uncommitted, so it removes its
// temporary file and exits by itself (a killed one could not clean up); it
// is killed only if it has not gone within writeAbandonGrace.
func (st *fileStream) end() {
	st.cancel.Do(func() {
		if st.out != nil {
			st.out.close()
		}
		if st.in != nil {
			st.in.stop()
			pid := st.pid
			time.AfterFunc(writeAbandonGrace, func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
			return
		}
		_ = syscall.Kill(st.pid, syscall.SIGKILL)
	})
}

// writeAbandonGrace bounds how long an abandoned write helper may take to
// remove its temporary file.
const writeAbandonGrace = 10 * time.Second

// writeFile runs the write helper as the user; the stream's input is the
// file, its EOF the commit.
func (s *server) writeFile(l link, req keeperproto.WriteFile) stream {
	args := []string{cmdWrite}
	if req.Staged {
		args = append(args, "-staged")
	}
	if req.Mode != nil {
		args = append(args, "-mode", strconv.FormatUint(uint64(*req.Mode), 8))
	}
	args = append(args, "--", req.Path)
	stdinR, stdinW, err1 := os.Pipe()
	commitR, commitW, err2 := os.Pipe()
	outR, outW, err3 := os.Pipe()
	if err := firstErr(err1, err2, err3); err != nil {
		closeAll(stdinR, stdinW, commitR, commitW, outR, outW)
		go l.fail(keeperproto.KindInternal, "", "write_file: "+err.Error())
		return nil
	}
	pid, exited, fail := s.helper(req.User, nil, args, []*os.File{stdinR, outW, os.Stderr, commitR})
	closeAll(stdinR, outW, commitR)
	if fail != nil {
		closeAll(stdinW, commitW, outR)
		go l.sendJSON(keeperproto.ChanFailure, fail)
		return nil
	}
	st := &fileStream{l: l, pid: pid}
	st.in = newInputQueue(stdinW, true, func(complete bool) {
		if complete {
			_, _ = commitW.Write([]byte{'c'})
		}
		commitW.Close()
	})
	go func() {
		br := bufio.NewReader(gatedReader{outR})
		reply := helperReply(br)
		if req.Staged && reply.Result != nil {
			// The staging directory, at once: the holder fills it, then
			// commits (the input) or releases.
			sendReply(l, reply)
			reply = helperReply(br)
		}
		outR.Close()
		<-exited
		st.in.stop()
		s.closeStream(l, st)
		sendReply(l, reply)
	}()
	return st
}

// readFile runs the read helper as the user and streams its bytes within
// the client's credit, then End.
func (s *server) readFile(l link, req keeperproto.ReadFile) stream {
	outR, outW, err := os.Pipe()
	if err != nil {
		go l.fail(keeperproto.KindInternal, "", "read_file: "+err.Error())
		return nil
	}
	null, _ := os.Open(os.DevNull)
	args := []string{cmdRead, "--", req.Path}
	if req.StatOnly {
		args = []string{cmdRead, "-stat", "--", req.Path} // Result, then End: no bytes
	}
	pid, exited, fail := s.helper(req.User, nil, args, []*os.File{null, outW, os.Stderr})
	closeAll(null, outW)
	if fail != nil {
		outR.Close()
		go l.sendJSON(keeperproto.ChanFailure, fail)
		return nil
	}
	window := req.Window
	if window <= 0 || window > 16<<20 {
		window = 256 << 10
	}
	st := &fileStream{l: l, pid: pid, out: newCredit(window)}
	go func() {
		defer s.closeStream(l, st)
		br := bufio.NewReaderSize(gatedReader{outR}, keeperproto.MaxPayload)
		reply := helperReply(br)
		if reply.Failure != nil {
			outR.Close()
			<-exited
			sendReply(l, reply)
			return
		}
		sendReply(l, reply)
		want := reply.Result.Size
		sent, buf := int64(0), make([]byte, keeperproto.MaxPayload)
		for {
			n := st.out.take(len(buf))
			if n == 0 {
				break // cancelled
			}
			got, err := io.ReadFull(br, buf[:n])
			st.out.giveBack(n - got)
			if got > 0 {
				_ = l.send(keeperproto.ChanStdout, buf[:got])
				sent += int64(got)
			}
			if err != nil {
				break
			}
		}
		outR.Close()
		ws := <-exited
		if ws.Exited() && ws.ExitStatus() == 0 {
			_ = l.send(keeperproto.ChanEnd, nil)
			return
		}
		_ = l.sendJSON(keeperproto.ChanEnd, keeperproto.Failure{Kind: keeperproto.KindInternal,
			Msg: "read_file: the file could not be read to its end (" + strconv.FormatInt(sent, 10) + " of " + strconv.FormatInt(want, 10) + " bytes)"})
	}()
	return st
}

// listDir runs the list helper as the user.
func (s *server) listDir(l link, req keeperproto.ListDir) {
	spawnMu.Lock() // a start, one at a time (gate.go)
	outR, exited, fail := s.startList(req)
	spawnMu.Unlock()
	if fail != nil {
		_ = l.sendJSON(keeperproto.ChanFailure, fail)
		return
	}
	reply := helperReply(bufio.NewReader(gatedReader{outR}))
	outR.Close()
	<-exited
	sendReply(l, reply)
}

func (s *server) startList(req keeperproto.ListDir) (*os.File, <-chan syscall.WaitStatus, *keeperproto.Failure) {
	outR, outW, err := os.Pipe()
	if err != nil {
		return nil, nil, &keeperproto.Failure{Kind: keeperproto.KindInternal, Msg: "list_dir: " + err.Error()}
	}
	null, _ := os.Open(os.DevNull)
	limit := req.Limit
	if limit <= 0 {
		limit = 1000
	}
	_, exited, fail := s.helper(req.User, nil, []string{cmdList, "-limit", strconv.Itoa(limit), "--", req.Path}, []*os.File{null, outW, os.Stderr})
	closeAll(null, outW)
	if fail != nil {
		outR.Close()
		return nil, nil, fail
	}
	return outR, exited, nil
}

func sendReply(l link, r fileReply) {
	if r.Failure != nil {
		_ = l.sendJSON(keeperproto.ChanFailure, r.Failure)
		return
	}
	l.result(*r.Result)
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func closeAll(files ...*os.File) {
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
}
