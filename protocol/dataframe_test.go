package protocol

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// dataFrame is a request of method whose params are params with a base64
// "data" member of payload spliced in where %s stands.
func dataFrame(method, params string, payload []byte) []byte {
	data := `"` + base64.StdEncoding.EncodeToString(payload) + `"`
	return []byte(`{"jsonrpc":"2.0","id":7,"method":"` + method + `","params":` + fmt.Sprintf(params, data) + `}`)
}

func TestDataFrameParamsAreCutOut(t *testing.T) {
	payload := bytes.Repeat([]byte("0123456789abcdef"), 64<<10) // 1 MiB
	frame := dataFrame(MethodUploadData, `{"stream_id":"s1","data":%s,"eof":true}`, payload)
	env, bad := ParseDataEnvelope(frame)
	if bad != nil {
		t.Fatal(bad)
	}
	if len(env.Params) > 64 {
		t.Fatalf("params still hold the data (%d bytes); want it cut out", len(env.Params))
	}
	var p UploadDataParams
	if err := DecodeDataParams(env.Params, env.Data, &p); err != nil {
		t.Fatal(err)
	}
	if p.StreamID != "s1" || !p.EOF || !bytes.Equal(p.Data, payload) {
		t.Fatalf("decoded %q eof=%v with %d bytes of data; want s1, eof, the payload", p.StreamID, p.EOF, len(p.Data))
	}
}

// paramsOfMethod is a fresh params value of a data method, or nil.
func paramsOfMethod(method string) any {
	switch method {
	case MethodUploadData:
		return new(UploadDataParams)
	case MethodExecStdin:
		return new(ExecStdinParams)
	case MethodSandboxWrite:
		return new(WriteFileParams)
	}
	return nil
}

func dataFrameSeeds() [][]byte {
	payload := bytes.Repeat([]byte{0, 1, 2, 250, 'x'}, 600)
	bad := strings.Repeat("A", 1500) + "!"
	return [][]byte{
		dataFrame(MethodUploadData, `{"stream_id":"s","data":%s,"eof":false}`, payload),
		dataFrame(MethodExecStdin, `{"exec_id":"e", "data" : %s}`, payload),
		dataFrame(MethodSandboxWrite, `{"sandbox_id":"b","path":"/f","data":%s,"mode":420}`, payload),
		dataFrame(MethodUploadData, `{"stream_id":"s","data":%s,"data":""}`, payload),
		dataFrame(MethodUploadData, `{"stream_id":"s","Data":%s}`, payload),
		dataFrame(MethodUploadData, `{"stream_id":"s","data":%s,"DATA":"AAAA"}`, payload),
		dataFrame(MethodUploadData, `{"stream_id":"s","x":{"data":%s}}`, payload),
		dataFrame(MethodUploadData, `{"stream_id":"s","data":%s,"eof":"yes"}`, payload),
		dataFrame(MethodUploadData, `{"stream_id":1,"data":%s}`, payload),
		dataFrame(MethodUploadData, `{"a\"data":%s,"stream_id":"s"}`, payload),
		dataFrame("store/write_file", `{"name":"v","path":"p","data":%s}`, payload),
		dataFrame(MethodUploadData, `[%s]`, payload),
		[]byte(`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"stream_id":"s","data":"` + bad + `"}}`),
		[]byte(`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"stream_id":"s","data":"` + strings.Repeat("QUFB", 300) + `","eof":"x"}}`),
		[]byte(`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"stream_id":"s","data":"` + strings.Repeat("QUFB", 300) + `"`),
		[]byte(`{"jsonrpc":"2.0","id":7,"method":"upload/data","id":8,"params":{"data":"` + strings.Repeat("QUFB", 300) + `"}}`),
		[]byte(`{"jsonrpc":"2.0","method":"exec/stdin","params":{"exec_id":"e","data":"` + strings.Repeat("QUFB", 300) + `"}}`),
		[]byte(`{"jsonrpc":"2.0","id":7,"result":{"data":"` + strings.Repeat("QUFB", 300) + `"}}`),
		// base64 skips CR and LF; JSON refuses them raw in a string.
		[]byte(`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"stream_id":"s","data":"` + strings.Repeat("QUFB", 300) + "\n" + strings.Repeat("QUFB", 3) + `"}}`),
		[]byte(`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"stream_id":"s","data":"` + strings.Repeat("QUFB", 300) + "\r" + strings.Repeat("QUFB", 3) + `"}}`),
		// In the last quantum too, where the table decoder hands over.
		[]byte(`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"stream_id":"s","data":"` + strings.Repeat("QUFB", 300) + "QU\nFB" + `"}}`),
		[]byte(`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"stream_id":"s","data":"` + strings.Repeat("QUFB", 300) + "QUFB\r" + `"}}`),
		[]byte(`{"jsonrpc":"2.0","id":7,"method":"upload/data","params":{"stream_id":"s","data":"` + strings.Repeat("QUFB", 300) + `\u0041AAA"}}`),
	}
}

// FuzzDataFrameMatchesStrict checks the data fast path against the strict
// path (ParseEnvelope, then DecodeValidParams with encoding/json) on the
// same frames: the same envelope or the same refusal, the same params or the
// same error.
func FuzzDataFrameMatchesStrict(f *testing.F) {
	for _, seed := range dataFrameSeeds() {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		strict, strictBad := ParseEnvelope(body)
		fast, fastBad := ParseDataEnvelope(body)
		if !reflect.DeepEqual(strictBad, fastBad) {
			t.Fatalf("refusal %v, strict path %v", fastBad, strictBad)
		}
		// Into a recycled buffer, dirty from an earlier frame: the same.
		dirty := bytes.Repeat([]byte{0xff}, len(body))
		into, intoBad := ParseDataEnvelopeInto(body, dirty)
		if !reflect.DeepEqual(intoBad, fastBad) || !reflect.DeepEqual(into, fast) {
			t.Fatalf("into a recycled buffer: %+v %v; without %+v %v", into, intoBad, fast, fastBad)
		}
		if strictBad != nil {
			return
		}
		if !bytes.Equal(fast.ID, strict.ID) || fast.Method != strict.Method || fast.Response != strict.Response {
			t.Fatalf("envelope %+v, strict path %+v", fast, strict)
		}
		want, got := paramsOfMethod(strict.Method), paramsOfMethod(strict.Method)
		if want == nil {
			if fast.Data != nil || !bytes.Equal(fast.Params, strict.Params) {
				t.Fatalf("params %q (data %d bytes) of a method without data; strict path %q", fast.Params, len(fast.Data), strict.Params)
			}
			return
		}
		wantErr := DecodeValidParams(strict.Params, want)
		gotErr := DecodeDataParams(fast.Params, fast.Data, got)
		if fmt.Sprint(wantErr) != fmt.Sprint(gotErr) || KindOf(wantErr) != KindOf(gotErr) {
			t.Fatalf("decode error %v, strict path %v", gotErr, wantErr)
		}
		if wantErr == nil && !reflect.DeepEqual(want, got) {
			t.Fatalf("params %+v, strict path %+v", got, want)
		}
	})
}

func TestDataFrameSeedsTakeBothPaths(t *testing.T) {
	cut := 0
	for _, seed := range dataFrameSeeds() {
		if env, ok := cutData(seed, nil); ok && env.Data != nil {
			cut++
		}
	}
	// The first three seeds are plain data frames; the rest are ones the
	// fast path must hand to the strict one (or that the strict path refuses).
	if cut < 3 || cut == len(dataFrameSeeds()) {
		t.Fatalf("%d of %d seeds took the fast path; want the plain ones only", cut, len(dataFrameSeeds()))
	}
}

// BenchmarkDataFrame decodes one 256 KiB upload/data frame (what
// residentctl cp sends) the strict way and through the data fast path.
func BenchmarkDataFrame(b *testing.B) {
	payload := bytes.Repeat([]byte("0123456789abcdef"), 16<<10)
	frame := dataFrame(MethodUploadData, `{"stream_id":"s1","data":%s,"eof":false}`, payload)
	decode := map[string]func() error{
		"strict": func() error {
			env, bad := ParseEnvelope(frame)
			if bad != nil {
				return bad
			}
			return DecodeValidParams(env.Params, new(UploadDataParams))
		},
		"fast": func() error {
			env, bad := ParseDataEnvelope(frame)
			if bad != nil {
				return bad
			}
			return DecodeDataParams(env.Params, env.Data, new(UploadDataParams))
		},
	}
	for _, name := range []string{"strict", "fast"} {
		b.Run(name, func(b *testing.B) {
			b.SetBytes(int64(len(frame)))
			b.ReportAllocs()
			for range b.N {
				if err := decode[name](); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
