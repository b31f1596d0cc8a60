"""A thread-safe client that spawns a resident and speaks its wire protocol.

One reader thread takes frames off the resident's stdout and completes the
calls waiting for them; callbacks (output, progress, expiry) run on that
thread, in the order the resident sent them, so they must not block. Every
operation of docs/protocol.md is a method here.
"""

from __future__ import annotations

import base64
import collections
import io
import itertools
import json
import logging
import os
import queue
import shutil
import subprocess
import threading
import uuid
from concurrent import futures
from concurrent.futures import Future
from datetime import datetime
from typing import IO, Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

from . import _framing
from .errors import (Cancelled, CredentialsExpired, ProtocolError, ResidentError, ResidentExited, Unauthorized,
                     from_wire)
from .types import DirEntry, ExecInfo, ExecResult, Info, Listing, ReadResult, Sandbox, Volume

PROTOCOL_VERSION = 1
EXIT_CREDENTIALS_EXPIRED = 3
_STDIN_CHUNK = 1 << 20
_UPLOADS_IN_FLIGHT = 4
_READ_FRAME_LIMIT = 64 << 20

OutputCallback = Callable[[str, bytes], None]
UploadSource = Union[bytes, bytearray, memoryview, IO[bytes], str, "os.PathLike[str]", Iterable[bytes]]
log = logging.getLogger("resident")


def find_binary(path: Optional[str] = None) -> str:
    """The resident to run: path if given, else $RESIDENT_BIN, else `resident` on PATH."""
    candidate = path or os.environ.get("RESIDENT_BIN") or shutil.which("resident")
    if not candidate:
        raise ResidentError("no resident binary: pass binary=, set RESIDENT_BIN, or put `resident` on PATH")
    return candidate


def default_install_id() -> str:
    """A stable id for this user and machine, made once and kept under the
    user's state directory, so the next run owns what a crashed one left."""
    base = os.environ.get("XDG_STATE_HOME") or os.path.join(os.path.expanduser("~"), ".local", "state")
    path = os.path.join(base, "resident", "python-install-id")
    try:
        with open(path, encoding="utf-8") as f:
            value = f.read().strip()
            if value:
                return value
    except FileNotFoundError:
        pass
    value = "py-" + uuid.uuid4().hex[:16]
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = f"{path}.{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(value + "\n")
    os.replace(tmp, path)
    return value


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


class Execution:
    """One running exec: write its stdin, kill or cancel it, iterate its
    output, and wait for its result."""

    def __init__(self, client: "Client", exec_id: str, on_output: Optional[OutputCallback], capture: bool,
                 iterate: bool) -> None:
        self.exec_id = exec_id
        self._client = client
        self._on_output = on_output
        self._capture = capture
        self._out: Dict[str, List[bytes]] = {"stdout": [], "stderr": []}
        self._chunks: List[Tuple[str, bytes]] = []
        self._events: Optional["queue.Queue[Optional[Tuple[str, bytes]]]"] = queue.Queue() if iterate else None
        self._request_id: Optional[int] = None
        #: For a detached exec: where exec/attach resumes after the output
        #: delivered so far (Client.attach(..., offset=ex.offset)).
        self.offset: Optional[int] = None
        self._future: "Future[Any]" = Future()
        self._stdin_thread: Optional[threading.Thread] = None

    # Called on the reader thread, in arrival order.
    def _deliver(self, stream: str, data: bytes, offset: Optional[int] = None) -> None:
        if offset is not None:
            self.offset = int(offset)
        if self._capture:
            self._out.setdefault(stream, []).append(data)
            self._chunks.append((stream, data))
        if self._on_output is not None:
            try:
                self._on_output(stream, data)
            except Exception:  # a host callback must not kill the reader
                log.exception("exec %s output callback failed", self.exec_id)
        if self._events is not None:
            self._events.put((stream, data))

    def _finish(self) -> None:
        if self._events is not None:
            self._events.put(None)

    def write(self, data: bytes, eof: bool = False) -> None:
        """Writes to the exec's stdin (it must have been started with stdin);
        returns once the bytes are in the process's pipe."""
        params: Dict[str, Any] = {"exec_id": self.exec_id}
        if data:
            params["data"] = _b64(data)
        if eof:
            params["eof"] = True
        self._client._call("exec/stdin", params)

    def close_stdin(self) -> None:
        self.write(b"", eof=True)

    def resize(self, rows: int, cols: int) -> None:
        """Resizes the terminal of an exec started with tty."""
        self._client._call("exec/resize", {"exec_id": self.exec_id, "rows": rows, "cols": cols})

    def kill(self) -> None:
        """Kills the exec's whole process tree; the result says killed."""
        self._client._call("exec/kill", {"exec_id": self.exec_id})

    def cancel(self) -> None:
        """Cancels the exec request: the tree is killed and result() raises
        Cancelled. A detached exec is not killed: this session stops
        following it (attach again later)."""
        if self._request_id is not None:
            self._client._notify("$/cancelRequest", {"id": self._request_id})

    def done(self) -> bool:
        return self._future.done()

    def result(self, timeout: Optional[float] = None) -> ExecResult:
        """Waits for the end of the exec. Interrupting the wait (Ctrl-C)
        cancels the exec before the interruption propagates."""
        try:
            raw = self._future.result(timeout)
        except KeyboardInterrupt:
            self.cancel()
            raise
        res = ExecResult.from_wire(raw)
        res.stdout = b"".join(self._out.get("stdout", []))
        res.stderr = b"".join(self._out.get("stderr", []))
        res.chunks = list(self._chunks)
        return res

    def __iter__(self) -> Iterator[Tuple[str, bytes]]:
        """(stream, data) chunks as they arrive; ends when the exec does."""
        if self._events is None:
            raise ResidentError("start the exec with iterate=True to iterate its output")
        while True:
            item = self._events.get()
            if item is None:
                return
            yield item


class Client:
    """Spawns a resident and offers its operations as methods.

    ``provider`` selects the backend (``local``, ``docker``, ...); options
    after it (``provider_args``) go to the resident's command line as they
    are. The identity sandboxes are owned under is ``install_id`` (default:
    a stable per-user id) and ``tag_prefix``; another host passing the same
    values works on the same sandboxes.
    """

    def __init__(self, binary: Optional[str] = None, *, provider: str = "local",
                 provider_args: Sequence[str] = (), state_dir: Optional[str] = None,
                 install_id: Optional[str] = None, tag_prefix: Optional[str] = None,
                 credentials: Optional[Mapping[str, str]] = None,
                 credentials_expire_at: Optional[datetime] = None,
                 env: Optional[Mapping[str, str]] = None, log_level: Optional[str] = None,
                 on_log: Optional[Callable[[str], None]] = None,
                 on_credentials_expired: Optional[Callable[[str], None]] = None,
                 on_pull_progress: Optional[Callable[[Dict[str, Any]], None]] = None) -> None:
        self.binary = find_binary(binary)
        self.provider = provider
        self.install_id = install_id or default_install_id()
        self._on_log = on_log
        self._on_expired = on_credentials_expired
        self._on_pull = on_pull_progress
        self._on_watch: Optional[Callable[[Dict[str, Any]], None]] = None
        self._ids = itertools.count(1)
        self._exec_ids = itertools.count(1)
        self._session = uuid.uuid4().hex[:8]
        self._lock = threading.Lock()
        self._send_lock = threading.Lock()
        self._pending: Dict[int, Tuple[str, "Future[Any]"]] = {}
        self._execs: Dict[str, Execution] = {}
        self._reads: Dict[str, Callable[[bytes], None]] = {}
        self._ended: Optional[ResidentError] = None
        self._expired_message: Optional[str] = None
        self._closed = False
        argv = [self.binary, "--provider", provider]
        if state_dir:
            argv += ["--state-dir", state_dir]
        if log_level:
            argv += ["--log-level", log_level]
        argv += list(provider_args)
        self._proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                      env=dict(env) if env is not None else None, start_new_session=True)
        self._reader = threading.Thread(target=self._read_loop, name="resident-reader", daemon=True)
        self._logger = threading.Thread(target=self._log_loop, name="resident-stderr", daemon=True)
        self._reader.start()
        self._logger.start()
        params: Dict[str, Any] = {"protocol_version": PROTOCOL_VERSION, "install_id": self.install_id}
        if credentials:
            params["credentials"] = dict(credentials)
        if credentials_expire_at is not None:
            params["credentials_expire_at"] = credentials_expire_at.isoformat()
        if tag_prefix:
            params["tag_prefix"] = tag_prefix
        try:
            self.info = Info.from_wire(self._call("initialize", params))
        except BaseException:
            self.close()
            raise

    # ---- plumbing -------------------------------------------------------

    def _send(self, message: Dict[str, Any]) -> None:
        frame = _framing.encode(message)
        with self._send_lock:
            if self._ended is not None:
                raise self._ended
            try:
                assert self._proc.stdin is not None
                self._proc.stdin.write(frame)
                self._proc.stdin.flush()
            except (BrokenPipeError, ValueError, OSError):
                pass
            else:
                return
        # The resident closed its stdin: say why it ended, which the reader
        # learns from its exit code a moment later (3: credentials expired).
        if threading.current_thread() is not self._reader:
            self._reader.join(timeout=15)
        if self._ended is not None:
            raise self._ended
        if self._expired_message is not None:
            raise CredentialsExpired(self._expired_message)
        raise ResidentExited("the resident is gone")

    def _notify(self, method: str, params: Dict[str, Any]) -> None:
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    def _start(self, method: str, params: Optional[Dict[str, Any]],
               before_send: Optional[Callable[[int], None]] = None) -> "Future[Any]":
        rid = next(self._ids)
        fut: "Future[Any]" = Future()
        with self._lock:
            if self._ended is not None:
                raise self._ended
            self._pending[rid] = (method, fut)
        if before_send is not None:
            before_send(rid)
        msg: Dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            msg["params"] = params
        try:
            self._send(msg)
        except BaseException:
            with self._lock:
                self._pending.pop(rid, None)
            raise
        return fut

    def _call(self, method: str, params: Optional[Dict[str, Any]] = None, timeout: Optional[float] = None) -> Any:
        return self._start(method, params).result(timeout)

    def _read_loop(self) -> None:
        assert self._proc.stdout is not None
        cause: Optional[ResidentError] = None
        try:
            while True:
                body = _framing.read_frame(self._proc.stdout, _READ_FRAME_LIMIT)
                if body is None:
                    break
                self._dispatch(json.loads(body))
        except (_framing.FramingError, ValueError) as e:
            cause = ProtocolError(f"bad frame from the resident: {e}")
        except Exception as e:  # pragma: no cover - a bug of ours
            cause = ProtocolError(f"reader failed: {type(e).__name__}")
        self._end(cause)

    def _dispatch(self, msg: Dict[str, Any]) -> None:
        if "method" in msg:
            self._notification(msg.get("method"), msg.get("params") or {})
            return
        rid = msg.get("id")
        with self._lock:
            entry = self._pending.pop(rid, None) if isinstance(rid, int) else None
        if entry is None:
            log.warning("response to unknown request id %r", rid)
            return
        method, fut = entry
        if "error" in msg:
            err = from_wire(msg["error"], method)
            if isinstance(err, Unauthorized) and self._expired_message is not None:
                err = CredentialsExpired(err.message, code=err.code, method=method, data=err.data)
            fut.set_exception(err)
        else:
            fut.set_result(msg.get("result"))

    def _notification(self, method: Any, p: Dict[str, Any]) -> None:
        if method == "exec/output":
            with self._lock:
                ex = self._execs.get(p.get("exec_id"))
            if ex is not None:
                ex._deliver(p.get("stream", "stdout"), base64.b64decode(p.get("data") or ""), p.get("offset"))
        elif method == "store/data":
            with self._lock:
                sink = self._reads.get(p.get("stream_id"))
            if sink is not None:
                sink(base64.b64decode(p.get("data") or ""))
        elif method == "resident/credentials_expired":
            self._expired_message = str(p.get("message") or "credentials expired")
            if self._on_expired is not None:
                try:
                    self._on_expired(self._expired_message)
                except Exception:
                    log.exception("credentials-expired callback failed")
        elif method == "sandbox/changed" and self._on_watch is not None:
            try:
                self._on_watch(dict(p))
            except Exception:
                log.exception("watch callback failed")
        elif method == "sandbox/pull_progress" and self._on_pull is not None:
            try:
                self._on_pull(dict(p))
            except Exception:
                log.exception("pull-progress callback failed")

    def _end(self, cause: Optional[ResidentError]) -> None:
        try:
            rc = self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            rc = None
        if cause is None:
            if rc == EXIT_CREDENTIALS_EXPIRED or self._expired_message is not None:
                cause = CredentialsExpired(self._expired_message or "credentials expired (resident exit 3)")
            else:
                cause = ResidentExited(f"the resident exited (code {rc})", returncode=rc)
        with self._lock:
            self._ended = cause
            pending = list(self._pending.values())
            self._pending.clear()
            execs = list(self._execs.values())
        for method, fut in pending:
            if not fut.done():
                fut.set_exception(cause)
        for ex in execs:
            ex._finish()

    def _log_loop(self) -> None:
        assert self._proc.stderr is not None
        for raw in self._proc.stderr:
            line = raw.decode("utf-8", "replace").rstrip("\n")
            if self._on_log is not None:
                try:
                    self._on_log(line)
                except Exception:
                    log.exception("log callback failed")
                continue
            level = logging.DEBUG
            try:
                level = {"warn": logging.WARNING, "error": logging.ERROR}.get(json.loads(line).get("level"), level)
            except (ValueError, AttributeError):
                pass
            log.log(level, "%s", line)

    @property
    def alive(self) -> bool:
        return self._ended is None

    @property
    def credentials_expired(self) -> Optional[str]:
        """The resident's expiry message once it reported one, else None."""
        return self._expired_message

    # ---- sandboxes ------------------------------------------------------

    def create_sandbox(self, spec: Optional[Mapping[str, Any]] = None,
                       tags: Optional[Mapping[str, str]] = None,
                       pool: Optional[Mapping[str, Any]] = None) -> str:
        """Creates a sandbox (spec fields as in docs/protocol.md 4.2) and returns its id.
        pool={"size": N, "max_idle_s": S} keeps N of this spec and tags ready (capabilities.pool)."""
        params: Dict[str, Any] = {"spec": dict(spec or {})}
        if tags:
            params["tags"] = dict(tags)
        if pool:
            params["pool"] = dict(pool)
        return self._call("sandbox/create", params)["sandbox_id"]

    # ---- snapshots and builds (capabilities.snapshot, image_build) -------

    def snapshot(self, sandbox_id: str, name: str) -> Dict[str, Any]:
        """Records the sandbox's files as this install's snapshot NAME; spec image "snapshot:NAME" forks it."""
        return self._call("sandbox/snapshot", {"sandbox_id": sandbox_id, "name": name})

    def list_snapshots(self) -> List[Dict[str, Any]]:
        return list(self._call("snapshot/list")["snapshots"])

    def delete_snapshot(self, name: str) -> bool:
        return bool(self._call("snapshot/delete", {"name": name})["existed"])

    def build_image(self, tag: str, context: Union[bytes, IO[bytes]], dockerfile: Optional[str] = None,
                    chunk: int = 256 << 10) -> Dict[str, Any]:
        """Builds a tar context (bytes or a binary file) as spec image "build:TAG", streamed as upload/data."""
        stream_id = "build-%d" % next(self._ids)
        params: Dict[str, Any] = {"context_stream_id": stream_id, "tag": tag}
        if dockerfile:
            params["dockerfile"] = dockerfile
        build = self._start("image/build", params)
        source = io.BytesIO(bytes(context)) if isinstance(context, (bytes, bytearray)) else context
        while True:
            data = source.read(chunk)
            last = len(data) < chunk
            try:
                self._call("upload/data", {"stream_id": stream_id, "data": _b64(data), "eof": last})
            except ResidentError:
                break  # the build answered early (a refusal): its answer says why
            if last:
                break
        return build.result()

    def list_owned(self) -> List[Sandbox]:
        return [Sandbox.from_wire(s) for s in self._call("sandbox/list_owned")["sandboxes"]]

    def read_owner(self, sandbox_id: str) -> Optional[str]:
        return self._call("sandbox/read_owner", {"sandbox_id": sandbox_id})["owner"]

    def terminate(self, sandbox_id: str) -> bool:
        """Removes a sandbox; idempotent. True if it existed."""
        return bool(self._call("sandbox/terminate", {"sandbox_id": sandbox_id})["existed"])

    def forward_port(self, sandbox_id: str, port: int) -> Tuple[str, str]:
        """Forwards 127.0.0.1:port inside a sandbox (capabilities.port_forward) to a loopback address
        here, for as long as this session lives; returns (address, forward_id)."""
        res = self._call("sandbox/forward_port", {"sandbox_id": sandbox_id, "port": port})
        return str(res["address"]), str(res["forward_id"])

    def close_port(self, forward_id: str) -> bool:
        """Ends a forward; idempotent. True if it was still open."""
        return bool(self._call("port/close", {"forward_id": forward_id})["existed"])

    def write_file(self, sandbox_id: str, path: str, data: bytes, mode: Optional[int] = None) -> int:
        params: Dict[str, Any] = {"sandbox_id": sandbox_id, "path": path, "data": _b64(data)}
        if mode is not None:
            params["mode"] = mode
        return int(self._call("sandbox/write_file", params)["bytes"])

    # ---- exec -----------------------------------------------------------

    def start_exec(self, sandbox_id: str, argv: Sequence[str], *, env: Optional[Mapping[str, str]] = None,
                   cwd: Optional[str] = None, timeout_s: Optional[float] = None,
                   stdin: Union[None, bool, bytes, IO[bytes], Iterable[bytes]] = None,
                   on_output: Optional[OutputCallback] = None, capture: bool = True, iterate: bool = False,
                   exec_id: Optional[str] = None, detach: bool = False, user: Optional[str] = None,
                   tty: Optional[Tuple[int, int]] = None) -> Execution:
        """Starts an exec and returns at once. ``stdin``: None or False closes
        it at start; True keeps it open for Execution.write; bytes, a binary
        file or an iterable of bytes is streamed in and then closed.
        ``detach`` keeps the exec running when this client or its resident
        goes; follow it again with attach(exec_id, offset=ex.offset)."""
        exec_id = exec_id or f"py-{self._session}-{next(self._exec_ids)}"
        params: Dict[str, Any] = {"sandbox_id": sandbox_id, "argv": list(argv), "exec_id": exec_id}
        if detach:
            params["detach"] = True
        if user:
            params["user"] = user
        if tty is not None:
            params["tty"] = {"rows": int(tty[0]), "cols": int(tty[1])}
        if env:
            params["env"] = dict(env)
        if cwd:
            params["cwd"] = cwd
        if timeout_s:
            params["timeout_s"] = timeout_s
        if stdin is not None and stdin is not False:
            params["stdin"] = True
        ex = self._follow("sandbox/exec", params, exec_id, on_output, capture, iterate)
        if stdin is not None and not isinstance(stdin, bool):
            ex._stdin_thread = threading.Thread(target=self._feed_stdin, args=(ex, stdin), daemon=True,
                                                name=f"resident-stdin-{exec_id}")
            ex._stdin_thread.start()
        return ex

    def start_detached(self, sandbox_id: str, argv: Sequence[str], *, env: Optional[Mapping[str, str]] = None,
                       cwd: Optional[str] = None, timeout_s: Optional[float] = None, stdin: bool = False,
                       exec_id: Optional[str] = None) -> str:
        """Starts a detached exec without following it (exec/start): a
        background job that outlives this client and its resident. Returns
        its exec id; follow it with attach()."""
        exec_id = exec_id or f"job-{uuid.uuid4().hex[:12]}"
        params: Dict[str, Any] = {"sandbox_id": sandbox_id, "argv": list(argv), "exec_id": exec_id}
        if env:
            params["env"] = dict(env)
        if cwd:
            params["cwd"] = cwd
        if timeout_s:
            params["timeout_s"] = timeout_s
        if stdin:
            params["stdin"] = True
        return str(self._call("exec/start", params)["exec_id"])

    def attach(self, exec_id: str, *, sandbox_id: Optional[str] = None, offset: int = 0,
               on_output: Optional[OutputCallback] = None, capture: bool = True,
               iterate: bool = False) -> Execution:
        """Follows a detached exec from ``offset`` (exec/attach), from any
        session of the install: kept output, then live output, then its
        result. Execution.offset keeps where to resume next time."""
        params: Dict[str, Any] = {"exec_id": exec_id, "offset": int(offset)}
        if sandbox_id:
            params["sandbox_id"] = sandbox_id
        ex = self._follow("exec/attach", params, exec_id, on_output, capture, iterate)
        ex.offset = int(offset)
        return ex

    def list_execs(self, sandbox_id: str) -> List[ExecInfo]:
        """The sandbox's detached execs, running or ended."""
        res = self._call("sandbox/list_execs", {"sandbox_id": sandbox_id})
        return [ExecInfo.from_wire(e) for e in res.get("execs") or []]

    def kill_detached(self, sandbox_id: str, exec_id: str) -> None:
        """Kills a detached exec this client does not follow, whole tree."""
        self._call("exec/kill", {"exec_id": exec_id, "sandbox_id": sandbox_id})

    def _follow(self, method: str, params: Dict[str, Any], exec_id: str, on_output: Optional[OutputCallback],
                capture: bool, iterate: bool) -> Execution:
        ex = Execution(self, exec_id, on_output, capture, iterate)

        def register(rid: int) -> None:
            ex._request_id = rid
            with self._lock:
                self._execs[exec_id] = ex

        fut = self._start(method, params, before_send=register)

        def finished(f: "Future[Any]") -> None:
            with self._lock:
                self._execs.pop(exec_id, None)
            ex._finish()
            if f.exception() is not None:
                ex._future.set_exception(f.exception())  # type: ignore[arg-type]
            else:
                ex._future.set_result(f.result())

        fut.add_done_callback(finished)
        return ex

    def _feed_stdin(self, ex: Execution, source: Union[bytes, IO[bytes], Iterable[bytes]]) -> None:
        try:
            for chunk in _chunks(source):
                if ex.done():
                    return
                ex.write(chunk)
            ex.close_stdin()
        except ResidentError as e:
            if not ex.done():
                log.debug("exec %s stdin stopped: %s", ex.exec_id, e)

    def exec(self, sandbox_id: str, argv: Sequence[str], **kw: Any) -> ExecResult:
        """Runs argv (never a shell string) and returns its result with the
        output captured; see start_exec for the options."""
        return self.start_exec(sandbox_id, argv, **kw).result()

    # ---- store ----------------------------------------------------------

    def list_volumes(self) -> List[Volume]:
        return [Volume.from_wire(v) for v in self._call("store/list_volumes")["volumes"]]

    def list_dir(self, root: str, path: str = "", limit: Optional[int] = None) -> Listing:
        params: Dict[str, Any] = {"root": root, "path": path}
        if limit:
            params["limit"] = limit
        r = self._call("store/list_dir", params)
        return Listing([DirEntry.from_wire(e) for e in r["entries"]], bool(r.get("truncated")))

    def read_file(self, root: str, path: str, into: Optional[IO[bytes]] = None) -> ReadResult:
        """Streams a volume's file. With ``into`` the bytes go there as they
        arrive (any size); else they are returned in ReadResult.data."""
        return self._read_stream("store/read_file", {"root": root, "path": path}, into)

    def create_volume(self, name: str) -> None:
        """Creates a store volume owned by this install (store/create_volume)."""
        self._call("store/create_volume", {"name": name})

    def delete_volume(self, name: str) -> None:
        """Deletes one of this install's volumes; one a running sandbox mounts is Conflict."""
        self._call("store/delete_volume", {"name": name})

    # ---- files of a running sandbox -------------------------------------

    def read_sandbox_file(self, sandbox_id: str, path: str, into: Optional[IO[bytes]] = None) -> ReadResult:
        """Streams a running sandbox's file (sandbox/read_file), read as the
        sandbox's user; a relative path is in its work directory. With
        ``into`` the bytes go there as they arrive (any size)."""
        return self._read_stream("sandbox/read_file", {"sandbox_id": sandbox_id, "path": path}, into)

    def list_sandbox_dir(self, sandbox_id: str, path: str = "", limit: Optional[int] = None) -> Listing:
        """Lists a directory of a running sandbox (sandbox/list_dir)."""
        params: Dict[str, Any] = {"sandbox_id": sandbox_id, "path": path}
        if limit is not None:
            params["limit"] = limit
        r = self._call("sandbox/list_dir", params)
        return Listing([DirEntry.from_wire(e) for e in r["entries"]], bool(r.get("truncated")))

    def upload(self, sandbox_id: str, path: str, source: UploadSource, mode: Optional[int] = None,
               size: Optional[int] = None) -> int:
        """Writes a file of any size into a running sandbox, streamed
        (sandbox/write_file with a stream, fed by upload/data, each answered
        as it is accepted), atomically: a reader never sees half of it, and
        a failed upload leaves nothing behind. Returns the bytes written.

        ``source`` is bytes, a binary file, the path of a local file (str or
        os.PathLike) or an iterable of bytes. When its size is known (bytes,
        a path, a seekable file from its position on, or ``size`` given) it
        is sent as write_file's ``size``: the upload must then be exactly
        that long (a file that changes meanwhile fails with InvalidRequest
        and writes nothing), and a provider may carry it on a faster path
        (docker: the engine's archive endpoint)."""
        if isinstance(source, (str, os.PathLike)):
            with open(source, "rb") as f:
                return self.upload(sandbox_id, path, f, mode, size)
        if size is None:
            size = _known_size(source)
        elif size < 0:
            raise ValueError("size must not be negative")
        stream_id = f"py-up-{self._session}-{next(self._ids)}"
        params: Dict[str, Any] = {"sandbox_id": sandbox_id, "path": path, "stream_id": stream_id}
        if mode is not None:
            params["mode"] = mode
        if size is not None:
            params["size"] = size
        rid: List[int] = []
        fut = self._start("sandbox/write_file", params, before_send=rid.append)
        # A few upload/data in flight, as the Go client keeps: the pipe to
        # the resident stays busy while one is being answered.
        sent: "collections.deque[Future[Any]]" = collections.deque()
        try:
            for chunk in _chunks(source):
                if fut.done():
                    break  # refused: its answer says why
                sent.append(self._start("upload/data", {"stream_id": stream_id, "data": _b64(chunk)}))
                while len(sent) >= _UPLOADS_IN_FLIGHT:
                    sent.popleft().result()
            else:
                sent.append(self._start("upload/data", {"stream_id": stream_id, "eof": True}))
            while sent:
                sent.popleft().result()
        except ResidentError:
            # An upload/data refused ends the upload: the write_file's own
            # answer (which may come a moment later) says why.
            if not futures.wait([fut], timeout=60).done:
                raise
        except BaseException:
            # The source failed (or we were interrupted): cancel the upload
            # and wait until the resident has removed what it wrote.
            self._notify("$/cancelRequest", {"id": rid[0]})
            try:
                fut.result(timeout=60)
            except ResidentError:
                pass
            raise
        return int(fut.result()["bytes"])

    def watch(self, on_event: Callable[[Dict[str, Any]], None]) -> List[Sandbox]:
        """Starts sandbox/watch: on_event gets each sandbox/changed (created,
        state, terminated, exec_started, exec_ended) on the reader thread.
        Returns the owned sandboxes at the start."""
        self._on_watch = on_event
        res = self._call("sandbox/watch", {})
        return [Sandbox.from_wire(b) for b in res.get("sandboxes") or []]

    def _read_stream(self, method: str, params: Dict[str, Any], into: Optional[IO[bytes]]) -> ReadResult:
        stream_id = f"py-read-{self._session}-{next(self._ids)}"
        parts: List[bytes] = []
        sink: Callable[[bytes], None] = into.write if into is not None else parts.append  # type: ignore[assignment]
        with self._lock:
            self._reads[stream_id] = sink
        try:
            r = self._call(method, dict(params, stream_id=stream_id))
        finally:
            with self._lock:
                self._reads.pop(stream_id, None)
        return ReadResult(int(r["size"]), r["sha256"], bool(r.get("redacted")),
                          None if into is not None else b"".join(parts))

    # ---- lifecycle ------------------------------------------------------

    def shutdown(self, timeout: float = 30) -> None:
        """Asks the resident to stop its work and exit 0."""
        if self._ended is None:
            try:
                self._call("shutdown", timeout=timeout)
            except ResidentError:
                pass

    def close(self, timeout: float = 30) -> Optional[int]:
        """Shuts the resident down (EOF if it does not answer) and returns its exit code."""
        if self._closed:
            return self._proc.returncode
        self._closed = True
        self.shutdown(timeout)
        try:
            if self._proc.stdin:
                self._proc.stdin.close()
        except OSError:
            pass
        try:
            return self._proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            return self._proc.wait()
        finally:
            self._reader.join(timeout=5)

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _known_size(source: Any) -> Optional[int]:
    """The bytes an upload's source will give, when that is known before
    reading it: bytes, or a seekable file from its position to its end."""
    if isinstance(source, memoryview):
        return source.nbytes
    if isinstance(source, (bytes, bytearray)):
        return len(source)
    if not hasattr(source, "read"):
        return None
    try:
        if not source.seekable():
            return None
        here = source.tell()
        end = source.seek(0, io.SEEK_END)
        source.seek(here, io.SEEK_SET)
    except (AttributeError, OSError, ValueError):
        return None
    return max(end - here, 0)


def _chunks(source: Union[bytes, IO[bytes], Iterable[bytes]]) -> Iterator[bytes]:
    if isinstance(source, (bytes, bytearray, memoryview)):
        data = bytes(source)
        for i in range(0, len(data), _STDIN_CHUNK):
            yield data[i:i + _STDIN_CHUNK]
        return
    read = getattr(source, "read", None)
    if read is not None:
        while True:
            chunk = read(_STDIN_CHUNK)
            if not chunk:
                return
            yield chunk
        return
    for chunk in source:  # type: ignore[union-attr]
        for i in range(0, len(chunk), _STDIN_CHUNK):
            yield chunk[i:i + _STDIN_CHUNK]
