"""The reference Docker shim (python/examples/docker_shim) through the bridge, on a real engine.

Start one with `RESIDENT_ENGINE_DIR=/tmp/engine-x .ci/docker-engine start` and set
DOCKER_HOST. The image is made from nothing (Debian's static busybox), since no
registry is reachable. Without an engine the tests skip, unless CI=true.
"""

from __future__ import annotations

import base64
import os
import time
from typing import Iterator

import pytest

from shimclient import PYTHON_DIR, RpcError, ShimProc

SHIM = str(PYTHON_DIR / "examples" / "docker_shim" / "provider.py")
OWNER_KEY = "openai4s-install-id"
from conftest import _docker_client, busybox_image  # noqa: E402


def _engine():
    # conftest's own engine check, kept as this module's name for its callers
    return _docker_client()



@pytest.fixture(scope="module")
def engine():
    cli = _engine()
    if cli is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but no Docker engine answers at $DOCKER_HOST")
        pytest.skip("no Docker engine (set DOCKER_HOST)")
    return cli


@pytest.fixture(scope="module")
def image(engine) -> str:
    return busybox_image(engine)


@pytest.fixture
def shim(engine, request) -> Iterator[ShimProc]:
    s = ShimProc(SHIM, "--owner-key", OWNER_KEY)
    got = s.init(exec_window_bytes=1 << 16)
    assert got["name"] == "docker-shim" and got["owner_key"] == OWNER_KEY
    assert got["fixed_owners"] is True  # labels are fixed at create
    s.install_id = "pytest-%d-%s" % (os.getpid(), request.node.name[:40].replace("[", "-").replace("]", ""))
    yield s
    for c in engine.api.containers(all=True, filters={"label": "%s=%s" % (OWNER_KEY, s.install_id)}):
        engine.api.remove_container(c["Id"], force=True)
    s.close()
    assert s.junk == b""


def create(s: ShimProc, image: str, **spec) -> str:
    spec["image"] = image
    return s.call("sandbox/create", {"spec": spec, "owner": {"key": OWNER_KEY, "install_id": s.install_id},
                                     "tags": {"app": "pytest"}}, timeout=60)["sandbox_id"]


_n = [0]


def run(s: ShimProc, sid: str, argv, **kw) -> dict:
    _n[0] += 1
    eid = "x%d" % _n[0]
    ex = s.run(eid, sid, argv, **kw)
    ex["stdout"], ex["stderr"] = s.output(eid), s.output(eid, "stderr")
    return ex


def test_describe(shim):
    pass  # the fixture checks name and owner_key


def test_sandbox_lifecycle(shim, image, engine):
    sid = create(shim, image)
    owned = shim.call("sandbox/list_owned", {"owner": {"key": OWNER_KEY, "install_id": shim.install_id}})["sandboxes"]
    assert [(x["sandbox_id"], x["tags"], x["state"]) for x in owned] == [
        (sid, {"app": "pytest", OWNER_KEY: shim.install_id}, "running")]
    other = shim.call("sandbox/list_owned", {"owner": {"key": OWNER_KEY, "install_id": shim.install_id[:-1]}})
    assert other == {"sandboxes": []}  # never a prefix match
    assert shim.call("sandbox/read_owner", {"sandbox_id": sid, "owner_key": OWNER_KEY}) == {"owner": shim.install_id}
    info = engine.api.inspect_container(sid)
    assert info["HostConfig"]["NetworkMode"] == "none"
    assert shim.call("sandbox/terminate", {"sandbox_id": sid}) == {"existed": True}
    assert shim.call("sandbox/terminate", {"sandbox_id": sid}) == {"existed": False}
    with pytest.raises(RpcError) as e:
        shim.call("sandbox/read_owner", {"sandbox_id": sid, "owner_key": OWNER_KEY})
    assert e.value.kind == "not_found"


def test_a_sandbox_stops_itself_at_its_lifetime(shim, image):
    sid = create(shim, image, lifetime_s=1)
    deadline = time.monotonic() + 20
    while True:
        owned = shim.call("sandbox/list_owned", {"owner": {"key": OWNER_KEY, "install_id": shim.install_id}})
        state = owned["sandboxes"][0]["state"]
        if state != "running" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert (owned["sandboxes"][0]["sandbox_id"], state) == (sid, "expired")


def test_exec(shim, image):
    sid = create(shim, image, env={"GREETING": "hello"}, workdir="/tmp")
    ex = run(shim, sid, ["sh", "-c", 'echo "$GREETING $EXTRA"; echo oops >&2; pwd; exit 7'], env={"EXTRA": "there"})
    assert (ex["code"], ex["stdout"], ex["stderr"]) == (7, b"hello there\n/tmp\n", b"oops\n")
    assert run(shim, sid, ["pwd"], cwd="/etc")["stdout"] == b"/etc\n"
    assert run(shim, sid, ["pwd"], cwd="etc")["stdout"] == b"/etc\n"  # relative to the sandbox root
    big = run(shim, sid, ["sh", "-c", "head -c 300000 /dev/zero"])  # beyond the 64 KiB window
    assert (big["code"], len(big["stdout"])) == (0, 300000)


def test_exec_stdin(shim, image):
    sid = create(shim, image)
    shim.call("exec/start", {"exec_id": "in", "sandbox_id": sid, "argv": ["sh", "-c", "cat; echo end"],
                             "env": {}, "cwd": "", "stdin": True})
    shim.call("exec/stdin", {"exec_id": "in", "data": base64.b64encode(b"through stdin\n").decode()})
    shim.call("exec/stdin", {"exec_id": "in", "eof": True})
    assert shim.exit_of("in")["code"] == 0
    assert shim.output("in") == b"through stdin\nend\n"


def test_exec_kill_stops_the_process_tree(shim, image):
    sid = create(shim, image)
    shim.call("exec/start", {"exec_id": "k", "sandbox_id": sid, "env": {}, "cwd": "", "stdin": False,
                             # the parent waits for its children: killed one by one, it could see them go
                             # and exit 0 by itself before its own turn came
                             "argv": ["sh", "-c", "trap '' TERM; sh -c 'sleep 1001 & wait' & sleep 1002 & "
                                                  "echo started; wait"]})
    shim.wait_note(lambda m: m.get("method") == "exec/output" and m["params"]["exec_id"] == "k")
    t0 = time.monotonic()
    assert shim.call("exec/kill", {"exec_id": "k"}) == {}
    assert shim.exit_of("k")["code"] == 137
    assert time.monotonic() - t0 < 5
    left = run(shim, sid, ["sh", "-c", "ps -o args | grep '[s]leep 100' || true"])
    assert left["stdout"] == b""


def test_a_missing_executable_is_the_shell_s_exit_127(shim, image):
    sid = create(shim, image)
    ex = run(shim, sid, ["no-such-binary"])
    assert ex["code"] == 127 and b"no-such-binary" in ex["stderr"]


def test_store(shim, image, engine):
    sid = create(shim, image, workdir="/w", volumes=[{"name": "work", "path": "data"}])  # at /w/data
    try:
        made = run(shim, sid, ["sh", "-c", "cd /w/data && mkdir -p sub && printf hello > hi.txt && "
                                           "head -c 200000 /dev/zero > sub/big && ln -s /etc esc && ln -s hi.txt link"])
        assert made["code"] == 0, made
        owner = {"key": OWNER_KEY, "install_id": shim.install_id}
        vols = shim.call("store/list_volumes", {"owner": owner})["volumes"]
        assert [v["name"] for v in vols] == ["work"]
        stranger = {"key": OWNER_KEY, "install_id": shim.install_id + "-other"}
        assert shim.call("store/list_volumes", {"owner": stranger}) == {"volumes": []}
        with pytest.raises(RpcError) as e:  # nor can it mount it, or make one under its name
            shim.call("sandbox/create", {"spec": {"image": image, "volumes": [{"name": "work", "path": "/d"}]},
                                         "owner": stranger, "tags": {}}, timeout=60)
        assert (e.value.kind, e.value.message) == ("not_found", "no volume 'work'")
        assert shim.call("sandbox/list_owned", {"owner": stranger}) == {"sandboxes": []}
        with pytest.raises(RpcError) as e:
            shim.call("store/read_file", {"owner": stranger, "root": "work", "path": "hi.txt", "stream_id": "x"})
        assert e.value.kind == "not_found"  # another install's volume is missing, not forbidden
        got = shim.call("store/list_dir", {"owner": owner, "root": "work", "path": "", "limit": 100}, timeout=30)
        assert {e["name"]: e["type"] for e in got["entries"]} == {
            "sub": "dir", "hi.txt": "file", "esc": "symlink", "link": "symlink"}
        assert got["truncated"] is False
        assert [e["name"] for e in shim.call("store/list_dir", {"owner": owner, "root": "work", "path": "sub"})[
            "entries"]] == ["big"]
        shim.call("store/read_file", {"owner": owner, "root": "work", "path": "sub/big", "stream_id": "r1"}, timeout=30)
        data = b"".join(base64.b64decode(m["params"]["data"]) for m in shim.notes
                        if m.get("method") == "store/data" and m["params"]["stream_id"] == "r1")
        assert data == b"\0" * 200000
        for path, kind in (("esc", "invalid_request"), ("esc/passwd", "invalid_request"), ("link", "invalid_request"),
                           ("../x", "invalid_request"), ("sub", "invalid_request"), ("nope", "not_found")):
            with pytest.raises(RpcError) as e:
                shim.call("store/read_file", {"owner": owner, "root": "work", "path": path, "stream_id": "bad"},
                          timeout=30)
            assert e.value.kind == kind, path
        with pytest.raises(RpcError) as e:
            shim.call("store/list_dir", {"owner": owner, "root": "work", "path": "esc"}, timeout=30)
        assert e.value.kind == "invalid_request"
        with pytest.raises(RpcError) as e:
            shim.call("store/list_dir", {"owner": owner, "root": "nothere", "path": ""}, timeout=30)
        assert e.value.kind == "not_found"
    finally:
        shim.call("sandbox/terminate", {"sandbox_id": sid})
        for v in engine.api.volumes(filters={"label": "%s=%s" % (OWNER_KEY, shim.install_id)})["Volumes"] or []:
            engine.api.remove_volume(v["Name"], force=True)


def test_an_exclusive_exec_runs_alone(shim, image):
    sid = create(shim, image)
    shim.call("exec/start", {"exec_id": "victim", "sandbox_id": sid, "argv": ["sh", "-c", "echo up; exec sleep 1000"],
                             "env": {}, "cwd": "", "stdin": False})
    shim.wait_note(lambda m: m.get("method") == "exec/output" and m["params"]["exec_id"] == "victim")
    run(shim, sid, ["sh", "-c", "(while :; do sleep 0.05; done) &"])  # a service left running
    ex = run(shim, sid, ["sh", "-c", "ps -o args | grep -c '[s]leep 0.05' || true"], exclusive=True)
    assert (ex["code"], ex["stdout"]) == (0, b"0\n")
    assert shim.exit_of("victim") == {"exec_id": "victim", "code": 137, "killed": True}
    assert shim.call("sandbox/read_owner", {"sandbox_id": sid, "owner_key": OWNER_KEY})  # still alive
    assert run(shim, sid, ["true"])["code"] == 0


def test_a_long_exec_asks_the_engine_less_often_the_longer_it_runs(engine, image):
    # wait() runs beside the streams (the bridge calls it at once), so every poll is an
    # engine inspect for nothing while the command runs: at a fixed 0.1 s a 3 s sleep
    # cost 30 of them, an hour-long one 36000.
    from resident_shim.app import load

    _, prov = load(SHIM)  # in this process, as a harness without the resident would
    prov.import_and_patch()
    sid = prov.create_sandbox({"image": image}, "pytest-polls-%d" % os.getpid(), {})
    try:
        real, asked = prov.api.exec_inspect, []

        def counted(exec_id):
            asked.append(exec_id)
            return real(exec_id)

        prov.api.exec_inspect = counted
        r = prov.exec(sid, ["sleep", "3"])
        assert r.wait() == 0
        assert b"".join(r.stdout) == b"" and b"".join(r.stderr) == b""
        # 0.1, 0.2, 0.4, 0.8 then 1 s apart: about six asks, the exit's among them
        assert len(asked) <= 10, asked
    finally:
        prov.terminate(sid)
