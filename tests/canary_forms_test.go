package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/resident-dev/resident/hardening"
	"github.com/resident-dev/resident/hardening/leaktest"
	"github.com/resident-dev/resident/protocol"
)

// rowCanary is the credential planted for row i of the form table. It has
// what every row escapes (URL and JSON specials, non-ASCII letters, an
// astral rune) and, except for the raw row, whose form must pass as a tag
// value and an exec id (printable only), \b and \f.
func rowCanary(i int, row hardening.Form) string {
	c := fmt.Sprintf("Row%02d/Cän&<9c> +\"q\\😀-%d", i, 7919*(i+1))
	if row.Name != "raw" {
		c += "\b\f"
	}
	return c
}

// TestEveryFormOnEverySurface runs the real binary at debug level with one
// canary per row of the scrubber's form table, all planted as credentials in
// initialize. For each row, the row's form of its canary goes out on every
// surface a byte can leave by: exec output frames, file data frames, an
// exec id echoed in notifications, an error message, a result field and
// (through the error) the zap log on stderr. Each site must show the mask,
// and no surface may show any row's form of any canary, decoded or not.
func TestEveryFormOnEverySurface(t *testing.T) {
	rows := hardening.Forms()
	canaries := make([]string, len(rows))
	creds := map[string]string{}
	for i, row := range rows {
		canaries[i] = rowCanary(i, row)
		creds[fmt.Sprintf("row%02d", i)] = canaries[i]
	}
	h := SpawnLive(t, LiveOpts{Args: []string{"--log-level", "debug"}, KeepRaw: true, KeepOut: true})
	h.Init("forms-install", map[string]any{"credentials": creds})
	box := h.Create(map[string]any{"volumes": []map[string]any{{"name": "work", "path": "work"}}})

	tags := map[string]string{}
	errors := map[string]string{}
	maskedID := "id-" + hardening.Mask
	for i, row := range rows {
		form := row.Spell(canaries[i])
		if len(form) < hardening.MinSecretLen {
			t.Fatalf("row %s cannot spell its canary", row.Name)
		}
		tags[fmt.Sprintf("row%02d", i)] = "see " + form
		marker := fmt.Sprintf("r%02d=", i)

		execID := fmt.Sprintf("out-%02d", i)
		h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": execID,
			"argv": []string{"printf", `%s\n`, marker + "<" + form + ">"}}, nil)
		if got, want := string(h.Out(execID, "stdout")), marker+"<"+hardening.Mask+">\n"; got != want {
			t.Errorf("%s: exec output %q, want %q", row.Name, got, want)
		}

		h.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": "id-" + form,
			"argv": []string{"echo", marker}}, nil)
		if !strings.Contains(string(h.Out(maskedID, "stdout")), marker+"\n") {
			t.Errorf("%s: no exec/output notification with exec id %q", row.Name, maskedID)
		}

		h.Call(protocol.MethodSandboxWrite, map[string]any{"sandbox_id": box, "path": fmt.Sprintf("/work/f%02d", i),
			"data": []byte(marker + "<" + form + ">\n")}, nil)
		var file protocol.ReadFileResult
		h.Call(protocol.MethodStoreReadFile, map[string]any{"root": "work", "path": fmt.Sprintf("f%02d", i),
			"stream_id": fmt.Sprintf("s%02d", i)}, &file)
		if !file.Redacted {
			t.Errorf("%s: read_file did not redact", row.Name)
		}

		errors[row.Name] = h.CallErr(protocol.MethodSandboxExec, map[string]any{"sandbox_id": box, "exec_id": fmt.Sprintf("cwd-%02d", i),
			"argv": []string{"true"}, "cwd": "/missing/" + marker + form}, protocol.KindNotFound)
	}
	var created protocol.CreateResult
	h.Call(protocol.MethodSandboxCreate, map[string]any{"tags": tags}, &created)
	var list protocol.ListOwnedResult
	h.Call(protocol.MethodSandboxList, nil, &list)
	h.Call(protocol.MethodSandboxTerm, map[string]any{"sandbox_id": created.SandboxID}, nil)
	h.Call(protocol.MethodShutdown, nil, nil)
	h.CloseAndWait(20 * time.Second)

	var listed map[string]string
	for _, sb := range list.Sandboxes {
		if sb.SandboxID == created.SandboxID {
			listed = sb.Tags
		}
	}
	view := leaktest.FramesView(t, h.RawStdout())
	logs := leaktest.LinesView(t, h.stderr.String())
	for i, row := range rows {
		marker := fmt.Sprintf("r%02d=", i)
		t.Run(row.Name, func(t *testing.T) {
			leaktest.Masked(t, "error message", errors[row.Name])
			leaktest.NoLeak(t, "error message", errors[row.Name], canaries...)
			if got := listed[fmt.Sprintf("row%02d", i)]; got != "see "+hardening.Mask {
				t.Errorf("list_owned tag: %q", got)
			}
			if !strings.Contains(view, marker+"<"+hardening.Mask+">\n") {
				t.Error("store/data: the decoded file is not in the frames, masked")
			}
			if !strings.Contains(logs, "/missing/"+marker+hardening.Mask) {
				t.Error("stderr logs: the error quoting the form is not logged, masked")
			}
		})
	}
	leaktest.NoLeak(t, "stdout frames", view, canaries...)
	leaktest.NoLeak(t, "stderr logs (debug)", logs, canaries...)
}
