package main

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"time"
)

// Issue 19's figures: warm pools, trials, snapshots. Every sandbox the
// resident makes here carries the bench's owner label and goes with the
// sweep; raw containers and images carry the run label.

// idleCount is how many pool members of this install wait on the engine,
// started: a member is listed from its container's create on, and one not
// yet started is not ready to be handed out (the hit would wait for it).
func (b *bench) idleCount() (int, error) {
	f, _ := json.Marshal(map[string][]string{"label": {"dev.resident.pool", ownerKey + "=" + b.installID}})
	data, err := b.raw.want("GET", "/containers/json?all=1&filters="+url.QueryEscape(string(f)), nil, 200)
	if err != nil {
		return 0, err
	}
	var list []struct {
		Names []string
		State string
	}
	if err := json.Unmarshal(data, &list); err != nil {
		return 0, err
	}
	n := 0
	for _, c := range list {
		if len(c.Names) > 0 && strings.HasPrefix(c.Names[0], "/resident-idle-") && c.State == "running" {
			n++
		}
	}
	return n, nil
}

// goneCount is how many terminated sandboxes of this install the engine
// is still removing in the background.
func (b *bench) goneCount() (int, error) {
	f, _ := json.Marshal(map[string][]string{"label": {ownerKey + "=" + b.installID}, "name": {"resident-gone-"}})
	data, err := b.raw.want("GET", "/containers/json?all=1&filters="+url.QueryEscape(string(f)), nil, 200)
	if err != nil {
		return 0, err
	}
	var list []struct{ Names []string }
	if err := json.Unmarshal(data, &list); err != nil {
		return 0, err
	}
	return len(list), nil
}

// awaitIdle waits, untimed, until the pool holds n members and the engine
// has finished removing the sandboxes terminated before, so that neither
// the refill nor an earlier round's removal runs beside the timed hit.
func (b *bench) awaitIdle(n int) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := b.idleCount()
		if err != nil {
			return err
		}
		gone, err := b.goneCount()
		if err != nil || (got >= n && gone == 0) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the pool holds %d members after 2 minutes, want %d", got, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (b *bench) createWith(spec map[string]any, tags map[string]string, pool map[string]any) (string, error) {
	params := map[string]any{"spec": spec, "tags": tags}
	if pool != nil {
		params["pool"] = pool
	}
	var res struct {
		SandboxID string `json:"sandbox_id"`
	}
	err := b.res.call("sandbox/create", params, &res)
	return res.SandboxID, err
}

func (b *bench) terminate(id string) error {
	return b.res.call("sandbox/terminate", map[string]string{"sandbox_id": id}, nil)
}

// poolHit: create → first exec answered with a ready pool member, against
// the same without a pool, alternately; the pool refills (untimed) between
// rounds, so every pooled create is a hit.
func (b *bench) poolHit() ([]row, error) {
	n := b.scale(10, 2)
	spec := map[string]any{"image": b.image}
	tags := map[string]string{"bench": "pool-hit"}
	pool := map[string]any{"size": 1, "max_idle_s": 600}
	var hit, plain, hitCreate samples
	for i := range n + max(1, n/10) {
		if i == 0 {
			if _, err := b.createWith(spec, tags, pool); err != nil { // the miss that fills it
				return nil, err
			}
		}
		if err := b.awaitIdle(1); err != nil {
			return nil, err
		}
		for _, pooled := range []bool{true, false} {
			start := time.Now()
			var p map[string]any
			if pooled {
				p = pool
			}
			id, err := b.createWith(spec, tags, p)
			if pooled {
				hitCreate = append(hitCreate, time.Since(start))
			}
			if err == nil {
				err = b.res.exec(id, "true")
			}
			if err != nil {
				return nil, err
			}
			took := time.Since(start)
			if pooled {
				hit = append(hit, took)
			} else {
				plain = append(plain, took)
			}
			if err := b.terminate(id); err != nil {
				return nil, err
			}
		}
	}
	hit, plain, hitCreate = dropWarmup(hit), dropWarmup(plain), dropWarmup(hitCreate)
	return []row{
		{figure: "create → first exec answered, pool hit", ours: medP99(hit), raw: medP99(plain) + " (no pool)",
			ratio: fmt.Sprintf("%.3fx no pool", ratio(hit.median(), plain.median())), goal: "≤ 20 ms", verdict: verdict(hit.median() <= 20*time.Millisecond)},
		// The part the pool decides; the rest is the first exec's own cost.
		{figure: "sandbox/create answered, pool hit", ours: medP99(hitCreate)},
	}, nil
}

// trials: the eval loop (create, one exec, terminate) 100 times with a
// pool of 8, against the same loop without one. Each step's median is a
// row of its own, so a run says where the loop's time went.
func (b *bench) trials() ([]row, error) {
	n := b.scale(100, 5)
	spec := map[string]any{"image": b.image}
	type steps struct{ create, exec, terminate samples }
	loop := func(pool map[string]any, job string) (time.Duration, steps, error) {
		var st steps
		tags := map[string]string{"bench": job}
		start := time.Now()
		for range n {
			t0 := time.Now()
			id, err := b.createWith(spec, tags, pool)
			t1 := time.Now()
			if err == nil {
				err = b.res.exec(id, "true")
			}
			t2 := time.Now()
			if err == nil {
				err = b.terminate(id)
			}
			if err != nil {
				return 0, st, err
			}
			st.create = append(st.create, t1.Sub(t0))
			st.exec = append(st.exec, t2.Sub(t1))
			st.terminate = append(st.terminate, time.Since(t2))
		}
		return time.Since(start), st, nil
	}
	plain, plainSteps, err := loop(nil, "trials-plain")
	if err != nil {
		return nil, err
	}
	pooled, pooledSteps, err := loop(map[string]any{"size": 8, "max_idle_s": 600}, "trials-pool")
	if err != nil {
		return nil, err
	}
	r := ratio(pooled, plain)
	stepRow := func(name string, with, without samples) row {
		return row{figure: "  one trial's " + name + ", pool of 8", ours: medP99(with), raw: medP99(without) + " (no pool)"}
	}
	return []row{{figure: fmt.Sprintf("%d trials (create, exec, terminate), pool of 8", n), ours: ms(pooled), raw: ms(plain) + " (no pool)",
		ratio: fmt.Sprintf("%.2fx no pool", r), goal: "≤ 0.3x no pool", verdict: verdict(r <= 0.3)},
		stepRow("create", pooledSteps.create, plainSteps.create),
		stepRow("exec", pooledSteps.exec, plainSteps.exec),
		stepRow("terminate", pooledSteps.terminate, plainSteps.terminate),
	}, nil
}
