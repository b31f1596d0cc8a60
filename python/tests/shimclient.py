"""A tiny resident for the tests: spawns `python3 -m resident_shim` and speaks the wire over its stdio.

It checks what the real resident would: stdout holds frames and nothing else
(junk is recorded and fails the test), and output is credited back as it
arrives unless a test holds an exec's credit to stall it.
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Optional, Set

import pytest

PYTHON_DIR = Path(__file__).resolve().parents[1]


class RpcError(Exception):
    def __init__(self, err: Dict[str, Any]) -> None:
        super().__init__("%s: %s" % (err.get("data", {}).get("kind"), err.get("message")))
        self.code = err.get("code")
        self.kind = err.get("data", {}).get("kind")
        self.message = err.get("message", "")


class ShimProc:
    def __init__(self, shim: str, *args: str, env: Optional[Dict[str, str]] = None,
                 argv: Optional[List[str]] = None) -> None:
        """Runs the bridge on shim, or any argv speaking frames on its stdio."""
        e = dict(os.environ)
        e["PYTHONPATH"] = str(PYTHON_DIR)
        e.update(env or {})
        self.proc = subprocess.Popen(argv or [sys.executable, "-m", "resident_shim", shim, *args],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=e)
        self.cond = threading.Condition()
        self.answers: Dict[Any, Dict[str, Any]] = {}
        self.notes: List[Dict[str, Any]] = []
        self.junk = b""
        self.eof = False
        self.stderr = b""
        self.hold: Set[str] = set()  # exec and stream ids whose output is not credited
        self._next = 0
        self._wlock = threading.Lock()
        self._threads = [threading.Thread(target=self._read, daemon=True),
                         threading.Thread(target=self._drain_stderr, daemon=True)]
        for t in self._threads:
            t.start()

    # -- transport ---------------------------------------------------------------

    def send(self, msg: Dict[str, Any]) -> None:
        body = json.dumps(msg).encode()
        with self._wlock:
            self.proc.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
            self.proc.stdin.flush()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            line = out.readline()
            if not line:
                break
            if not line.lower().startswith(b"content-length:"):
                self.junk += line
                continue
            n = int(line.split(b":")[1])
            if out.readline() != b"\r\n":
                self.junk += b"<no blank line>"
            msg = json.loads(out.read(n))
            self._got(msg)
        with self.cond:
            self.eof = True
            self.cond.notify_all()

    def _got(self, msg: Dict[str, Any]) -> None:
        if msg.get("method") == "exec/output" and msg["params"]["exec_id"] not in self.hold:
            self.credit(msg["params"]["exec_id"], len(base64.b64decode(msg["params"]["data"])))
        if msg.get("method") == "store/data" and msg["params"]["stream_id"] not in self.hold:
            self.send({"jsonrpc": "2.0", "method": "store/credit",
                       "params": {"stream_id": msg["params"]["stream_id"],
                                  "bytes": len(base64.b64decode(msg["params"]["data"]))}})
        with self.cond:
            if "id" in msg and "method" not in msg:
                self.answers[msg["id"]] = msg
            else:
                self.notes.append(msg)
            self.cond.notify_all()

    def _drain_stderr(self) -> None:
        for line in self.proc.stderr:
            self.stderr += line

    # -- calls -------------------------------------------------------------------

    def start(self, method: str, params: Optional[Dict[str, Any]] = None) -> int:
        self._next += 1
        self.send({"jsonrpc": "2.0", "id": self._next, "method": method, "params": params or {}})
        return self._next

    def answer(self, rid: int, timeout: float = 10) -> Dict[str, Any]:
        with self.cond:
            if not self.cond.wait_for(lambda: rid in self.answers or self.eof, timeout):
                raise TimeoutError("no answer to request %d" % rid)
            if rid not in self.answers:
                raise EOFError("the shim exited; stderr:\n" + self.stderr.decode(errors="replace"))
            msg = self.answers.pop(rid)
        if "error" in msg:
            raise RpcError(msg["error"])
        return msg["result"]

    def call(self, method: str, params: Optional[Dict[str, Any]] = None, timeout: float = 10) -> Any:
        return self.answer(self.start(method, params), timeout)

    def notify(self, method: str, params: Dict[str, Any]) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def credit(self, exec_id: str, n: int) -> None:
        self.notify("exec/credit", {"exec_id": exec_id, "bytes": n})

    def init(self, **params: Any) -> Dict[str, Any]:
        p = {"protocol_version": 1, "resident_version": "test", "max_frame_bytes": 1 << 20,
             "exec_window_bytes": 1 << 16, "call_timeout_s": 30}
        p.update(params)
        return self.call("initialize", p)

    def wait_note(self, pred: Callable[[Dict[str, Any]], bool], timeout: float = 10) -> Dict[str, Any]:
        with self.cond:
            found: List[Dict[str, Any]] = []

            def seen() -> bool:
                found[:] = [m for m in self.notes if pred(m)]
                return bool(found) or self.eof

            if not self.cond.wait_for(seen, timeout) or not found:
                raise TimeoutError("no such notification; have %s" % [m.get("method") for m in self.notes])
            return found[0]

    # -- exec helpers ------------------------------------------------------------

    def output(self, exec_id: str, stream: str = "stdout") -> bytes:
        with self.cond:
            return b"".join(base64.b64decode(m["params"]["data"]) for m in self.notes
                            if m.get("method") == "exec/output" and m["params"]["exec_id"] == exec_id
                            and m["params"]["stream"] == stream)

    def exit_of(self, exec_id: str, timeout: float = 10) -> Dict[str, Any]:
        return self.wait_note(lambda m: m.get("method") == "exec/exit" and m["params"]["exec_id"] == exec_id,
                              timeout)["params"]

    def run(self, exec_id: str, sandbox_id: str, argv: List[str], **kw: Any) -> Dict[str, Any]:
        self.call("exec/start", dict({"exec_id": exec_id, "sandbox_id": sandbox_id, "argv": argv,
                                      "env": {}, "cwd": "", "stdin": False}, **kw))
        return self.exit_of(exec_id)

    # -- end ---------------------------------------------------------------------

    def close(self, timeout: float = 10) -> int:
        try:
            self.proc.stdin.close()
        except OSError:
            pass
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
                self.proc.wait()
            for t in self._threads:  # everything the process wrote is read before a test looks
                t.join(timeout)

    def settle(self, seconds: float) -> None:
        """For the rare check that something does NOT happen within a bound."""
        time.sleep(seconds)


@pytest.fixture
def spawn(tmp_path: Path) -> Iterator[Callable[..., ShimProc]]:
    """spawn(source, *args, env=None) writes a shim file and runs the bridge on it.

    Imported by the test modules (no conftest.py, so this tree merges beside
    the host package's own tests)."""
    procs: List[ShimProc] = []

    def run(source: str, *args: str, env: Optional[Dict[str, str]] = None, name: str = "provider.py") -> ShimProc:
        d = tmp_path / ("shim%d" % len(procs))
        d.mkdir()
        path = d / name
        path.write_text(textwrap.dedent(source))
        p = ShimProc(str(path), *args, env=env)
        procs.append(p)
        return p

    yield run
    for p in procs:
        p.close()
