package channel

import (
	"io"
	"os/exec"
	"strconv"
	"testing"
)

// benchConn opens a stdio keeper for a benchmark.
func benchConn(b *testing.B) *Conn {
	k := startStdioB(b)
	c, err := Open(b.Context(), pipeRW{Reader: k.out, WriteCloser: k.stdin, rc: k.out}, Options{})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	return c
}

func startStdioB(b *testing.B) *stdioKeeper {
	cmd := exec.Command(keeperBin, "serve", "-stdio")
	stdin, _ := cmd.StdinPipe()
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return &stdioKeeper{cmd: cmd, stdin: stdin, out: out}
}

func drain(b *testing.B, e *Exec) ExitStatus {
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(io.Discard, e.Stderr())
		close(done)
	}()
	if _, err := io.Copy(io.Discard, e.Stdout()); err != nil {
		b.Fatal(err)
	}
	<-done
	st, err := e.Wait()
	if err != nil {
		b.Fatal(err)
	}
	return st
}

// BenchmarkExecTrue: one exec of true, start to exit status, over the
// channel through a pipe, beside os/exec of the same command in this
// process (the floor: one fork and exec).
func BenchmarkExecTrue(b *testing.B) {
	truePath, err := exec.LookPath("true")
	if err != nil {
		b.Skip(err)
	}
	b.Run("channel", func(b *testing.B) {
		c := benchConn(b)
		for b.Loop() {
			e, err := c.Exec(b.Context(), ExecSpec{Argv: []string{truePath}})
			if err != nil {
				b.Fatal(err)
			}
			if st := drain(b, e); st.Code != 0 {
				b.Fatal(st)
			}
		}
	})
	b.Run("os_exec", func(b *testing.B) {
		for b.Loop() {
			if err := exec.Command(truePath).Run(); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkStdoutThroughput: one exec's stdout over the channel, beside
// the same bytes through a plain pipe from the same command.
func BenchmarkStdoutThroughput(b *testing.B) {
	const size = 64 << 20
	argv := []string{"head", "-c", strconv.Itoa(size), "/dev/zero"}
	b.Run("channel", func(b *testing.B) {
		c := benchConn(b)
		b.SetBytes(size)
		for b.Loop() {
			e, err := c.Exec(b.Context(), ExecSpec{Argv: argv, Env: testEnv})
			if err != nil {
				b.Fatal(err)
			}
			drain(b, e)
		}
	})
	b.Run("pipe", func(b *testing.B) {
		b.SetBytes(size)
		for b.Loop() {
			cmd := exec.Command(argv[0], argv[1:]...)
			out, err := cmd.StdoutPipe()
			if err != nil {
				b.Fatal(err)
			}
			if err := cmd.Start(); err != nil {
				b.Fatal(err)
			}
			if _, err := io.Copy(io.Discard, out); err != nil {
				b.Fatal(err)
			}
			if err := cmd.Wait(); err != nil {
				b.Fatal(err)
			}
		}
	})
}
