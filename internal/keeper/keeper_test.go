package keeper

import (
	"errors"
	"io"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
)

// The run's command line is what the keeper's flag parsing expects: flags
// before "--", the command after it untouched.
func TestRunCommand(t *testing.T) {
	got := Run{Token: "abcdef0123", Cwd: "/work", Stdin: true, Exclusive: true, Deadline: time.Now().Add(-time.Second)}.Command([]string{"sh", "-c", "-token"})
	want := []string{keeperproto.Path, keeperproto.CmdRun, "-token", "abcdef0123", "-cwd", "/work", "-stdin", "-exclusive", "-deadline-ms", "1", "--", "sh", "-c", "-token"}
	if !slices.Equal(got, want) {
		t.Fatalf("Command = %q\nwant      %q", got, want)
	}
	if got := (Run{Token: "t"}).Command([]string{"true"}); !slices.Equal(got, []string{keeperproto.Path, keeperproto.CmdRun, "-token", "t", "--", "true"}) {
		t.Fatalf("plain run: %q", got)
	}
	if _, ok := keeperproto.Mark(NewToken()); !ok {
		t.Fatal("NewToken makes no mark")
	}
}

// Stdin goes as data frames no larger than the keeper reads, then EOF; a
// kill that cannot get the connection gives up instead of queueing.
func TestStdinFramesAndABusyKill(t *testing.T) {
	ours, theirs := net.Pipe()
	defer ours.Close()
	defer theirs.Close()
	ctrl := NewControl(ours)
	stdin := NewStdinWriter(ctrl)
	big := make([]byte, keeperproto.MaxFramePayload+10)
	wrote := make(chan struct{})
	go func() {
		defer close(wrote)
		_, _ = stdin.Write(big)
		_ = stdin.Close()
	}()
	var sizes []int
	for {
		typ, payload, err := keeperproto.ReadFrame(theirs)
		if err != nil {
			t.Fatal(err)
		}
		if typ == keeperproto.FrameEOF {
			break
		}
		if typ != keeperproto.FrameData {
			t.Fatalf("frame %q", typ)
		}
		sizes = append(sizes, len(payload))
	}
	if !slices.Equal(sizes, []int{keeperproto.MaxFramePayload, 10}) {
		t.Fatalf("data frames of %v bytes", sizes)
	}
	<-wrote
	if _, err := stdin.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) {
		t.Fatalf("write after close: %v", err)
	}

	// Nobody reads theirs: a second writer blocks inside its frame.
	blocked := make(chan error, 1)
	go func() { blocked <- NewStdinWriter(ctrl).Close() }()
	for !busy(ctrl) {
		time.Sleep(time.Millisecond)
	}
	if err := ctrl.Kill(10 * time.Millisecond); !errors.Is(err, ErrKillBusy) {
		t.Fatalf("kill behind a blocked write: %v", err)
	}
	theirs.Close()
	<-blocked
}

func busy(c *Control) bool { return len(c.sem) == 1 }
