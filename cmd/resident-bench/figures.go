package main

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/client"

	"github.com/resident-dev/resident/internal/keeper"
)

// startup: spawn to initialize answered (the docker provider pings the
// engine inside initialize), then idle RSS. The baselines are a whole
// process that pings: the smallest Go program that can (raw, rawping),
// `docker version`, and python importing the SDK.
func (b *bench) startup() ([]row, error) {
	var ours, raw, cli, py, version samples
	var rss []int64
	n := b.scale(30, 5)
	for i := range n + max(1, n/10) {
		warm := i < max(1, n/10)
		start := time.Now()
		p, err := spawnResident(b.bin, "docker", b.stateDir)
		if err != nil {
			return nil, err
		}
		if err := p.initialize(b.installID, nil); err != nil {
			return nil, err
		}
		took := time.Since(start)
		kb, _ := procStatusKB(p.pid, "VmRSS")
		if err := p.stop(); err != nil {
			return nil, err
		}
		measure := func(s *samples, fn func() error) error {
			t := time.Now()
			if err := fn(); err != nil {
				return err
			}
			if !warm {
				*s = append(*s, time.Since(t))
			}
			return nil
		}
		if !warm {
			ours, rss = append(ours, took), append(rss, kb)
		}
		if err := measure(&raw, spawnAndWait(b.rawPing)); err != nil {
			return nil, err
		}
		// The part of start-up that is exec, the Go runtime and package
		// initialisation: the binary's --version does nothing else.
		if err := measure(&version, spawnAndWait(b.bin, "--version")); err != nil {
			return nil, err
		}
		if b.cli {
			if err := measure(&cli, dockerCLI([]string{"version", "--format", "{{.Server.Version}}"})); err != nil {
				return nil, err
			}
		}
		if b.python != "" {
			if err := measure(&py, spawnAndWait(b.python, "-c", "import docker; docker.from_env().ping()")); err != nil {
				return nil, err
			}
		}
	}
	rawRSS, _ := exec.Command(b.rawPing).Output()
	pyRes, err := runPython(b.python, map[string]any{"mode": "ping"})
	if err != nil {
		return nil, err
	}
	oursMed := ours.median()
	r1 := row{figure: "startup: spawn → initialize answered, engine pinged", ours: medP99(ours), raw: medP99(raw), cli: medP99(cli), py: medP99(py),
		goal: "≤ 10 ms median; ≥ 15x faster than docker-py"}
	ok := oursMed <= 10*time.Millisecond
	if len(py) > 0 {
		x := ratio(py.median(), oursMed)
		r1.ratio = fmt.Sprintf("docker-py/ours %.1fx", x)
		ok = ok && x >= 15
	}
	r1.ratio += fmt.Sprintf("; ours/raw %.2fx; `resident --version` alone %s", ratio(oursMed, raw.median()), ms(version.median()))
	r1.verdict = verdict(ok)
	medRSS := medianInt(rss)
	r2 := row{figure: "idle RSS after initialize", ours: mb(medRSS), raw: mbText(strings.TrimSpace(string(rawRSS))), goal: "≤ 12 MB", verdict: verdict(medRSS <= 12*1024)}
	if pyRes != nil {
		r2.py = mb(pyRes.int("rss_kb"))
	}
	return []row{r1, r2}, nil
}

// perOp: the resident's added cost on calls that are one engine request
// each, run interleaved with that request made raw.
func (b *bench) perOp() ([]row, error) {
	missing := strings.Repeat("0", 63) + "1"
	owner := []string{ownerKey + "=" + b.installID}
	n, nCLI := b.scale(1000, 50), b.scale(20, 3)
	sdk, err := client.New(client.FromEnv)
	if err != nil {
		return nil, err
	}
	defer sdk.Close()
	ctx := context.Background()
	type op struct {
		name     string
		ours     func() error
		raw      func() error
		sdk      func() error
		cli      []string
		cliOK    []int
		pyKey    string
		resultOK func(string) bool
	}
	ops := []op{
		{name: "list_owned", ours: func() error { return b.res.call("sandbox/list_owned", struct{}{}, nil) },
			raw: func() error { return b.raw.list(owner...) },
			sdk: func() error {
				_, err := sdk.ContainerList(ctx, client.ContainerListOptions{All: true, Filters: client.Filters{}.Add("label", owner...)})
				return err
			}, cli: []string{"ps", "-aq", "--filter", "label=" + owner[0]}, pyKey: "list"},
		{name: "read_owner", ours: func() error { return b.res.call("sandbox/read_owner", map[string]string{"sandbox_id": b.sandbox}, nil) },
			raw: func() error { _, err := b.raw.inspect(b.sandbox); return err },
			sdk: func() error {
				_, err := sdk.ContainerInspect(ctx, b.sandbox, client.ContainerInspectOptions{})
				return err
			}, cli: []string{"inspect", "--format", "{{index .Config.Labels \"" + ownerKey + "\"}}", b.sandbox}, pyKey: "inspect"},
		{name: "terminate (missing id)", ours: func() error { return b.res.call("sandbox/terminate", map[string]string{"sandbox_id": missing}, nil) },
			raw: func() error { _, err := b.raw.inspect(missing); return err },
			sdk: func() error {
				_, err := sdk.ContainerInspect(ctx, missing, client.ContainerInspectOptions{})
				if cerrdefs.IsNotFound(err) {
					return nil
				}
				return err
			}, cli: []string{"inspect", missing}, cliOK: []int{1}, pyKey: "missing"},
	}
	// The floor of any out-of-process resident: a child answering each
	// frame at once, doing nothing.
	echo, err := spawnEcho(b.echo)
	if err != nil {
		return nil, err
	}
	defer echo.stop()
	echoCall := func() error { return echo.call("sandbox/list_owned", struct{}{}, nil) }
	py, err := runPython(b.python, map[string]any{"mode": "ops", "n": b.scale(200, 10), "container": b.sandbox, "missing": missing, "labels": owner})
	if err != nil {
		return nil, err
	}
	b.pyOps = py
	var rows []row
	for _, o := range ops {
		series, err := interleavedN(n, o.ours, o.raw, o.sdk, echoCall)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", o.name, err)
		}
		ours, raw, viaSDK, hop := series[0], series[1], series[2], series[3]
		r := row{figure: "per-op overhead over raw: " + o.name, ours: medP99(ours), raw: medP99(raw), goal: "≤ the hop + 150 µs median over raw"}
		if b.cli {
			cli, err := timed(nCLI, dockerCLI(o.cli, o.cliOK...))
			if err != nil {
				return nil, err
			}
			r.cli = medP99(cli)
		}
		if py != nil {
			r.py = medP99(py.samples(o.pyKey))
		}
		dMed, dP99 := ours.median()-raw.median(), ours.p99()-raw.p99()
		r.ratio = fmt.Sprintf("%s median, %s p99; of which the process hop alone (an echo child) %s median, %s p99, and the Go SDK %s median",
			us(dMed), us(dP99), us(hop.median()), us(hop.p99()), us(viaSDK.median()-raw.median()))
		// Issue 12's goal: what the resident adds beyond the process hop
		// every stdio host pays (the echo child) is at most 150 µs.
		r.verdict = verdict(dMed <= hop.median()+150*time.Microsecond)
		rows = append(rows, r)
	}
	return rows, nil
}

// underKeeper is `true` under the keeper as the provider starts it, with a
// token of its own (a run's token derives its mark, which execs at once
// must not share).
func underKeeper() []string {
	return keeper.Run{Token: keeper.NewToken()}.Command([]string{"true"})
}

// execTrue: the round trip of `true` in a running sandbox.
//
// A third series runs `true` raw under the keeper ("keeper run" by docker
// exec, with its control stream held open): the floor of the docker exec
// path (the exec=exec fallback), which the keeper channel does not pay.
func (b *bench) execTrue() ([]row, error) {
	fns := []func() error{
		func() error { return b.res.exec(b.sandbox, "true") },
		func() error { _, _, err := b.raw.exec(b.sandbox, []string{"true"}); return err },
		func() error {
			code, _, err := b.raw.execAttached(b.sandbox, underKeeper(), true)
			if err == nil && code != 0 {
				err = fmt.Errorf("keeper run true: exit %d", code)
			}
			return err
		}}
	series, err := interleavedBlocks(b.scale(200, 20), 10, fns...)
	if err != nil {
		return nil, err
	}
	// The same, one by one: ours then runs in the tail of a raw exec.
	alternated, err := interleavedN(b.scale(100, 10), fns[0], fns[1])
	if err != nil {
		return nil, err
	}
	ours, raw, keeper := series[0], series[1], series[2]
	// Issue 12's goal: over the keeper channel an exec is one message
	// round trip and one fork in the sandbox, not three engine calls and a
	// runc exec.
	r := row{figure: "exec round trip of `true`", ours: medP99(ours), raw: medP99(raw), goal: "≤ 0.05x raw; ≤ 0.8x docker CLI"}
	om, rm := ours.median(), raw.median()
	ok := ratio(om, rm) <= 0.05
	r.ratio = fmt.Sprintf("%.2fx raw (in blocks of 10; one by one, right after a raw exec: %s, %.2fx)", ratio(om, rm),
		ms(alternated[0].median()), ratio(alternated[0].median(), alternated[1].median()))
	if b.cli {
		cli, err := timed(b.scale(20, 3), dockerCLI([]string{"exec", b.sandbox, "true"}))
		if err != nil {
			return nil, err
		}
		r.cli = medP99(cli)
		r.ratio += fmt.Sprintf(", %.2fx CLI", ratio(om, cli.median()))
		ok = ok && ratio(om, cli.median()) <= 0.8
	}
	if b.pyOps != nil {
		r.py = medP99(b.pyOps.samples("exec"))
	}
	lag, err := timedValues(b.scale(50, 10), func() (time.Duration, error) { return b.raw.execLag(b.sandbox, []string{"true"}) })
	if err != nil {
		return nil, err
	}
	r.ratio += fmt.Sprintf("; engine marks the exec done %s (p99 %s) after its stream ends", ms(lag.median()), ms(lag.p99()))
	r.ratio += fmt.Sprintf("; raw under the keeper %s (p99 %s), %.2fx raw: the docker exec path's floor, which ours is %.2fx of",
		ms(keeper.median()), ms(keeper.p99()), ratio(keeper.median(), rm), ratio(om, keeper.median()))
	r.verdict = verdict(ok)
	return []row{r}, nil
}

// createToExec: create a sandbox from a present image, then the first exec
// answered. Removal is outside the timing.
func (b *bench) createToExec() ([]row, error) {
	n := b.scale(10, 2)
	var made []string
	defer func() {
		for _, id := range made {
			_ = b.raw.remove(id)
		}
	}()
	ours, raw, err := interleaved(n,
		func() error {
			id, err := b.res.createSandbox(map[string]any{"image": b.image})
			if err != nil {
				return err
			}
			made = append(made, id)
			return b.res.exec(id, "true")
		},
		func() error {
			id, err := b.raw.runContainer(b.image, b.rawLabels(), []string{"sleep", "3600"}, nil, true)
			if id != "" {
				made = append(made, id)
			}
			if err != nil {
				return err
			}
			_, _, err = b.raw.exec(id, []string{"true"})
			return err
		})
	if err != nil {
		return nil, err
	}
	r := row{figure: "create (image present) → first exec answered", ours: medP99(ours), raw: medP99(raw), goal: "≤ 1.05x raw"}
	r.ratio = fmt.Sprintf("%.2fx raw", ratio(ours.median(), raw.median()))
	r.verdict = verdict(ratio(ours.median(), raw.median()) <= 1.05)
	if b.cli {
		cli, err := timed(b.scale(5, 1), func() error {
			out, err := exec.Command("docker", "run", "-d", "--network", "none", "--label", runLabel+"="+b.runID, b.image, "sleep", "3600").Output()
			if err != nil {
				return fmt.Errorf("docker run: %w", err)
			}
			id := strings.TrimSpace(string(out))
			made = append(made, id)
			return dockerCLI([]string{"exec", id, "true"})()
		})
		if err != nil {
			return nil, err
		}
		r.cli = medP99(cli)
	}
	py, err := runPython(b.python, map[string]any{"mode": "create", "n": b.scale(5, 1), "image": b.image, "labelmap": b.rawLabels()})
	if err != nil {
		return nil, err
	}
	if py != nil {
		r.py = medP99(py.samples("create"))
	}
	return []row{r}, nil
}

// concurrent: n execs of `true` at once; wall time and the spread of their
// latencies.
func (b *bench) concurrent() ([]row, error) {
	n := b.scale(100, 20)
	rounds := b.scale(5, 1)
	var oursWall, rawWall, keeperWall samples
	var oursLat, rawLat samples
	for i := range rounds + b.scale(1, 0) {
		warm := i < b.scale(1, 0)
		wall, lat, err := fanOut(n, func() error { return b.res.exec(b.sandbox, "true") })
		if err != nil {
			return nil, err
		}
		rwall, rlat, err := fanOut(n, func() error { _, _, err := b.raw.exec(b.sandbox, []string{"true"}); return err })
		if err != nil {
			return nil, err
		}
		// The same fan-out raw under the keeper: the share of the wall
		// that is the keeper's per-exec start, on cores shared with the engine.
		kwall, _, err := fanOut(n, func() error { _, _, err := b.raw.execAttached(b.sandbox, underKeeper(), true); return err })
		if err != nil {
			return nil, err
		}
		if !warm {
			oursWall, rawWall, keeperWall = append(oursWall, wall), append(rawWall, rwall), append(keeperWall, kwall)
			oursLat, rawLat = append(oursLat, lat...), append(rawLat, rlat...)
		}
	}
	spread := func(s samples) float64 { return ratio(s.p99(), s.median()) }
	r := row{figure: fmt.Sprintf("%d concurrent execs of `true`: wall (p99/p50)", n),
		ours: fmt.Sprintf("%s (%.2f)", ms(oursWall.median()), spread(oursLat)),
		raw:  fmt.Sprintf("%s (%.2f)", ms(rawWall.median()), spread(rawLat)),
		ratio: fmt.Sprintf("wall %.2fx raw; spread %.2fx raw's; raw under the keeper %s, %.2fx raw", ratio(oursWall.median(), rawWall.median()), spread(oursLat)/spread(rawLat),
			ms(keeperWall.median()), ratio(keeperWall.median(), rawWall.median())),
		goal: "≤ 0.1x raw; p99/p50 ≤ raw's"}
	r.verdict = verdict(ratio(oursWall.median(), rawWall.median()) <= 0.1 && spread(oursLat) <= spread(rawLat))
	return []row{r}, nil
}

// fanOut runs fn n times at once and returns the wall time and each call's
// latency.
func fanOut(n int, fn func() error) (time.Duration, samples, error) {
	var wg sync.WaitGroup
	lat := make(samples, n)
	errs := make([]error, n)
	start := time.Now()
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.Now()
			errs[i] = fn()
			lat[i] = time.Since(t)
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	for _, err := range errs {
		if err != nil {
			return 0, nil, err
		}
	}
	return wall, lat, nil
}

func medianInt(v []int64) int64 {
	s := make(samples, len(v))
	for i, x := range v {
		s[i] = time.Duration(x)
	}
	return int64(s.median())
}

func mb(kb int64) string { return fmt.Sprintf("%.1f MB", float64(kb)/1024) }

func mbText(kb string) string {
	var n int64
	if _, err := fmt.Sscan(kb, &n); err != nil {
		return ""
	}
	return mb(n)
}
