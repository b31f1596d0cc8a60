package keeper

import (
	"testing"

	"github.com/resident-dev/resident/internal/keeper/keeperproto"
	"github.com/resident-dev/resident/protocol"
)

// A start error's reason and field survive the status line, and the reason
// decides the kind.
func TestParseStatusKeepsTheReason(t *testing.T) {
	for line, want := range map[string]protocol.ErrorData{
		"err invalid_request/no_such_file/argv exec \"x\": executable file not found in $PATH": {Kind: protocol.KindNotFound, Reason: protocol.ReasonNoSuchFile, Field: protocol.FieldArgv},
		"err invalid_request/permission_denied/argv exec \"./f\": not an executable file":      {Kind: protocol.KindInvalidRequest, Reason: protocol.ReasonPermissionDenied, Field: protocol.FieldArgv},
		"err not_found/no_such_file/cwd exec cwd \"/x\": no such file or directory":            {Kind: protocol.KindNotFound, Reason: protocol.ReasonNoSuchFile, Field: protocol.FieldCwd},
		"err invalid_request exec: exclusive needs root":                                       {Kind: protocol.KindInvalidRequest},
	} {
		_, err := ParseStatus([]byte(keeperproto.StatusPrefix + line + "\n"))
		if got := protocol.DataOf(err); got != want {
			t.Errorf("%q: %+v, want %+v", line, got, want)
		}
	}
}
