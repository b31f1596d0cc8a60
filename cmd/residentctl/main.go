// Command residentctl lets a person use resident without writing a host: it
// spawns a resident, runs one command through the client library, and
// exits. See `residentctl help` and the package doc of client.
//
//	residentctl run [spec flags] [--env K=V] [--timeout D] [-i] [-t] [--keep] [--pool N] -- CMD ARGS...
//	residentctl ls [--json]
//	residentctl exec [-i] [-t] ID [-d [--id EXEC_ID]] [--env K=V] [--user U] [-w DIR] [--timeout D] -- CMD ARGS...
//	residentctl attach ID EXEC_ID [--offset N] [-i]
//	residentctl execs ID [--json]
//	residentctl rm ID... | --all [-y]
//	residentctl cp LOCAL ID:PATH | ID:PATH LOCAL
//	residentctl volume ls|create|rm [NAME...]
//	residentctl ls-volume VOL [PATH] [--json]
//	residentctl cat VOL:PATH
//	residentctl snapshot ID NAME | snapshot ls [--json] | snapshot rm NAME...
//	residentctl build [-f DOCKERFILE] TAG DIR
//	residentctl providers
//
// The resident binary is --resident, else "resident" in the directory of
// residentctl's own executable, else "resident" on $PATH. The provider is
// local unless --provider says otherwise; the install id defaults to
// "residentctl-<user>", so ls shows what earlier runs by the same user kept.
//
// Exit codes: run and exec exit with the command's own exit code, 127 for a
// program that does not exist and 126 for one that cannot be executed (as a
// shell does), or 125 when residentctl or the resident failed, 130 when
// interrupted, and 141
// when the reader of their output went away.
//
// -t runs the command on a terminal the size of residentctl's own, which
// must be its stdin; with -i (-it) that terminal is in raw mode while the
// command runs, so every key, Ctrl-C included, goes to the command as a
// byte, and window size changes follow it. The terminal's mode is restored
// however residentctl ends, short of SIGKILL. The other commands exit 0, or
// 1 on failure; rm of a sandbox that is already gone is not a failure (it
// exits 0 and says nothing existed), as terminate is idempotent. A usage error is 2. Every failure prints its error kind and
// a one-line hint on stderr.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

// Exit codes of residentctl's own failures. run and exec otherwise exit with
// the command's exit code, so their failures use 125, as docker run does,
// to stay apart from any code the command could return.
const (
	exitFailure       = 1
	exitUsage         = 2
	exitRunFailure    = 125
	exitNotExecutable = 126 // as a shell: the program is there and cannot run
	exitNotFound      = 127 // as a shell: no such program
	exitInterrupted   = 130
	exitBrokenPipe    = 141 // 128 + SIGPIPE, as a shell reports it
)

// stdio is what a command reads and writes; main passes the process's own.
type stdio struct {
	in       io.Reader
	out, err io.Writer
}

type command struct {
	name, args, summary string
	run                 func(ctx context.Context, g *globals, io stdio, args []string) int
}

var commands = []command{
	{"run", "[--image IMG] [--env K=V]... [-v VOL:PATH[:ro]]... [--network N] [--read-only] [--memory MIB] [--cpus N] [--pids N] [--lifetime D] [--workdir DIR] [--user U] [--tag K=V]... [--timeout D] [-w DIR] [-i] [-t] [--keep] [--pool N] -- CMD ARGS...", "run a command in a new sandbox, stream its output, exit with its exit code (-it: on a terminal)", cmdRun},
	{"exec", "[-i] [-t] ID [--env K=V]... [--user U] [-w DIR] [--timeout D] [-d [--id EXEC_ID]] -- CMD ARGS...", "run a command in an existing sandbox (ID may be a unique prefix; -it: a shell on a terminal)", cmdExec},
	{"attach", "ID EXEC_ID [--offset N] [-i]", "follow a detached exec (exec -d) from where you choose; Ctrl-C detaches", cmdAttach},
	{"execs", "ID [--json]", "list a sandbox's detached execs", cmdExecs},
	{"ls", "[--json]", "list the sandboxes this install owns", cmdLs},
	{"rm", "ID... | --all [-y]", "terminate sandboxes (IDs may be unique prefixes; --all: every owned one, asking on a terminal)", cmdRm},
	{"cp", "LOCAL ID:PATH | ID:PATH LOCAL", "copy a file or directory into or out of a sandbox (- for stdin or stdout), with progress on a terminal", cmdCp},
	{"port", "ID PORT", "forward a port inside a sandbox to a loopback address, until Ctrl-C", cmdPort},
	{"volume", "ls [--json] | create NAME... | rm NAME...", "list, create or delete persistent volumes", cmdVolume},
	{"volumes", "[--json]", "list persistent volumes (volume ls)", cmdVolumes},
	{"ls-volume", "VOL [PATH] [--json]", "list a directory of a volume", cmdLsVolume},
	{"cat", "VOL:PATH", "print a file of a volume", cmdCat},
	{"snapshot", "ID NAME | ls [--json] | rm NAME...", "record a sandbox's files as a snapshot (spec.image snapshot:NAME), list or delete snapshots", cmdSnapshot},
	{"build", "[-f DOCKERFILE] TAG DIR", "build DIR as an image for spec.image build:TAG, streaming its progress", cmdBuild},
	{"providers", "", "list the providers the resident binary can load (for --provider)", cmdProviders},
}

func main() {
	// SIGHUP too: a closed terminal ends the command and restores the mode of
	// a -t terminal like any other interruption.
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	// A closed stdout (residentctl run ... | head) becomes EPIPE instead of
	// killing residentctl, so the command is killed and its sandbox removed.
	signal.Notify(make(chan os.Signal, 1), syscall.SIGPIPE)
	code := run(ctx, os.Args[1:], stdio{in: os.Stdin, out: os.Stdout, err: os.Stderr})
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, io stdio) int {
	g := &globals{}
	top := flag.NewFlagSet("residentctl", flag.ContinueOnError)
	top.SetOutput(io.err)
	g.register(top)
	top.Usage = func() {} // help goes to stdout, a usage error's to stderr: below
	if err := top.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(io.out)
			return 0
		}
		usage(io.err)
		return exitUsage
	}
	if top.NArg() == 0 {
		usage(io.err)
		return exitUsage
	}
	name, rest := top.Arg(0), top.Args()[1:]
	if name == "help" {
		usage(io.out)
		printProviders(g, io.out)
		return 0
	}
	for _, c := range commands {
		if c.name == name {
			return c.run(ctx, g, io, rest)
		}
	}
	fmt.Fprintf(io.err, "residentctl: unknown command %q\n", name)
	usage(io.err)
	return exitUsage
}

// usageExit ends a command whose flags did not parse: -h and --help print
// its flags on stdout (help asked for is output), a bad flag on stderr
// after the flag package's own word on it.
func usageExit(fs *flag.FlagSet, stdio stdio, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprintf(stdio.out, "usage of %s:\n", fs.Name())
		fs.SetOutput(stdio.out)
		fs.PrintDefaults()
		return 0
	}
	fs.PrintDefaults()
	return exitUsage
}

func usage(w io.Writer) {
	fmt.Fprintf(w, "usage: residentctl [global flags] COMMAND [flags] [args]\n\ncommands:\n")
	for _, c := range commands {
		fmt.Fprintf(w, "  %-10s %s\n             %s\n", c.name, c.summary, c.args)
	}
	fmt.Fprintf(w, "\nrun and exec exit with the command's exit code (125: residentctl or the resident failed).\n")
	fmt.Fprintf(w, "\nglobal flags (also accepted after the command):\n")
	fs := flag.NewFlagSet("", flag.ContinueOnError)
	(&globals{}).register(fs)
	fs.SetOutput(w)
	fs.PrintDefaults()
}
