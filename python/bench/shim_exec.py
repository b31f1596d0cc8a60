"""Exec of `true` through the resident and the Python shim bridge, against
the same shim's SDK call made directly from Python, side by side in one run
on one engine and image (issue goal: the bridge path ≤ direct + 2 ms median).

    python3 python/bench/shim_exec.py [-n 30]   (needs DOCKER_HOST and RESIDENT_BIN)

It prints the medians and their difference; it asserts nothing. The figure of
record is `go run ./cmd/resident-bench --only shim-exec`, which times the same
two paths interleaved (the bridged one from a Go host) and, through a shim
whose exec returns at once, the hop alone; this script stays as tests/run's
check that the Python host package drives the bridge end to end.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE / "tests"))

import docker  # noqa: E402

import resident  # noqa: E402
from conftest import busybox_image  # noqa: E402

SHIM = HERE / "examples" / "docker_shim" / "provider.py"


def load_shim():
    spec = importlib.util.spec_from_file_location("docker_shim_bench", SHIM)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)  # type: ignore[union-attr]
    return mod.PROVIDER


def timed(fn, n):
    fn()
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t0)
    return statistics.median(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=30)
    args = ap.parse_args()
    image = busybox_image(docker.DockerClient(base_url=os.environ["DOCKER_HOST"]))
    owner_key = "bench-install-id"
    os.environ["DOCKER_SHIM_OWNER_KEY"] = owner_key
    shim = load_shim()
    shim.import_and_patch()
    direct_id = shim.create_sandbox({"image": image}, "bench-direct", {})
    env = dict(os.environ, PYTHONPATH=str(HERE))
    try:
        def direct():
            r = shim.exec(direct_id, ["true"])
            for stream in (r.stdout, r.stderr):
                for _ in stream:
                    pass
            assert r.wait() == 0

        with resident.Client(provider="external", install_id="bench-bridge", env=env, provider_args=[
                "--", sys.executable, "-m", "resident_shim", str(SHIM), "--owner-key", owner_key]) as rc:
            sid = rc.create_sandbox({"image": image})
            try:
                def bridged():
                    assert rc.exec(sid, ["true"]).exit_code == 0

                d, b = [], []
                for _ in range(3):
                    d.append(timed(direct, max(1, args.n // 3)))
                    b.append(timed(bridged, max(1, args.n // 3)))
            finally:
                rc.terminate(sid)
    finally:
        shim.terminate(direct_id)
    dm, bm = statistics.median(d), statistics.median(b)
    print(f"exec true, median of {args.n}: through resident + shim bridge {bm * 1e3:.2f} ms, "
          f"the shim's SDK call directly {dm * 1e3:.2f} ms, difference {(bm - dm) * 1e3:+.2f} ms (goal ≤ +2 ms)")


if __name__ == "__main__":
    main()
