package external

import (
	"encoding/json"
	"time"

	"github.com/sourcegraph/jsonrpc2"
	"go.uber.org/zap"
)

func errorField(err error) zap.Field                    { return zap.Error(err) }
func stringField(k, v string) zap.Field                 { return zap.String(k, v) }
func durationField(k string, d time.Duration) zap.Field { return zap.Duration(k, d) }

func decodeNotif(req *jsonrpc2.Request, v any) error {
	if req.Params == nil {
		return nil
	}
	return json.Unmarshal(*req.Params, v)
}
