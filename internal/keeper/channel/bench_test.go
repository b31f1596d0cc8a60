package channel

import (
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
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
		k := startStdioB(b)
		c, err := Open(b.Context(), pipeRW{Reader: k.out, WriteCloser: k.stdin, rc: k.out}, Options{})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { c.Close() })
		b.SetBytes(size)
		cpu0, keeper0 := cpuTime(), childCPU(k.cmd.Process.Pid)
		for b.Loop() {
			e, err := c.Exec(b.Context(), ExecSpec{Argv: argv, Env: testEnv})
			if err != nil {
				b.Fatal(err)
			}
			drain(b, e)
		}
		gb := float64(size) * float64(b.N) / 1e9
		b.ReportMetric((cpuTime()-cpu0).Seconds()/gb, "client-cpu-s/GB")
		b.ReportMetric((childCPU(k.cmd.Process.Pid)-keeper0).Seconds()/gb, "keeper-cpu-s/GB")
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

// BenchmarkAttachStreamThroughput: one exec's stdout over the channel
// carried by a Docker sandbox's attach stream, beside raw: the same bytes
// written by a container's own PID 1 (a shell that answers each line with
// that many zero bytes) and read from its attach stream, demultiplexed as
// the channel's transport is. Same engine, same stream, same demultiplexer:
// the ratio is what the keeper and the channel cost.
//
// channel_fixed is the channel with its window held at DefaultWindow
// (MaxWindow = Window), as it was before windows grew.
func BenchmarkAttachStreamThroughput(b *testing.B) {
	const size = 64 << 20
	for _, tc := range []struct {
		name string
		o    Options
	}{{"channel", Options{}}, {"channel_fixed", Options{MaxWindow: DefaultWindow}}} {
		b.Run(tc.name, func(b *testing.B) { benchAttachChannel(b, size, tc.o) })
	}
	b.Run("raw", func(b *testing.B) {
		s := startContainer(b, []string{"sh", "-c", "while read n; do head -c $n /dev/zero; done"}, 0, 256)
		rw := s.attach(b)
		s.start(b)
		b.Cleanup(func() { rw.Close() })
		b.SetBytes(size)
		cpu0 := cpuTime()
		for b.Loop() {
			if _, err := io.WriteString(rw, strconv.Itoa(size)+"\n"); err != nil {
				b.Fatal(err)
			}
			if _, err := io.CopyN(io.Discard, rw, size); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric((cpuTime()-cpu0).Seconds()/(float64(size)*float64(b.N)/1e9), "host-cpu-s/GB")
	})
}

// cpuTime is this process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// childCPU is a child process's user and system CPU time so far, from
// /proc (utime and stime, in clock ticks of 1/100 s).
func childCPU(pid int) time.Duration {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(data)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return 0
	}
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// benchAttachChannel is one exec's size bytes of stdout over a sandbox's
// channel on its attach stream, per iteration.
func benchAttachChannel(b *testing.B, size int, o Options) {
	s := startSandboxPids(b, 0, 256)
	rw := s.attach(b)
	s.start(b)
	c, err := Open(b.Context(), rw, o)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	argv := []string{"head", "-c", strconv.Itoa(size), "/dev/zero"}
	b.SetBytes(int64(size))
	cpu0 := cpuTime()
	for b.Loop() {
		e, err := c.Exec(b.Context(), ExecSpec{Argv: argv, Env: testEnv})
		if err != nil {
			b.Fatal(err)
		}
		drain(b, e)
	}
	b.ReportMetric((cpuTime()-cpu0).Seconds()/(float64(size)*float64(b.N)/1e9), "host-cpu-s/GB")
}
