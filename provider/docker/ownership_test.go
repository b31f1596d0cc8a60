package docker

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider"
)

// A sandbox with two owner-shaped labels belongs to nobody. Planted directly
// through the engine (no resident of this version would make one), it is
// listed by neither install, and the ownership gate (ReadOwner, and the
// memory exec goes through) answers nobody for both.
func TestAmbiguousSandboxBelongsToNobody(t *testing.T) {
	p, _ := newTestProvider(t)
	ctx := testCtx(t)
	victim := testOwner(t)
	evil := provider.Owner{Key: "evil-install-id", InstallID: victim.InstallID + "-evil"}
	planted := map[string]map[string]string{
		"two prefixes": {victim.Key: victim.InstallID, evil.Key: evil.InstallID},
		"case variant": {victim.Key: victim.InstallID, strings.ToUpper(victim.Key): victim.InstallID},
	}
	ids := map[string]string{}
	for name, owners := range planted {
		ids[name] = plantSandbox(t, p, owners)
	}
	for _, owner := range []provider.Owner{victim, evil, {Key: strings.ToUpper(victim.Key), InstallID: victim.InstallID}} {
		list, err := p.ListOwned(ctx, owner)
		if err != nil {
			t.Fatal(err)
		}
		if i := slices.IndexFunc(list, func(s protocol.Sandbox) bool { return slices.Contains(mapValues(ids), s.SandboxID) }); i >= 0 {
			t.Errorf("ListOwned(%s=%s) lists the ambiguous sandbox %+v", owner.Key, owner.InstallID, list[i])
		}
		for name, id := range ids {
			if got, err := p.ReadOwner(ctx, id, owner.Key); err != nil || got != "" {
				t.Errorf("%s: ReadOwner(%s) = %q, %v; want nobody", name, owner.Key, got, err)
			}
			if got, known := p.KnownOwner(id, owner.Key); !known || got != "" {
				t.Errorf("%s: KnownOwner(%s) = %q (known %v); want nobody", name, owner.Key, got, known)
			}
		}
	}
}

// An image whose labels would make every sandbox made from it ambiguous
// (an owner-shaped label of another prefix, as a committed sandbox of
// another install carries) is refused, and nothing is created.
func TestImageWithAnotherOwnerLabelIsRefused(t *testing.T) {
	p, _ := newTestProvider(t)
	ctx := testCtx(t)
	owner := testOwner(t)
	base, err := p.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: testImage, Cmd: []string{"true"}, Labels: map[string]string{"resident-test-run": runID}}})
	if err != nil {
		t.Fatal(err)
	}
	defer p.cli.ContainerRemove(context.Background(), base.ID, client.ContainerRemoveOptions{Force: true})
	image := "resident-test/other-owner:" + runID
	if _, err := p.cli.ContainerCommit(ctx, base.ID, client.ContainerCommitOptions{Reference: image, Changes: []string{"LABEL evil-install-id=x"}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = p.cli.ImageRemove(context.Background(), image, client.ImageRemoveOptions{Force: true})
	})
	_, err = p.Create(ctx, protocol.Spec{Image: image}, owner, nil)
	if protocol.KindOf(err) != protocol.KindInvalidRequest || !strings.Contains(err.Error(), "evil-install-id") {
		t.Fatalf("create from an image labelled with another owner: %v; want invalid_request naming the label", err)
	}
	list, err := p.cli.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", owner.Key+"="+owner.InstallID)})
	if err != nil || len(list.Items) != 0 {
		t.Fatalf("containers left by the refused create: %d, %v", len(list.Items), err)
	}
}

// plantSandbox starts a container labelled as one of our sandboxes whose
// host tags are exactly tags, made through the engine past Create's checks.
func plantSandbox(t *testing.T, p *Provider, tags map[string]string) string {
	t.Helper()
	ctx := testCtx(t)
	labels := baseLabels(RoleSandbox)
	keys := []string{}
	for k, v := range tags {
		labels[k] = v
		keys = append(keys, k)
	}
	keyList, _ := json.Marshal(keys)
	labels[LabelTagKeys] = string(keyList)
	labels["resident-test-run"] = runID
	c, err := p.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: testImage, Cmd: []string{"sleep", "600"}, Labels: labels}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = p.cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
	})
	if _, err := p.cli.ContainerStart(ctx, c.ID, client.ContainerStartOptions{}); err != nil {
		t.Fatal(err)
	}
	return c.ID
}

func mapValues(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for _, v := range m {
		out = append(out, v)
	}
	return out
}
