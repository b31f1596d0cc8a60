"""The bridge behind the real resident: `resident --provider external -- python3 -m resident_shim ...`.

A host session drives the resident; the provider is a small shim that runs
each exec as a host subprocess (with kill()). What is checked here is what only
the pair can show: the resident scrubs a credential the shim echoes, a timeout
reaches the shim's kill(), and the process tree goes when the host does.

The binary is $RESIDENT_BIN, else it is built from this checkout (needs go);
without either the tests skip.
"""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import sys

import pytest

from shimclient import PYTHON_DIR, RpcError, ShimProc
from test_shim_docker import engine, image  # noqa: F401  (fixtures)

REPO = PYTHON_DIR.parent
CANARY = "tc_CANARYcanary0123456789"

LOCAL_SHIM = '''
import re, subprocess, threading, time
from resident_shim.contract import ByocError

class Proc:
    def __init__(self, argv, stdin, env):
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True)
        self.stdout = iter(lambda: self.p.stdout.read1(65536), b"")
        self.stderr = iter(lambda: self.p.stderr.read1(65536), b"")
        if stdin is not None:
            threading.Thread(target=self._feed, args=(stdin,), daemon=True).start()
    def _feed(self, stdin):
        for chunk in stdin:
            self.p.stdin.write(chunk); self.p.stdin.flush()
        self.p.stdin.close()
    def wait(self):
        return self.p.wait()
    def kill(self):
        import os, signal
        os.killpg(self.p.pid, signal.SIGKILL)

class Local:
    secret_env_prefixes = ("TESTCLOUD_",)
    token_scrub_regex = re.compile(r"tc_[A-Za-z0-9]{20}")
    def __init__(self):
        self.boxes, self.creds = {}, {}
    def import_and_patch(self): pass
    def apply_auth(self, creds): self.creds = creds
    def install_unauth_hook(self, on_expired): self.on_expired = on_expired
    def create_sandbox(self, spec, install_id, tags=None):
        sid = "local-%d" % (len(self.boxes) + 1)
        self.boxes[sid] = (dict(tags or {}), time.time())
        return sid
    def exec(self, sandbox_id, argv, *, stdin=None, env=None, timeout=None):
        if sandbox_id not in self.boxes:
            raise ByocError("not_found", "no sandbox " + sandbox_id)
        if argv == ["expire"]:
            self.on_expired()  # does not return
        if argv == ["creds"]:
            argv = ["echo", " ".join(self.creds.values())]
        return Proc(argv, stdin, env)
    def list_owned(self, install_id):
        return [{"sandbox_id": k, "tags": t, "created_at": c, "state": "running"} for k, (t, c) in self.boxes.items()]
    def read_owner(self, sandbox_id):
        if sandbox_id not in self.boxes:
            raise ByocError("not_found", "gone")
        return self.boxes[sandbox_id][0].get("resident-install-id")
    def terminate(self, sandbox_id):
        return self.boxes.pop(sandbox_id, None) is not None

PROVIDER = Local()
'''


@pytest.fixture(scope="module")
def resident_bin(tmp_path_factory) -> str:
    given = os.environ.get("RESIDENT_BIN")
    if given:
        return given
    if shutil.which("go") is None or not (REPO / "cmd" / "resident").is_dir():
        pytest.skip("no resident binary ($RESIDENT_BIN) and no go to build one")
    out = tmp_path_factory.mktemp("bin") / "resident"
    subprocess.run(["go", "build", "-o", str(out), "./cmd/resident"], cwd=REPO, check=True)
    helptext = subprocess.run([str(out), "--help"], capture_output=True, text=True)
    if "--provider external" not in helptext.stdout + helptext.stderr:
        pytest.skip("this checkout's resident has no external provider yet")
    return str(out)


@pytest.fixture
def host(resident_bin, tmp_path):
    shim = tmp_path / "provider.py"
    shim.write_text(LOCAL_SHIM)
    h = ShimProc("", argv=[resident_bin, "--provider", "external", "--", sys.executable, "-m", "resident_shim",
                           str(shim), "--name", "local-shim"])
    got = h.call("initialize", {"protocol_version": 1, "install_id": "e2e-%d" % os.getpid(),
                                "credentials": {"TESTCLOUD_TOKEN": CANARY}}, timeout=30)
    assert got["provider"]["name"] == "local-shim"
    yield h
    h.close()


def host_exec(h, sid, argv, exec_id, **kw):
    res = h.call("sandbox/exec", dict({"sandbox_id": sid, "argv": argv, "exec_id": exec_id}, **kw), timeout=30)
    out = b"".join(base64.b64decode(m["params"]["data"]) for m in h.notes
                   if m.get("method") == "exec/output" and m["params"]["exec_id"] == exec_id)
    return res, out


def test_the_resident_scrubs_what_the_shim_echoes(host):
    sid = host.call("sandbox/create", {"spec": {}, "tags": {"app": "e2e"}})["sandbox_id"]
    res, out = host_exec(host, sid, ["creds"], "c1")
    assert res["exit_code"] == 0
    assert CANARY.encode() not in out and b"REDACTED" in out
    owned = host.call("sandbox/list_owned", {})["sandboxes"]
    assert [b["sandbox_id"] for b in owned] == [sid]
    assert host.call("sandbox/terminate", {"sandbox_id": sid}) == {"existed": True}
    host.close()
    assert CANARY.encode() not in host.stderr  # neither the resident nor the bridge logged it
    assert host.junk == b""


def test_on_expired_ends_the_session_with_exit_3(host):
    sid = host.call("sandbox/create", {"spec": {}})["sandbox_id"]
    rid = host.start("sandbox/exec", {"sandbox_id": sid, "argv": ["expire"], "exec_id": "x1"})
    with pytest.raises(RpcError) as e:
        host.answer(rid, timeout=30)
    assert e.value.kind == "unauthorized"
    assert host.proc.wait(30) == 3
    assert [m["method"] for m in host.notes] == ["resident/credentials_expired"]


def test_a_timeout_reaches_the_shim_s_kill(host):
    sid = host.call("sandbox/create", {"spec": {}})["sandbox_id"]
    res, _ = host_exec(host, sid, ["sh", "-c", "sleep 30 & sleep 30"], "t1", timeout_s=0.5)
    assert (res["exit_code"], res["timed_out"]) == (137, True)
    res, out = host_exec(host, sid, ["sh", "-c", "cat; echo done"], "s1", stdin=False)
    assert out == b"done\n"


def test_the_docker_shim_behind_the_resident(resident_bin, engine, image):
    """The reference shim's fixed owner key becomes the session's owner tag."""
    h = ShimProc("", argv=[resident_bin, "--provider", "external", "--", sys.executable, "-m", "resident_shim",
                           str(PYTHON_DIR / "examples" / "docker_shim" / "provider.py"),
                           "--owner-key", "openai4s-install-id"])
    install = "e2e-docker-%d" % os.getpid()
    try:
        got = h.call("initialize", {"protocol_version": 1, "install_id": install}, timeout=60)
        if got["owner_tag"] != "openai4s-install-id":
            pytest.skip("this resident does not adopt a provider's owner_key yet")
        assert got["capabilities"]["write_file"] is False and got["capabilities"]["store"] is True
        sid = h.call("sandbox/create", {"spec": {"image": image}, "tags": {"app": "e2e"}}, timeout=60)["sandbox_id"]
        res, out = host_exec(h, sid, ["sh", "-c", "echo hi; exit 4"], "d1")
        assert (res["exit_code"], out) == (4, b"hi\n")
        owned = h.call("sandbox/list_owned", {})["sandboxes"]
        assert [(b["sandbox_id"], b["tags"]) for b in owned] == [(sid, {"app": "e2e", "openai4s-install-id": install})]
        assert h.call("sandbox/terminate", {"sandbox_id": sid}) == {"existed": True}
    finally:
        for c in engine.api.containers(all=True, filters={"label": "openai4s-install-id=" + install}):
            engine.api.remove_container(c["Id"], force=True)
        h.close()
    assert h.junk == b""
