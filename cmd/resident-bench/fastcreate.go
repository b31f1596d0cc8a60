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

// idleCount is how many pool members of this install wait on the engine.
func (b *bench) idleCount() (int, error) {
	f, _ := json.Marshal(map[string][]string{"label": {"dev.resident.pool", ownerKey + "=" + b.installID}})
	data, err := b.raw.want("GET", "/containers/json?all=1&filters="+url.QueryEscape(string(f)), nil, 200)
	if err != nil {
		return 0, err
	}
	var list []struct{ Names []string }
	if err := json.Unmarshal(data, &list); err != nil {
		return 0, err
	}
	n := 0
	for _, c := range list {
		if len(c.Names) > 0 && strings.HasPrefix(c.Names[0], "/resident-idle-") {
			n++
		}
	}
	return n, nil
}

// awaitIdle waits, untimed, until the pool holds n members.
func (b *bench) awaitIdle(n int) error {
	deadline := time.Now().Add(2 * time.Minute)
	for {
		got, err := b.idleCount()
		if err != nil || got >= n {
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
// pool of 8, against the same loop without one.
func (b *bench) trials() ([]row, error) {
	n := b.scale(100, 5)
	spec := map[string]any{"image": b.image}
	loop := func(pool map[string]any, job string) (time.Duration, error) {
		tags := map[string]string{"bench": job}
		start := time.Now()
		for range n {
			id, err := b.createWith(spec, tags, pool)
			if err == nil {
				err = b.res.exec(id, "true")
			}
			if err == nil {
				err = b.terminate(id)
			}
			if err != nil {
				return 0, err
			}
		}
		return time.Since(start), nil
	}
	plain, err := loop(nil, "trials-plain")
	if err != nil {
		return nil, err
	}
	pooled, err := loop(map[string]any{"size": 8, "max_idle_s": 600}, "trials-pool")
	if err != nil {
		return nil, err
	}
	r := ratio(pooled, plain)
	return []row{{figure: fmt.Sprintf("%d trials (create, exec, terminate), pool of 8", n), ours: ms(pooled), raw: ms(plain) + " (no pool)",
		ratio: fmt.Sprintf("%.2fx no pool", r), goal: "≤ 0.3x no pool", verdict: verdict(r <= 0.3)}}, nil
}
