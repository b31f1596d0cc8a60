package kubernetes

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// A create whose pod cannot start answers with a typed error, within the
// announced bound, and leaves nothing behind: an image no node has and no
// registry serves is not_found at once (ErrImagePull/ImagePullBackOff); a
// pod no node has room for is quota once the bound passes.
func TestCreateThatCannotStart(t *testing.T) {
	p := newTestProvider(t)
	// The kubelet tries the image only after the keeper's init container
	// ran: on a loaded machine that takes seconds.
	p.timing.podStart = 60 * time.Second
	owner := provider.Owner{Key: "resident-install-id", InstallID: "fail-" + newID()[len(idPrefix):]}
	ctx := context.Background()

	_, err := p.Create(ctx, protocol.Spec{Image: "localhost/resident-no-such-image:1"}, owner, nil)
	if protocol.KindOf(err) != protocol.KindNotFound || !strings.Contains(err.Error(), "resident-no-such-image") {
		t.Errorf("missing image: %v (kind %s), want not_found naming the image", err, protocol.KindOf(err))
	}
	p.timing.podStart = 8 * time.Second
	_, err = p.Create(ctx, protocol.Spec{Image: cluster.Image, CPUs: 512}, owner, nil)
	if protocol.KindOf(err) != protocol.KindQuota || !strings.Contains(err.Error(), "Insufficient cpu") {
		t.Errorf("unschedulable: %v (kind %s), want quota naming the reason", err, protocol.KindOf(err))
	}
	list, err := admin.CoreV1().Pods(testNamespace).List(ctx, metav1.ListOptions{LabelSelector: ownedSelector(owner)})
	if err != nil {
		t.Fatal(err)
	}
	for _, pod := range list.Items {
		if pod.DeletionTimestamp == nil {
			t.Errorf("a failed create left pod %s", pod.Name)
		}
	}
}
