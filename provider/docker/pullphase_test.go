package docker

import (
	"testing"

	"github.com/moby/moby/api/types/jsonstream"

	"github.com/resident-dev/resident/protocol"
)

// The engine's pull messages become structured progress: a layer's steps
// name the layer and a phase from the protocol's closed set, so a host
// never parses the engine's words; the image's own messages (whose id field
// is the tag) name no layer.
func TestPullProgressIsStructured(t *testing.T) {
	var got []protocol.PullProgress
	r := newPullReporter("img:1", func(_ string, params any) { got = append(got, params.(protocol.PullProgress)) })
	for _, m := range []jsonstream.Message{
		{Status: "Pulling from library/img", ID: "1"},
		{Status: "Pulling fs layer", ID: "0123456789ab"},
		{Status: "Downloading", ID: "0123456789ab", Progress: &jsonstream.Progress{Current: 10, Total: 100}},
		{Status: "Download complete", ID: "0123456789ab"},
		{Status: "Extracting", ID: "0123456789ab", Progress: &jsonstream.Progress{Current: 100, Total: 100}},
		{Status: "Pull complete", ID: "0123456789ab"},
		{Status: "Already exists", ID: "ba9876543210"},
		{Status: "Digest: sha256:00"},
	} {
		r.report(m)
	}
	want := []protocol.PullProgress{
		{Image: "img:1", Status: "1: Pulling from library/img"},
		{Image: "img:1", Status: "0123456789ab: Pulling fs layer", Layer: "0123456789ab", Phase: protocol.PullWaiting},
		{Image: "img:1", Status: "0123456789ab: Downloading", Layer: "0123456789ab", Phase: protocol.PullDownloading, Current: 10, Total: 100},
		{Image: "img:1", Status: "0123456789ab: Download complete", Layer: "0123456789ab", Phase: protocol.PullDownloaded},
		{Image: "img:1", Status: "0123456789ab: Extracting", Layer: "0123456789ab", Phase: protocol.PullExtracting, Current: 100, Total: 100},
		{Image: "img:1", Status: "0123456789ab: Pull complete", Layer: "0123456789ab", Phase: protocol.PullComplete},
		{Image: "img:1", Status: "ba9876543210: Already exists", Layer: "ba9876543210", Phase: protocol.PullComplete},
		{Image: "img:1", Status: "Digest: sha256:00"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d notifications: %+v", len(got), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("notification %d: %+v\nwant            %+v", i, got[i], want[i])
		}
	}
	if pullPhase("Retrying in 5 seconds") != protocol.PullDownloading {
		t.Error("a retried download is not downloading")
	}
}
