# The direct side of resident-bench's shim figure: the reference Docker
# shim (python/examples/docker_shim) loaded in this interpreter, its SDK
# call made directly, as a Python harness without the resident would. It
# creates one sandbox, then answers each line on stdin with one exec of
# `true`, timed in-process (so the pipe to the benchmark is not counted),
# as the microseconds on one line of stdout. At EOF it removes the sandbox.
#
#   python3 -c "$(cat shim_direct.py)" SHIM_PATH IMAGE INSTALL_ID
import importlib.util
import sys
import time

shim_path, image, install_id = sys.argv[1:4]
spec = importlib.util.spec_from_file_location("docker_shim_direct", shim_path)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
shim = mod.PROVIDER
shim.import_and_patch()
sid = shim.create_sandbox({"image": image}, install_id, {})
try:
    print("ready", flush=True)
    for _ in sys.stdin:
        t0 = time.perf_counter()
        r = shim.exec(sid, ["true"])
        for stream in (r.stdout, r.stderr):
            for _chunk in stream:
                pass
        code = r.wait()
        took = (time.perf_counter() - t0) * 1e6
        if code != 0:
            print("exit %d" % code, flush=True)
            break
        print("%.1f" % took, flush=True)
finally:
    shim.terminate(sid)
