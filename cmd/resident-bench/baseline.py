# The docker-py baseline of resident-bench: each operation the benchmark
# measures, done with the SDK's low-level API the way a Python resident
# would, timed in-process (so interpreter start-up is not counted here).
# Prints one JSON object: lists of durations in microseconds, by operation.
import json
import sys
import time

t0 = time.perf_counter()
import docker  # noqa: E402

cfg = json.loads(sys.argv[1])
api = docker.from_env().api
out = {"import_us": (time.perf_counter() - t0) * 1e6}


def rss_kb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def timed(n, fn):
    times = []
    for _ in range(n):
        s = time.perf_counter()
        fn()
        times.append((time.perf_counter() - s) * 1e6)
    return times


def run_exec(cid, argv):
    e = api.exec_create(cid, argv)
    total = 0
    for chunk in api.exec_start(e["Id"], stream=True):
        total += len(chunk)
    api.exec_inspect(e["Id"])
    return total


api.ping()
out["rss_kb"] = rss_kb()
mode = cfg["mode"]
n = cfg.get("n", 0)
if mode == "ops":
    cid, missing = cfg["container"], cfg["missing"]
    out["list"] = timed(n, lambda: api.containers(all=True, filters={"label": cfg["labels"]}))
    out["inspect"] = timed(n, lambda: api.inspect_container(cid))

    def inspect_missing():
        try:
            api.inspect_container(missing)
        except docker.errors.NotFound:
            pass

    out["missing"] = timed(n, inspect_missing)
    out["exec"] = timed(n, lambda: run_exec(cid, ["true"]))
elif mode == "stream":
    out["bytes"] = run_exec(cfg["container"], cfg["argv"])
    out["stream"] = timed(n, lambda: run_exec(cfg["container"], cfg["argv"]))
elif mode == "create":
    created = []

    def create_exec():
        c = api.create_container(cfg["image"], ["sleep", "3600"], labels=cfg["labelmap"],
                                 host_config=api.create_host_config(network_mode="none"))
        created.append(c["Id"])
        api.start(c["Id"])
        run_exec(c["Id"], ["true"])

    try:
        out["create"] = timed(n, create_exec)
    finally:
        for c in created:
            api.remove_container(c, force=True, v=True)
print(json.dumps(out))
