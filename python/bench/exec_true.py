"""Exec of `true` through resident's Python package against docker-py doing
the same directly (a full `docker exec`: create, start, inspect), side by
side in one run on the same engine and image.

    python3 python/bench/exec_true.py [-n 50]   (needs DOCKER_HOST and RESIDENT_BIN)

It prints the median per exec of each and their ratio; it asserts nothing.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

import docker  # noqa: E402

import resident  # noqa: E402
from conftest import busybox_image  # noqa: E402


def timed(fn, n):
    fn()  # warm
    samples = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - t0)
    return statistics.median(samples)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=50)
    args = ap.parse_args()
    cli = docker.DockerClient(base_url=os.environ["DOCKER_HOST"])
    image = busybox_image(cli)
    container = cli.containers.run(image, ["sleep", "3600"], detach=True, network_mode="none", auto_remove=True)
    try:
        def via_docker_py():
            assert container.exec_run(["true"]).exit_code == 0

        with resident.Client(provider="docker", install_id="bench-py") as rc:
            sid = rc.create_sandbox({"image": image})
            try:
                def via_resident():
                    assert rc.exec(sid, ["true"]).exit_code == 0

                # interleave the two so machine noise hits both alike
                r, d = [], []
                for _ in range(3):
                    r.append(timed(via_resident, args.n // 3 or 1))
                    d.append(timed(via_docker_py, args.n // 3 or 1))
            finally:
                rc.terminate(sid)
    finally:
        container.kill()
    res, dpy = statistics.median(r), statistics.median(d)
    print(f"exec true, median of {args.n}: resident (python) {res * 1e3:.2f} ms, "
          f"docker-py {dpy * 1e3:.2f} ms, ratio {res / dpy:.2f}x")


if __name__ == "__main__":
    main()
