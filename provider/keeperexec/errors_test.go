package keeperexec

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/resident-dev/resident/internal/keeper/channel"
	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// Every way the keeper refuses, and a broken channel, map to one kind and
// reason, the same for every provider.
func TestStartError(t *testing.T) {
	other := errors.New("something else")
	for name, c := range map[string]struct {
		err    error
		kind   protocol.Kind
		reason protocol.Reason
		field  string
	}{
		"missing program": {&channel.StartError{Reason: channel.ReasonNoSuchFile, Kind: "not_found", Field: "argv", Msg: "x"}, protocol.KindNotFound, protocol.ReasonNoSuchFile, "argv"},
		"not executable":  {&channel.StartError{Reason: channel.ReasonPermissionDenied, Kind: "invalid_request", Field: "argv"}, protocol.KindInvalidRequest, protocol.ReasonPermissionDenied, "argv"},
		"id in use":       {&channel.StartError{Reason: channel.ReasonExists, Kind: "conflict", Field: "id"}, protocol.KindConflict, protocol.ReasonExists, "id"},
		"unknown user":    {&channel.StartError{Kind: "invalid_request", Field: "user", Msg: "no user x"}, protocol.KindInvalidRequest, "", ""},
		"at pids limit":   {&channel.StartError{Kind: "transient", Msg: "at its pids limit"}, protocol.KindTransient, "", ""},
		"unknown kind":    {&channel.StartError{Kind: "no-such-kind"}, protocol.KindInvalidRequest, "", ""},
		"broken":          {fmt.Errorf("%w: EOF", channel.ErrBroken), protocol.KindTransient, "", ""},
		"fenced":          {channel.ErrFenced, protocol.KindTransient, "", ""},
	} {
		err := StartError(c.err)
		reason, field := protocol.ReasonOf(err)
		if protocol.KindOf(err) != c.kind || reason != c.reason || field != c.field {
			t.Errorf("%s: %v is %s/%s/%s; want %s/%s/%s", name, err, protocol.KindOf(err), reason, field, c.kind, c.reason, c.field)
		}
	}
	if StartError(nil) != nil {
		t.Error("StartError(nil) is not nil")
	}
	if err := StartError(other); err != other {
		t.Errorf("an error of neither kind changed: %v", err)
	}
}

func TestDetachError(t *testing.T) {
	for name, c := range map[string]struct {
		err  error
		kind protocol.Kind
	}{
		"unknown exec": {fmt.Errorf("%w: x", channel.ErrUnknownExec), protocol.KindNotFound},
		"broken":       {channel.ErrBroken, protocol.KindTransient},
		"other":        {errors.New("keeper: attach: odd"), protocol.KindTransient},
	} {
		if got := protocol.KindOf(DetachError("job", c.err)); got != c.kind {
			t.Errorf("%s: %s; want %s", name, got, c.kind)
		}
	}
	if DetachError("job", nil) != nil {
		t.Error("DetachError(nil) is not nil")
	}
}

func TestFileError(t *testing.T) {
	for name, c := range map[string]struct {
		err    error
		kind   protocol.Kind
		reason protocol.Reason
		field  string
	}{
		"missing, field defaults to path": {&channel.FileError{Reason: channel.ReasonNoSuchFile, Kind: "not_found", Msg: "no"}, protocol.KindNotFound, protocol.ReasonNoSuchFile, protocol.FieldPath},
		"user field kept":                 {&channel.FileError{Reason: channel.ReasonPermissionDenied, Kind: "invalid_request", Field: "user"}, protocol.KindInvalidRequest, protocol.ReasonPermissionDenied, "user"},
		"no reason, known kind":           {&channel.FileError{Kind: "transient"}, protocol.KindTransient, "", ""},
		"no reason, unknown kind":         {&channel.FileError{Kind: "?"}, protocol.KindInvalidRequest, "", ""},
		"broken":                          {channel.ErrBroken, protocol.KindTransient, "", ""},
	} {
		err := FileError("read_file", "/x", c.err)
		reason, field := protocol.ReasonOf(err)
		if protocol.KindOf(err) != c.kind || reason != c.reason || field != c.field {
			t.Errorf("%s: %v is %s/%s/%s; want %s/%s/%s", name, err, protocol.KindOf(err), reason, field, c.kind, c.reason, c.field)
		}
	}
	if FileError("read_file", "/x", nil) != nil {
		t.Error("FileError(nil) is not nil")
	}
}

func TestSpecAndListings(t *testing.T) {
	s := Spec(provider.ExecRequest{Argv: []string{"a"}, Stdin: true, TTY: &protocol.WindowSize{Rows: 2, Cols: 3}}, []string{"A=1"}, "/w", "nobody")
	if s.User != "nobody" || s.Cwd != "/w" || !s.Stdin || s.TTY == nil || s.TTY.Rows != 2 || s.TTY.Cols != 3 {
		t.Errorf("spec %+v", s)
	}
	if s := Spec(provider.ExecRequest{Argv: []string{"a"}, User: "root"}, nil, "/", "nobody"); s.User != "root" || s.TTY != nil {
		t.Errorf("the exec's user does not win over the sandbox's: %+v", s)
	}
	out := Entries([]channel.Entry{{Name: "b"}, {Name: "a", Type: "dir"}})
	if len(out) != 2 || out[0].Name != "a" || out[0].Type != "dir" || out[1].Name != "b" {
		t.Errorf("entries %+v", out)
	}
	code := 3
	infos := ExecInfos([]channel.ExecInfo{{ID: "x", Started: time.Unix(0, 0), Exit: &channel.ExitStatus{Code: code, Signal: "SIGKILL"}}, {ID: "y", Running: true}})
	if len(infos) != 2 || infos[0].ExitCode == nil || *infos[0].ExitCode != 3 || infos[0].Signal != "SIGKILL" || infos[1].ExitCode != nil || !infos[1].Running {
		t.Errorf("exec infos %+v", infos)
	}
	if infos := ExecInfos(nil); infos == nil {
		t.Error("no execs listed as null, not []")
	}
}
