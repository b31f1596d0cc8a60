package main

import (
	"archive/tar"
	"fmt"
	"io"
	"net/http"
	"strconv"
)

// sandboxRead: sandbox/read_file of one big file out of the running
// sandbox, against the engine's archive endpoint (GET) on the same
// container, which reads as the engine's root and wraps the file in tar.
func (b *bench) sandboxRead() ([]row, error) {
	size := b.scale(256, 16) << 20
	const path = "/tmp/resident-bench-read"
	if err := b.res.exec(b.sandbox, "sh", "-c", "head -c "+strconv.Itoa(size)+" /dev/urandom > "+path); err != nil {
		return nil, err
	}
	ours, raw, err := interleaved(b.scale(4, 1),
		func() error {
			before := b.res.payload.Load()
			err := b.res.call("sandbox/read_file", map[string]string{"sandbox_id": b.sandbox, "path": path, "stream_id": "s" + strconv.FormatInt(execSeq.Add(1), 10)}, nil)
			if got := b.res.payload.Load() - before; err == nil && got != int64(size) {
				err = fmt.Errorf("sandbox/read_file delivered %d bytes, not %d", got, size)
			}
			return err
		},
		func() error {
			n, err := b.raw.archiveCount(b.sandbox, path)
			if err == nil && n != int64(size) {
				err = fmt.Errorf("archive delivered %d bytes, not %d", n, size)
			}
			return err
		})
	if err != nil {
		return nil, err
	}
	rate := func(s samples) float64 { return mbps(int64(size), s.median()) }
	return []row{{figure: fmt.Sprintf("sandbox/read_file of %d MiB from a running sandbox", size>>20),
		ours: fmt.Sprintf("%.0f MB/s", rate(ours)), raw: fmt.Sprintf("%.0f MB/s (GET archive)", rate(raw)),
		ratio: fmt.Sprintf("%.2fx raw", rate(ours)/rate(raw)), goal: "≥ 0.8x raw archive", verdict: verdict(rate(ours) >= 0.8*rate(raw))}}, nil
}

// upload: a streamed sandbox/write_file (upload/data, 256 KiB chunks, four
// in flight, as the client sends them) against the engine's archive
// endpoint (PUT, a tar of the one file) into the same running sandbox.
func (b *bench) upload() ([]row, error) {
	size := b.scale(256, 16) << 20
	chunk := make([]byte, 256<<10)
	for i := range chunk {
		chunk[i] = byte(i*131 + i>>8)
	}
	ours, raw, err := interleaved(b.scale(4, 1),
		func() error { return b.streamUpload("/tmp/resident-bench-up", size, chunk) },
		func() error { return b.raw.putArchive(b.sandbox, "/tmp", "resident-bench-raw", size, chunk) })
	if err != nil {
		return nil, err
	}
	rate := func(s samples) float64 { return mbps(int64(size), s.median()) }
	return []row{{figure: fmt.Sprintf("streamed upload of %d MiB into a running sandbox", size>>20),
		ours: fmt.Sprintf("%.0f MB/s", rate(ours)), raw: fmt.Sprintf("%.0f MB/s (PUT archive)", rate(raw)),
		ratio: fmt.Sprintf("%.2fx raw", rate(ours)/rate(raw)), goal: "≥ 0.8x raw archive", verdict: verdict(rate(ours) >= 0.8*rate(raw))}}, nil
}

func (b *bench) streamUpload(path string, size int, chunk []byte) error {
	stream := "u" + strconv.FormatInt(execSeq.Add(1), 10)
	write, err := b.res.send("sandbox/write_file", map[string]any{"sandbox_id": b.sandbox, "path": path, "stream_id": stream})
	if err != nil {
		return err
	}
	var inFlight []<-chan response
	for sent := 0; sent < size; {
		n := min(len(chunk), size-sent)
		sent += n
		ch, err := b.res.send("upload/data", map[string]any{"stream_id": stream, "data": chunk[:n], "eof": sent == size})
		if err != nil {
			return err
		}
		inFlight = append(inFlight, ch)
		for len(inFlight) >= 4 || (sent == size && len(inFlight) > 0) {
			if err := awaitResult("upload/data", inFlight[0], nil); err != nil {
				return err
			}
			inFlight = inFlight[1:]
		}
	}
	var res struct {
		Bytes int64 `json:"bytes"`
	}
	if err := awaitResult("sandbox/write_file", write, &res); err != nil {
		return err
	}
	if res.Bytes != int64(size) {
		return fmt.Errorf("write_file wrote %d bytes, not %d", res.Bytes, size)
	}
	return nil
}

// putArchive extracts a tar of one file of size bytes into dir.
func (r *rawClient) putArchive(id, dir, name string, size int, chunk []byte) error {
	pr, pw := io.Pipe()
	go func() {
		tw := tar.NewWriter(pw)
		err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(size), Typeflag: tar.TypeReg})
		for left := size; err == nil && left > 0; {
			n := min(len(chunk), left)
			_, err = tw.Write(chunk[:n])
			left -= n
		}
		if err == nil {
			err = tw.Close()
		}
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequest("PUT", apiPrefix+"/containers/"+id+"/archive?path="+dir, pr)
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/x-tar")
	resp, err := r.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != 200 {
		return fmt.Errorf("PUT archive: %s", resp.Status)
	}
	return nil
}
