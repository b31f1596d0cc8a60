"""The bridge as a real child process, driven over its stdio by a tiny resident (shimclient)."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import time

import pytest

from shimclient import PYTHON_DIR, RpcError, ShimProc, spawn  # noqa: F401

# A shim of the original contract, configurable per test through class attributes.
BASE = '''
import re, threading, time
from resident_shim.contract import ByocError

class Result:
    def __init__(self, out=(), err=(), code=0, block=None):
        self.stdout, self.stderr, self.code, self.block = out, err, code, block
    def wait(self):
        if self.block is not None:
            self.block.wait()
        return self.code

class Provider:
    secret_env_prefixes = ("TESTCLOUD_",)
    token_scrub_regex = re.compile(r"tc_[A-Za-z0-9]{20}")
    version = "1.2.3"

    def __init__(self):
        self.sandboxes = {}
        self.creds = {}
    def import_and_patch(self):
        self.patched = True
    def apply_auth(self, creds):
        self.creds = creds
    def install_unauth_hook(self, on_expired):
        self.on_expired = on_expired
    def create_sandbox(self, spec, install_id, tags=None):
        sid = "sb-%d" % (len(self.sandboxes) + 1)
        self.sandboxes[sid] = {"spec": spec, "tags": dict(tags or {}), "order": list(tags or {})}
        return sid
    def exec(self, sandbox_id, argv, *, stdin=None, env=None, timeout=None):
        if sandbox_id not in self.sandboxes and sandbox_id != "any":
            raise ByocError("not_found", "no sandbox " + sandbox_id)
        cmd = argv[0]
        if cmd == "echo":
            return Result([" ".join(argv[1:]).encode() + b"\\n"])
        if cmd == "cat":
            return Result(iter(stdin))
        if cmd == "flood":  # argv[1] bytes of stdout in 1 KiB chunks
            n = int(argv[1])
            return Result((b"x" * 1024 for _ in range(n // 1024)))
        if cmd == "fail":
            return Result(code=int(argv[1]))
        if cmd == "sigkilled":
            return Result(code=-9)
        if cmd == "creds":
            return Result([repr(sorted(self.creds.items())).encode()])
        raise ByocError("invalid_request", "no such command " + cmd)
    def list_owned(self, install_id):
        return [dict(sandbox_id=k, **v) for k, v in self.sandboxes.items()] + [
            {"id": "other", "tags": {"t-install-id": "someone-else"}},
            {"id": "untagged", "created_at": 1700000000, "state": "running"}]
    def read_owner(self, sandbox_id):
        if sandbox_id == "ownerless":
            return None
        if sandbox_id not in self.sandboxes:
            raise ByocError("not_found", "gone")
        return self.sandboxes[sandbox_id]["tags"].get("t-install-id")
    def terminate(self, sandbox_id):
        if self.sandboxes.pop(sandbox_id, None) is None:
            raise ByocError("not_found", "gone")

PROVIDER = Provider()
'''

OWNER = {"key": "t-install-id", "install_id": "inst-1"}


def started(spawn, extra: str = "", *args: str, **init) -> ShimProc:
    s = spawn(BASE + extra, "--owner-key", "t-install-id", *args)
    s.init(**init)
    return s


def test_handshake_describes_the_shim(spawn):
    s = spawn(BASE, "--owner-key", "t-install-id", "--name", "testcloud")
    got = s.init()
    assert got["protocol_version"] == 1
    assert (got["name"], got["version"], got["owner_key"]) == ("testcloud", "1.2.3", "t-install-id")
    assert got["capabilities"]["store"] is False and got["capabilities"]["write_file"] is False
    assert got["capabilities"]["stdin"] is True and got["capabilities"]["credential_expiry"] is True
    assert got["secrets"] == {"env_prefixes": ["TESTCLOUD_"], "token_patterns": [
        {"name": "testcloud-token", "regexp": "tc_[A-Za-z0-9]{20}", "prefixes": ["tc_"], "max_len": 23}]}
    assert "fixed_owners" not in got  # tags that may change are asked for every time


def test_a_shim_with_fixed_owner_tags_says_so(spawn):
    s = spawn(BASE + "\nPROVIDER.owner_tags_fixed = True\n")
    assert s.init()["fixed_owners"] is True


def test_name_comes_from_the_shim_directory(spawn, tmp_path):
    d = tmp_path / "skills" / "remote-compute-acme"
    d.mkdir(parents=True)
    (d / "provider.py").write_text(BASE)
    s = ShimProc(str(d / "provider.py"))
    try:
        got = s.init()
        assert got["name"] == "acme" and "owner_key" not in got
    finally:
        s.close()


def test_describe_without_a_session(tmp_path):
    (tmp_path / "provider.py").write_text(BASE)
    out = subprocess.run([sys.executable, "-m", "resident_shim", str(tmp_path / "provider.py"), "--owner-key", "k-install-id"],
                         env=dict(os.environ, PYTHONPATH=str(PYTHON_DIR), RESIDENT_PROVIDER_DESCRIBE="1"),
                         stdin=subprocess.DEVNULL, capture_output=True, timeout=30)
    assert out.returncode == 0, out.stderr
    head, _, body = out.stdout.partition(b"\r\n\r\n")
    assert head == b"Content-Length: %d" % len(body)
    assert json.loads(body)["owner_key"] == "k-install-id"


def test_version_and_order(spawn):
    s = spawn(BASE)
    with pytest.raises(RpcError) as e:
        s.call("sandbox/list_owned", {"owner": OWNER})
    assert e.value.kind == "invalid_request" and "initialize first" in e.value.message
    with pytest.raises(RpcError) as e:
        s.init(protocol_version=2)
    assert e.value.kind == "invalid_request"
    with pytest.raises(RpcError) as e:
        s.call("no/such")
    assert e.value.code == -32601


def test_sandbox_ops(spawn):
    s = started(spawn)
    assert s.call("auth/apply", {"credentials": {"k": "v"}}) == {}
    sid = s.call("sandbox/create", {"spec": {"image": "img"}, "owner": OWNER, "tags": {"app": "x"}})["sandbox_id"]
    listed = s.call("sandbox/list_owned", {"owner": OWNER})["sandboxes"]
    mine = {x["sandbox_id"]: x for x in listed}
    assert set(mine) == {sid, "untagged"}  # another install's sandbox is dropped
    assert mine[sid]["tags"] == {"app": "x", "t-install-id": "inst-1"}
    assert list(mine[sid]["tags"])[-1] == "t-install-id"  # the owner tag merged last
    assert mine["untagged"]["tags"] == {"t-install-id": "inst-1"}
    assert mine["untagged"]["created_at"] == "2023-11-14T22:13:20.000000Z"
    assert mine["untagged"]["state"] == "running"
    assert s.call("sandbox/read_owner", {"sandbox_id": sid, "owner_key": "t-install-id"}) == {"owner": "inst-1"}
    assert s.call("sandbox/read_owner", {"sandbox_id": "ownerless", "owner_key": "t-install-id"}) == {"owner": ""}
    with pytest.raises(RpcError) as e:
        s.call("sandbox/read_owner", {"sandbox_id": "nope", "owner_key": "t-install-id"})
    assert e.value.kind == "not_found"
    assert s.call("sandbox/terminate", {"sandbox_id": sid}) == {"existed": True}
    assert s.call("sandbox/terminate", {"sandbox_id": sid}) == {"existed": False}
    with pytest.raises(RpcError) as e:
        s.call("sandbox/write_file", {"sandbox_id": sid, "path": "/x", "data": "", "mode": 420})
    assert e.value.kind == "invalid_request"


def test_an_owner_key_other_than_the_shim_s_is_refused(spawn):
    s = started(spawn)
    other = {"key": "resident-install-id", "install_id": "inst-1"}
    with pytest.raises(RpcError) as e:
        s.call("sandbox/create", {"spec": {}, "owner": other, "tags": {}})
    assert e.value.kind == "invalid_request" and "t-install-id" in e.value.message
    assert s.call("sandbox/list_owned", {"owner": other}) == {"sandboxes": []}  # none carries that key
    sid = s.call("sandbox/create", {"spec": {}, "owner": OWNER, "tags": {}})["sandbox_id"]
    # read_owner under another key: the shim writes no tag there
    assert s.call("sandbox/read_owner", {"sandbox_id": sid, "owner_key": "resident-install-id"}) == {"owner": ""}
    with pytest.raises(RpcError) as e:
        s.call("sandbox/read_owner", {"sandbox_id": "nope", "owner_key": "resident-install-id"})
    assert e.value.kind == "not_found"


@pytest.mark.parametrize("key", ["openai4s", "dev.resident.x-install-id", "-install-id", "a b-install-id"])
def test_an_owner_key_that_is_not_owner_shaped_is_a_start_up_error(spawn, key):
    s = spawn(BASE, "--owner-key", key)
    assert s.proc.wait(30) == 2
    s.close()
    assert b"--owner-key" in s.stderr


@pytest.mark.parametrize("key", ["t-install-id", "T-INSTALL-ID", "evil-install-id", "dev.resident.managed"])
def test_an_incoming_tag_never_decides_ownership(spawn, key):
    s = started(spawn)
    with pytest.raises(RpcError) as e:
        s.call("sandbox/create", {"spec": {}, "owner": OWNER, "tags": {key: "intruder", "k": "v"}})
    assert e.value.kind == "invalid_request" and key in e.value.message
    assert [b["sandbox_id"] for b in s.call("sandbox/list_owned", {"owner": OWNER})["sandboxes"]] == ["untagged"]


def test_store_ops_absent_are_invalid_request(spawn):
    s = started(spawn)
    for method, params in (("store/list_volumes", {}), ("store/list_dir", {"root": "v", "path": ""}),
                           ("store/read_file", {"root": "v", "path": "f", "stream_id": "r"})):
        with pytest.raises(RpcError) as e:
            s.call(method, params)
        assert e.value.kind == "invalid_request" and "no persistent store" in e.value.message


STORE = '''
class WithStore(Provider):
    def list_volumes(self):
        return [{"name": "work", "created_at": "2026-11-30T07:01:04.248463523Z"},
                {"name": "theirs", "tags": {"t-install-id": "someone-else"}},
                {"name": "mine", "labels": {"t-install-id": "inst-1"}}]
    def list_dir(self, root, path, *, limit=None):
        if root not in ("work", "theirs", "mine"):
            raise ByocError("not_found", "no volume " + root)
        return [{"name": "f%d" % i, "type": "file", "size": i, "mtime": 0} for i in range(5)][:limit]
    def read_file(self, root, path):
        return (bytes([65 + i]) * 1000 for i in range(10))
PROVIDER = WithStore()
'''


def test_store_ops(spawn):
    s = spawn(BASE + STORE)
    assert s.init(exec_window_bytes=1500)["capabilities"]["store"] is True
    assert s.call("store/list_volumes", {"owner": OWNER}) == {"volumes": [
        {"name": "work", "created_at": "2026-11-30T07:01:04.248463Z"},
        {"name": "mine", "created_at": "0001-01-01T00:00:00Z"}]}  # another install's volume is not seen
    for method, params in (("store/list_dir", {"root": "theirs", "path": ""}),
                           ("store/read_file", {"root": "theirs", "path": "f", "stream_id": "r0"})):
        with pytest.raises(RpcError) as e:
            s.call(method, dict(params, owner=OWNER))
        assert e.value.kind == "not_found", method  # and is missing, not forbidden
    got = s.call("store/list_dir", {"root": "work", "path": "", "limit": 3})
    assert [e["name"] for e in got["entries"]] == ["f0", "f1", "f2"] and got["truncated"] is True
    assert got["entries"][1] == {"name": "f1", "type": "file", "size": 1, "mtime": "1970-01-01T00:00:00.000000Z"}
    assert s.call("store/list_dir", {"root": "work", "path": "", "limit": 10})["truncated"] is False
    with pytest.raises(RpcError) as e:
        s.call("store/list_dir", {"root": "nope", "path": ""})
    assert e.value.kind == "not_found"
    # read_file streams store/data under a 1500 byte window; the client credits as it reads
    assert s.call("store/read_file", {"root": "work", "path": "f", "stream_id": "r1"}) == {}
    data = b"".join(base64.b64decode(m["params"]["data"]) for m in s.notes if m.get("method") == "store/data")
    assert data == b"".join(bytes([65 + i]) * 1000 for i in range(10))
    assert max(len(base64.b64decode(m["params"]["data"])) for m in s.notes if m.get("method") == "store/data") <= 1500


def test_a_cancelled_read_waiting_for_credit_ends(spawn):
    s = spawn(BASE + STORE)
    s.init(exec_window_bytes=1000)
    s.hold.add("held")
    rid = s.start("store/read_file", {"root": "work", "path": "f", "stream_id": "held"})
    s.wait_note(lambda m: m.get("method") == "store/data")
    s.notify("$/cancelRequest", {"id": rid})
    with pytest.raises(RpcError) as e:
        s.answer(rid)
    assert e.value.kind == "cancelled"
    assert len([m for m in s.notes if m.get("method") == "store/data"]) == 1  # no more after the window
    assert s.call("store/list_volumes")["volumes"]
    assert s.close() == 0


def test_exec_streams_and_exits_once(spawn):
    s = started(spawn)
    sid = s.call("sandbox/create", {"spec": {}, "owner": OWNER, "tags": {}})["sandbox_id"]
    assert s.run("e1", sid, ["echo", "hi", "there"]) == {"exec_id": "e1", "code": 0}
    assert s.output("e1") == b"hi there\n"
    assert s.run("e2", sid, ["fail", "3"])["code"] == 3
    assert s.run("e3", sid, ["sigkilled"]) == {"exec_id": "e3", "code": 137, "signal": "SIGKILL"}
    with pytest.raises(RpcError) as e:
        s.call("exec/start", {"exec_id": "e4", "sandbox_id": "nope", "argv": ["echo"], "env": {}, "cwd": "", "stdin": False})
    assert e.value.kind == "not_found"
    with pytest.raises(RpcError) as e:
        s.call("exec/start", {"exec_id": "e5", "sandbox_id": sid, "argv": ["echo"], "env": {}, "cwd": "/w", "stdin": False})
    assert e.value.kind == "invalid_request" and "cwd" in e.value.message
    assert [m["params"]["exec_id"] for m in s.notes if m.get("method") == "exec/exit"] == ["e1", "e2", "e3"]


def test_a_host_that_grants_no_credit_stalls_that_exec_only(spawn):
    s = started(spawn, exec_window_bytes=4096)
    s.hold.add("slow")
    s.call("exec/start", {"exec_id": "slow", "sandbox_id": "any", "argv": ["flood", str(64 << 10)], "env": {},
                          "cwd": "", "stdin": False})
    assert s.run("fast", "any", ["flood", str(32 << 10)])["code"] == 0  # not held back by the stalled one
    assert len(s.output("fast")) == 32 << 10
    assert len(s.output("slow")) == 4096  # exactly the window, and no exit yet
    assert not [m for m in s.notes if m.get("method") == "exec/exit" and m["params"]["exec_id"] == "slow"]
    s.hold.discard("slow")
    s.credit("slow", 4096)
    assert s.exit_of("slow")["code"] == 0
    assert len(s.output("slow")) == 64 << 10


SLOW_STDERR = '''
class SlowStderr(Provider):
    def exec(self, sandbox_id, argv, *, stdin=None, env=None, timeout=None):
        gate = threading.Event()
        def out():
            yield b"out-1\\n"
            yield b"out-2\\n"
            gate.set()
        def err():
            gate.wait()  # stderr says nothing until stdout is done
            yield b"err\\n"
        return Result(out(), err())
PROVIDER = SlowStderr()
'''


def test_a_slow_stderr_never_blocks_stdout(spawn):
    s = started(spawn, SLOW_STDERR)
    s.run("e", "any", ["x"])
    assert (s.output("e"), s.output("e", "stderr")) == (b"out-1\nout-2\n", b"err\n")


HELD_OPEN = '''
class HeldOpen(Provider):
    def exec(self, sandbox_id, argv, *, stdin=None, env=None, timeout=None):
        def out():  # a background child keeps the stream open after the main process exited
            yield b"main says bye\\n"
            threading.Event().wait()
        return Result(out(), [])
PROVIDER = HeldOpen()
'''


def test_a_stream_held_open_after_the_exit_does_not_hold_the_exit(spawn):
    s = started(spawn, HELD_OPEN)
    t0 = time.monotonic()
    assert s.run("bg", "any", ["x"]) == {"exec_id": "bg", "code": 0}
    assert time.monotonic() - t0 < 3  # a short drain, not forever
    assert s.output("bg") == b"main says bye\n"


LATE_TAIL = '''
class LateTail(Result):
    streams_end_after_exit = 2.0  # the backend closes the streams by then

class RaisingPromise(Result):
    @property
    def streams_end_after_exit(self):
        raise RuntimeError("no idea")

class WordsPromise(Result):
    streams_end_after_exit = "soon"

class WithLateTail(Provider):
    def exec(self, sandbox_id, argv, *, stdin=None, env=None, timeout=None):
        exited = threading.Event()
        def out():  # a loaded backend: the tail arrives a second after the exit
            yield b"head\\n"
            exited.wait()
            time.sleep(1.0)
            yield b"tail\\n"
        base = {"promised": LateTail, "raises": RaisingPromise, "words": WordsPromise}.get(argv[0], Result)
        class Waits(base):
            def wait(self):
                exited.set()
                return 0
        return Waits(out(), [])
PROVIDER = WithLateTail()
'''


def test_a_late_tail_is_delivered_when_the_streams_are_promised_to_end(spawn):
    s = started(spawn, LATE_TAIL)
    assert s.run("p", "any", ["promised"]) == {"exec_id": "p", "code": 0}
    assert s.output("p") == b"head\ntail\n"


@pytest.mark.parametrize("how", ["guessed", "raises", "words"])
def test_without_a_usable_promise_silence_after_the_exit_ends_the_stream(spawn, how):
    s = started(spawn, LATE_TAIL)
    assert s.run("g", "any", [how]) == {"exec_id": "g", "code": 0}
    assert s.output("g") == b"head\n"


def test_stdin_is_fed_as_an_iterable(spawn):
    s = started(spawn)
    s.call("exec/start", {"exec_id": "c", "sandbox_id": "any", "argv": ["cat"], "env": {}, "cwd": "", "stdin": True})
    for part in (b"one ", b"two"):
        assert s.call("exec/stdin", {"exec_id": "c", "data": base64.b64encode(part).decode()}) == {}
    assert s.call("exec/stdin", {"exec_id": "c", "eof": True}) == {}
    assert s.exit_of("c")["code"] == 0
    assert s.output("c") == b"one two"
    with pytest.raises(RpcError) as e:
        s.call("exec/stdin", {"exec_id": "c", "data": "eA=="})
    assert e.value.kind == "not_found"  # it has ended


KILLABLE = '''
class Killable(Result):
    def kill(self):
        print("kill called")
        self.code = -9
        self.block.set()
class Closable:
    """An output stream with close(): the bridge closes it when it abandons the exec."""
    def __init__(self):
        self.first, self.gate = True, threading.Event()
    def __iter__(self):
        return self
    def __next__(self):
        if self.first:
            self.first = False
            return b"started\\n"
        self.gate.wait()
        raise StopIteration
    def close(self):
        print("stream closed")
        self.gate.set()
class WithKill(Provider):
    def exec(self, sandbox_id, argv, *, stdin=None, env=None, timeout=None):
        forever = threading.Event()
        if argv[0] == "killable":
            return Killable(out=[b"started\\n"], block=forever)
        if argv[0] == "closable":
            return Result(out=Closable(), err=Closable(), block=forever)
        def hang():
            yield b"started\\n"
            forever.wait()
        return Result(out=hang(), block=forever)  # no kill(): wait() never returns
PROVIDER = WithKill()
'''


def test_exec_kill_calls_kill_when_the_exec_has_it(spawn):
    s = started(spawn, KILLABLE)
    s.call("exec/start", {"exec_id": "k", "sandbox_id": "any", "argv": ["killable"], "env": {}, "cwd": "", "stdin": False})
    s.wait_note(lambda m: m.get("method") == "exec/output")
    assert s.call("exec/kill", {"exec_id": "k"}) == {}
    assert s.exit_of("k") == {"exec_id": "k", "code": 137, "signal": "SIGKILL"}
    assert s.call("exec/kill", {"exec_id": "k"}) == {}  # ended: still fine
    s.close()
    assert b"kill called" in s.stderr


def test_exec_kill_without_kill_answers_at_once(spawn):
    s = started(spawn, KILLABLE)
    s.call("exec/start", {"exec_id": "h", "sandbox_id": "any", "argv": ["hang"], "env": {}, "cwd": "", "stdin": True})
    s.wait_note(lambda m: m.get("method") == "exec/output")
    assert s.call("exec/kill", {"exec_id": "h"}, timeout=5) == {}
    assert s.exit_of("h", timeout=5) == {"exec_id": "h", "code": 137, "signal": "SIGKILL"}
    assert s.close() == 0  # the abandoned threads do not hold the exit up


def test_exec_kill_without_kill_closes_the_streams(spawn):
    s = started(spawn, KILLABLE)
    s.call("exec/start", {"exec_id": "c", "sandbox_id": "any", "argv": ["closable"], "env": {}, "cwd": "", "stdin": False})
    s.wait_note(lambda m: m.get("method") == "exec/output")
    assert s.call("exec/kill", {"exec_id": "c"}, timeout=5) == {}
    assert s.exit_of("c", timeout=5) == {"exec_id": "c", "code": 137, "signal": "SIGKILL"}
    assert s.close() == 0
    assert s.stderr.count(b"stream closed") == 2


ERRORS = '''
class OwnError(Exception):  # a shim's own ByocError, duck-typed
    def __init__(self, kind, msg=""):
        super().__init__(msg)
        self.kind, self.msg = kind, msg
class Failing(Provider):
    def create_sandbox(self, spec, install_id, tags=None):
        kind = spec.get("image")
        if kind == "boom":
            raise ValueError("boom at create")
        if kind == "own":
            raise OwnError("quota", "too many")
        if kind == "exit":
            raise SystemExit(1)
        raise ByocError(kind, "said " + kind)
PROVIDER = Failing()
'''


@pytest.mark.parametrize("image, kind, message", [
    ("not_found", "not_found", "said not_found"),
    ("conflict", "conflict", "said conflict"),
    ("weird-kind", "transient", "said weird-kind"),
    ("own", "quota", "too many"),
    ("boom", "internal", "ValueError: boom at create"),
    ("exit", "internal", "SystemExit: 1"),
])
def test_errors(spawn, image, kind, message):
    s = started(spawn, ERRORS)
    with pytest.raises(RpcError) as e:
        s.call("sandbox/create", {"spec": {"image": image}, "owner": OWNER, "tags": {}})
    assert (e.value.kind, e.value.message) == (kind, message)


@pytest.mark.parametrize("source, construct", [
    (r"tc_(?=[a-z])\w+", "lookahead"),
    (r"(a)tc_\1", "backreference"),
    (r"(?<=x)tc_", "lookbehind"),
    (r"(a)?(?(1)b|c)", "conditional"),
])
def test_a_pattern_re2_lacks_is_a_start_up_error(spawn, source, construct):
    s = spawn(BASE + "\nProvider.token_scrub_regex = re.compile(%r)\n" % source)
    assert s.proc.wait(30) == 2
    s.close()
    assert construct.encode() in s.stderr and b"token_scrub_regex" in s.stderr
    assert s.proc.stdout.read() == b"" and not s.junk


STRAY = '''
import os, sys, subprocess
print("stray print at import")
sys.__stdout__.write("via __stdout__\\n"); sys.__stdout__.flush()
os.write(1, b"raw fd 1\\n")
class Chatty(Provider):
    def create_sandbox(self, spec, install_id, tags=None):
        print("stray print in a call")
        subprocess.run(["echo", "from a child"])
        return super().create_sandbox(spec, install_id, tags)
PROVIDER = Chatty()
'''


def test_a_stray_print_never_reaches_stdout(spawn):
    s = started(spawn, STRAY)
    s.call("sandbox/create", {"spec": {}, "owner": OWNER, "tags": {}})
    assert s.close() == 0
    assert s.junk == b""
    for line in (b"stray print at import", b"via __stdout__", b"raw fd 1", b"stray print in a call", b"from a child"):
        assert line in s.stderr


HANGING = '''
class Hanging(Provider):
    def create_sandbox(self, spec, install_id, tags=None):
        threading.Event().wait()  # blocks forever
PROVIDER = Hanging()
'''


def test_stdin_eof_exits_even_with_a_call_blocked(spawn):
    s = started(spawn, HANGING)
    rid = s.start("sandbox/create", {"spec": {}, "owner": OWNER, "tags": {}})
    assert s.call("sandbox/list_owned", {"owner": OWNER})["sandboxes"]  # the reader is not blocked
    s.notify("$/cancelRequest", {"id": rid})
    with pytest.raises(RpcError) as e:
        s.answer(rid)
    assert e.value.kind == "cancelled"
    assert s.close(timeout=5) == 0


def test_shutdown_answers_then_exits(spawn):
    s = started(spawn)
    assert s.call("shutdown") == {}
    assert s.proc.wait(5) == 0


EXPIRING = '''
class Expiring(Provider):
    def create_sandbox(self, spec, install_id, tags=None):
        self.on_expired()
        return "never"
PROVIDER = Expiring()
'''


def test_on_expired_reaches_the_host_and_does_not_return(spawn):
    s = started(spawn, EXPIRING)
    rid = s.start("sandbox/create", {"spec": {}, "owner": OWNER, "tags": {}})
    note = s.wait_note(lambda m: m.get("method") == "provider/unauthorized")
    assert note["params"]["reason"]
    with pytest.raises(TimeoutError):
        s.answer(rid, timeout=0.5)  # the call never answers: the resident ends the session
    assert s.close(timeout=5) == 0


CANARY = "tc_CANARYcanary0123456789"


def test_credentials_never_reach_the_log_or_stdout_unless_the_shim_echoes_them(spawn):
    s = started(spawn, "", "--log-level", "DEBUG")
    assert s.call("auth/apply", {"credentials": {"TESTCLOUD_TOKEN": CANARY}}) == {}
    s.run("quiet", "any", ["echo", "nothing"])
    s.run("echoes", "any", ["creds"])
    assert CANARY.encode() in s.output("echoes")  # the shim itself said it: the resident scrubs
    s.close()
    assert CANARY.encode() not in s.stderr
    elsewhere = [m for m in s.notes if not (m.get("method") == "exec/output" and m["params"]["exec_id"] == "echoes")]
    assert CANARY not in json.dumps(elsewhere) + json.dumps(list(s.answers.values()))


EXCLUSIVE = '''
class WithExclusive(Provider):
    def __init__(self):
        super().__init__()
        self.running = []
    def exec(self, sandbox_id, argv, *, stdin=None, env=None, timeout=None, exclusive=False):
        if exclusive:
            for box, r in self.running:  # stop everything else of the sandbox first
                if box == sandbox_id:
                    r.code = -9
                    r.block.set()
            return Result([b"alone\\n"])
        r = Result(block=threading.Event())
        self.running.append((sandbox_id, r))
        return r
PROVIDER = WithExclusive()
'''


def test_exclusive_is_refused_by_a_shim_that_cannot_honour_it(spawn):
    s = started(spawn)
    with pytest.raises(RpcError) as e:
        s.call("exec/start", {"exec_id": "x", "sandbox_id": "any", "argv": ["echo"], "env": {}, "cwd": "",
                              "stdin": False, "exclusive": True})
    assert e.value.kind == "invalid_request" and "exclusive" in e.value.message
    assert not [m for m in s.notes if m.get("method") == "exec/exit"]


def test_an_exclusive_exec_marks_the_others_of_its_sandbox_killed(spawn):
    s = started(spawn, EXCLUSIVE)
    sid = s.call("sandbox/create", {"spec": {}, "owner": OWNER, "tags": {}})["sandbox_id"]
    other = s.call("sandbox/create", {"spec": {}, "owner": OWNER, "tags": {}})["sandbox_id"]
    for eid, box in (("v1", sid), ("v2", other)):
        s.call("exec/start", {"exec_id": eid, "sandbox_id": box, "argv": ["x"], "env": {}, "cwd": "", "stdin": False})
    assert s.run("ex", sid, ["grader"], exclusive=True) == {"exec_id": "ex", "code": 0}
    assert s.output("ex") == b"alone\n"
    assert s.exit_of("v1") == {"exec_id": "v1", "code": 137, "signal": "SIGKILL", "killed": True}
    assert not [m for m in s.notes if m.get("method") == "exec/exit" and m["params"]["exec_id"] == "v2"]
    s.call("exec/kill", {"exec_id": "v2"})  # no kill(): reported at once, and not as an exclusive's victim
    assert s.exit_of("v2") == {"exec_id": "v2", "code": 137, "signal": "SIGKILL"}
