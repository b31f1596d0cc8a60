package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

const prSetNoNewPrivs = 38

// serve is the keeper as the sandbox's init and its one channel: every
// exec and file operation of the sandbox is a stream of frames on stdin
// and stdout (-stdio: Docker's or a pod's attach stream) or on each
// connection to the listening socket it inherits (-listen-fd N: the local
// provider). It protects itself first (its own uid, non-dumpable, only the
// capabilities to kill, switch users and drop capabilities), so no process
// of the sandbox can signal, trace or open it; as PID 1 of the sandbox's
// pid namespace the kernel also drops every signal the sandbox sends it
// that it has no handler for. It reaps every orphan. With -lifetime it
// exits after that many seconds, which stops the sandbox.
func serve(args []string) int {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	stdio := fs.Bool("stdio", false, "serve the channel on stdin and stdout")
	listenFD := fs.Int("listen-fd", -1, "serve each connection to this inherited listening socket")
	lifetime := fs.Int64("lifetime", 0, "exit after this many seconds (0: never)")
	escapeLF := fs.Bool("escape-lf", false, "with -stdio: write stdout with no newline byte (keeperproto.LFEncoder), for a runtime that logs it line by line")
	if err := fs.Parse(args); err != nil || *stdio == (*listenFD >= 0) || *lifetime < 0 || (*escapeLF && !*stdio) {
		fmt.Fprintln(os.Stderr, "usage: keeper serve -stdio [-escape-lf] | -listen-fd N [-lifetime SECONDS]")
		return 2
	}
	// One P, and every thread made below, before the channel serves:
	// see gate.go.
	runtime.GOMAXPROCS(1)
	// Catch and drop what docker-init or the engine forwards (the engine
	// stops the sandbox with SIGKILL); SIGCHLD has the reaper's handler.
	// Caught, not ignored: an ignored signal stays ignored across execve,
	// and every command would start with SIGPIPE or SIGTERM ignored.
	dropped := make(chan os.Signal, 8)
	signal.Notify(dropped, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGQUIT, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGPIPE)
	go func() {
		for range dropped {
		}
	}()
	if _, _, e := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); e != 0 && os.Getpid() != 1 {
		fmt.Fprintln(os.Stderr, "keeper serve: PR_SET_CHILD_SUBREAPER:", e)
		return 1
	}
	// No exec may ever gain a privilege at execve (setuid files, file
	// capabilities): inherited by everything the keeper starts.
	if err := allThreads(syscall.SYS_PRCTL, prSetNoNewPrivs, 1, 0); err != nil {
		fmt.Fprintln(os.Stderr, "keeper serve: PR_SET_NO_NEW_PRIVS:", err)
		return 1
	}
	oom := openOOMScore() // while its /proc files are still its own
	id, protected, err := protect(capKill, capSetuid, capSetgid, capSetpcap)
	if err != nil {
		fmt.Fprintln(os.Stderr, "keeper serve:", err)
		return 1
	}
	if !protected {
		fmt.Fprintln(os.Stderr, "keeper serve: not root with the sandbox's capabilities: running unprotected")
	}
	self, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "keeper serve: own binary:", err)
		return 1
	}
	s := newServer(id, protected, self) // its reaper's Notify: before the count
	s.reaper.oom = oom
	s.env = welcomeEnv(os.Environ())
	s.cwd, _ = os.Getwd()
	reserveThreads(serveThreads)
	if *lifetime > 0 {
		time.AfterFunc(time.Duration(*lifetime)*time.Second, func() { os.Exit(0) })
	}
	if *stdio {
		var stdout io.Writer = os.Stdout
		if *escapeLF {
			stdout = keeperproto.NewLFEncoder(os.Stdout)
		}
		out := newPeer(stdout, nil)
		s.readFrom(out, os.Stdin)
		// The stream ended: nobody can reach this keeper again (Docker keeps
		// stdin open across attaches, so this is a transport that is gone for
		// good). The sandbox lives on until its lifetime or its stop.
		select {}
	}
	f := os.NewFile(uintptr(*listenFD), "listen")
	l, err := net.FileListener(f)
	if err != nil {
		fmt.Fprintln(os.Stderr, "keeper serve: listen fd:", err)
		return 1
	}
	f.Close()
	for {
		c, err := l.Accept()
		if err != nil {
			fmt.Fprintln(os.Stderr, "keeper serve: accept:", err)
			return 1
		}
		go func() {
			p := newPeer(c, c)
			s.readFrom(p, c)
			c.Close()
		}()
	}
}

// peer is one transport's writing side. Every frame goes out in one Write,
// under the lock, so frames never interleave on our side.
//
// A holder whose Hello carried a seal key gets every frame of its
// generation sealed (keeperproto.Sealer; setSeal at the takeover). Once a
// peer has sealed, a frame of any generation but the current one is
// dropped, never written in plaintext: it was for a holder that is gone
// (taken over, or silent past its lease), whose key may be forgotten.
// Fenced and a refused Hello's Failure (stream 0) stay plaintext: they say
// nothing of the sandbox, and a fenced holder must still read them.
type peer struct {
	w      io.Writer
	closer io.Closer
	mu     sync.Mutex
	buf    []byte

	gen        uint64              // the generation setSeal last named
	sealer     *keeperproto.Sealer // its key's, nil for a holder that did not ask
	everSealed bool                // some holder of this peer sealed
}

func newPeer(w io.Writer, c io.Closer) *peer { return &peer{w: w, closer: c} }

// setSeal makes gen the peer's current generation, sealed with sealer
// (nil: plaintext, as a holder that sent no key asked).
func (p *peer) setSeal(gen uint64, sealer *keeperproto.Sealer) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gen, p.sealer = gen, sealer
	if sealer != nil {
		p.everSealed = true
	}
}

func (p *peer) send(f keeperproto.Frame) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	var err error
	plain := f.Stream == 0 && (f.Type == keeperproto.ChanFenced || f.Type == keeperproto.ChanFailure)
	switch {
	case plain:
		p.buf, err = keeperproto.AppendFrame(p.buf[:0], f)
	case f.Gen == p.gen && p.sealer != nil:
		p.buf, err = p.sealer.AppendFrame(p.buf[:0], f)
	case p.everSealed && f.Gen != p.gen:
		return nil // for a holder that is gone; see peer
	default:
		p.buf, err = keeperproto.AppendFrame(p.buf[:0], f)
	}
	if err != nil {
		return err
	}
	_, err = p.w.Write(p.buf)
	if cap(p.buf) > 4*keeperproto.MaxPayload {
		p.buf = nil
	}
	return err
}

// close ends a socket peer (a fenced holder); stdio stays open.
func (p *peer) close() {
	if p.closer != nil {
		_ = p.closer.Close()
	}
}

// welcomeEnv is env as Welcome tells it: all of it, or nothing when it
// would not fit (see keeperproto.Welcome.Env).
func welcomeEnv(env []string) []string {
	if b, err := json.Marshal(env); err != nil || len(b) > keeperproto.MaxWelcomeEnv {
		return nil
	}
	return env
}
