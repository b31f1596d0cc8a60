package docker_test

import (
	"context"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/protocol"
	"github.com/resident-dev/resident/provider/docker"
	"github.com/resident-dev/resident/tests"
)

// idleMembers lists the engine's unclaimed pool members of an install, as
// the engine sees them: the test does not take the provider's word for it.
func idleMembers(t *testing.T, install string) []string { return idleOf(t, install, "") }

// idleOf is idleMembers of one job tag ("": any).
func idleOf(t *testing.T, install, job string) []string {
	t.Helper()
	cli, err := client.New(client.FromEnv)
	if err != nil {
		t.Fatal(err)
	}
	defer cli.Close()
	filters := client.Filters{}.Add("label", docker.LabelPool, "resident-install-id="+install)
	if job != "" {
		filters = filters.Add("label", "job="+job)
	}
	list, err := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true, Filters: filters})
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, c := range list.Items {
		if len(c.Names) > 0 && strings.HasPrefix(c.Names[0], "/resident-idle-") {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

func removeInstallLater(t *testing.T, install string) {
	t.Cleanup(func() {
		cli, err := client.New(client.FromEnv)
		if err != nil {
			return
		}
		defer cli.Close()
		list, _ := cli.ContainerList(context.Background(), client.ContainerListOptions{All: true,
			Filters: client.Filters{}.Add("label", "resident-install-id="+install)})
		for _, c := range list.Items {
			_, _ = cli.ContainerRemove(context.Background(), c.ID, client.ContainerRemoveOptions{Force: true})
		}
	})
}

func poolParams(image, job string, size int, maxIdle int64) map[string]any {
	return map[string]any{
		"spec": map[string]any{"image": image}, "tags": map[string]string{"job": job},
		"pool": map[string]any{"size": size, "max_idle_s": maxIdle},
	}
}

func listOwnedIDs(h *tests.LiveHost) []string {
	var list protocol.ListOwnedResult
	h.Call(protocol.MethodSandboxList, nil, &list)
	var ids []string
	for _, b := range list.Sandboxes {
		ids = append(ids, b.SandboxID)
	}
	return ids
}

// A pool on the real engine: it fills behind the first create, hands a
// member out (which answers its first exec and is listed as the host's),
// refills, survives its resident's SIGKILL, and a new resident of the same
// install adopts the members; another install sees none of them and is
// never handed one. A pool left idle empties at max_idle_s.
func TestPoolOnTheEngine(t *testing.T) {
	image := NeedDocker(t)
	install := tests.UniqueInstall("pool")
	removeInstallLater(t, install)
	a := SpawnDocker(t, tests.LiveOpts{KeepOut: true}, "")
	if !a.Init(install, nil).Capabilities.Pool {
		t.Fatal("docker does not announce capabilities.pool")
	}
	var first, handed protocol.CreateResult
	a.Call(protocol.MethodSandboxCreate, poolParams(image, "p", 2, 600), &first)
	// Full once the resident holds both as ready, not once the engine
	// lists them: a member is listed from its container's create on. The
	// first create was handed the first member made, so three are made.
	tests.WaitUntil(t, "the pool to fill", func() bool {
		return len(idleMembers(t, install)) == 2 && strings.Count(a.Stderr(), "pool member ready") >= 3
	})
	before := idleMembers(t, install)
	a.Call(protocol.MethodSandboxCreate, poolParams(image, "p", 2, 600), &handed)
	if !slices.Contains(before, handed.SandboxID) {
		t.Fatalf("create was not handed a pool member: got %s, idle were %v", handed.SandboxID, before)
	}
	a.Call(protocol.MethodSandboxExec, map[string]any{"sandbox_id": handed.SandboxID, "exec_id": "e1", "argv": []string{"echo", "ready"}}, nil)
	if out := string(a.Out("e1", "stdout")); out != "ready\n" {
		t.Fatalf("first exec in a pooled sandbox: %q", out)
	}
	if ids := listOwnedIDs(a); len(ids) != 2 || !slices.Contains(ids, first.SandboxID) || !slices.Contains(ids, handed.SandboxID) {
		t.Fatalf("list_owned = %v, want exactly the two handed out", ids)
	}
	tests.WaitUntil(t, "the pool to refill", func() bool {
		return len(idleMembers(t, install)) == 2 && strings.Count(a.Stderr(), "pool member ready") >= 4
	})
	full := idleMembers(t, install)

	if err := a.Process().Kill(); err != nil { // SIGKILL with a full pool
		t.Fatal(err)
	}
	tests.WaitUntil(t, "the killed resident to exit", func() bool { return a.Process().Signal(syscall.Signal(0)) != nil })
	if got := idleMembers(t, install); len(got) != 2 {
		t.Fatalf("the killed resident's members: %v", got)
	}

	other := tests.UniqueInstall("pool-other")
	removeInstallLater(t, other)
	c := SpawnDocker(t, tests.LiveOpts{}, "")
	c.Init(other, nil)
	if ids := listOwnedIDs(c); len(ids) != 0 {
		t.Fatalf("another install lists %v", ids)
	}
	var foreign protocol.CreateResult
	c.Call(protocol.MethodSandboxCreate, poolParams(image, "p", 1, 600), &foreign)
	if slices.Contains(full, foreign.SandboxID) {
		t.Fatal("another install was handed this install's pool member")
	}

	b := SpawnDocker(t, tests.LiveOpts{}, "")
	b.Init(install, nil)
	var adopted protocol.CreateResult
	b.Call(protocol.MethodSandboxCreate, poolParams(image, "p", 2, 600), &adopted)
	if !slices.Contains(full, adopted.SandboxID) {
		t.Fatalf("the new resident did not hand out the killed one's member: got %s, idle were %v", adopted.SandboxID, full)
	}
	if ids := listOwnedIDs(b); len(ids) != 3 {
		t.Fatalf("list_owned after adoption = %v, want the 3 handed out", ids)
	}

	// An idle pool empties at max_idle_s and is not refilled.
	b.Call(protocol.MethodSandboxCreate, poolParams(image, "short", 1, 1), &protocol.CreateResult{})
	tests.WaitUntil(t, "the short pool to fill", func() bool { return len(idleOf(t, install, "short")) == 1 })
	tests.WaitUntil(t, "the short pool's member to expire", func() bool { return len(idleOf(t, install, "short")) == 0 })
	tests.WaitUntil(t, "the adopted pool to refill", func() bool { return len(idleOf(t, install, "p")) == 2 })
}
