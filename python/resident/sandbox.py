"""The eval harnesses' ``Sandbox`` interface, backed by a resident.

``ResidentSandbox(provider="docker", image="python:3.12-slim")`` is one
sandbox for one trial, on whatever provider the resident drives. What each
step does, exactly:

- ``create()`` reaps sandboxes that an earlier, crashed run of this machine
  left (see ``reap_stale``), then creates the sandbox with ``WORK_DIR`` as its
  work directory (the provider creates it). Image pull progress goes to
  ``on_progress``.
- ``setup(seed_dir, universe, loop_prompt_template, wheels)``: if
  ``scaffold_command`` is set, writes the template to
  ``WORK_DIR/.loop_prompt_template`` and runs the command through the shell in
  ``WORK_DIR`` with ``UNIVERSE`` and ``LOOP_PROMPT_TEMPLATE`` (that file's path,
  relative) in its environment; the original harness runs ``lc init`` here, the
  default is none. Then every regular file under ``seed_dir`` is uploaded to the
  same relative path under ``WORK_DIR`` with its permission bits (seed files
  overlay what the scaffold made). Then ``wheels`` are uploaded to
  ``WORK_DIR/.wheels`` and, when ``python3 -m pip`` works in the image,
  installed with ``pip install --no-index --find-links .wheels`` (no network is
  assumed); without pip they stay uploaded and a warning is logged.
- ``exec(cmd, timeout, cwd)`` runs ``cmd`` through the image's shell in ``cwd``
  (default ``WORK_DIR``); ``output`` is stdout and stderr in arrival order.
- ``upload_file(remote_path, content)`` takes any size.
- ``teardown()`` is idempotent; the sandbox is also a context manager, and
  sandboxes this process made are torn down at exit.
"""

from __future__ import annotations

import atexit
import logging
import os
import shlex
import socket
import threading
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Set, Tuple

from .client import Client
from .errors import ResidentError, ResidentExited, Transient

log = logging.getLogger("resident.sandbox")

HARNESS_TAG = "harness"
HARNESS_VALUE = "resident-python"
PID_TAG = "harness-pid"
HOST_TAG = "harness-host"


@dataclass
class ExecuteResult:
    exit_code: int
    output: str
    #: True when the timeout killed the command (exit_code is then the kill's, e.g. 137).
    timed_out: bool = False


class Sandbox(ABC):
    """One ephemeral execution substrate for a single eval trial.
    Lifecycle: create() -> setup() -> (exec/exec_async_poll/upload_file)* -> teardown()."""

    WORK_DIR = "/home/evaluser/project"

    @abstractmethod
    def create(self) -> None: ...

    @abstractmethod
    def setup(self, seed_dir: Path, universe: str, loop_prompt_template: str,
              wheels: Optional[List[Path]] = None) -> None: ...

    @abstractmethod
    def exec(self, cmd: str, timeout: int = 300, cwd: Optional[str] = None) -> ExecuteResult: ...

    @abstractmethod
    def exec_async_poll(self, cmd: str, timeout: int = 600, poll_interval: int = 10) -> ExecuteResult: ...

    @abstractmethod
    def upload_file(self, remote_path: str, content: bytes) -> None: ...

    @abstractmethod
    def teardown(self) -> None: ...


class SetupError(ResidentError):
    """A setup step (scaffold, wheel install) failed; the message has its output."""


# One resident per distinct client configuration in this process: a trial
# is a sandbox, not a process.
_clients: Dict[Tuple[Any, ...], Client] = {}
_progress: Dict[Tuple[Any, ...], List[Callable[[Dict[str, Any]], None]]] = {}
_live: Set["ResidentSandbox"] = set()
_lock = threading.Lock()
_reaped: Set[Tuple[Any, ...]] = set()


def _shared_client(key: Tuple[Any, ...], kwargs: Dict[str, Any]) -> Client:
    with _lock:
        c = _clients.get(key)
        if c is not None and c.alive:
            return c
        subscribers = _progress.setdefault(key, [])

        def fan_out(p: Dict[str, Any]) -> None:
            for cb in list(subscribers):
                cb(p)

        c = Client(on_pull_progress=fan_out, **kwargs)
        _clients[key] = c
        return c


@atexit.register
def _teardown_all() -> None:
    for sb in list(_live):
        try:
            sb.teardown()
        except Exception:
            log.exception("teardown at exit failed")
    for c in list(_clients.values()):
        try:
            c.close(timeout=10)
        except Exception:
            pass


class ResidentSandbox(Sandbox):
    """A Sandbox on a resident's provider. ``spec`` holds any other
    sandbox/create spec fields; ``client`` shares an existing Client;
    otherwise the client keywords (binary, state_dir, install_id,
    tag_prefix, credentials, provider_args) pick a resident shared by every
    ResidentSandbox of this process with the same ones."""

    def __init__(self, provider: str = "local", image: Optional[str] = None, *,
                 spec: Optional[Mapping[str, Any]] = None, tags: Optional[Mapping[str, str]] = None,
                 client: Optional[Client] = None, shell: Sequence[str] = ("sh", "-c"),
                 scaffold_command: Optional[str] = None,
                 on_progress: Optional[Callable[[Dict[str, Any]], None]] = None,
                 **client_kwargs: Any) -> None:
        self.provider = provider
        self.spec: Dict[str, Any] = dict(spec or {})
        if image:
            self.spec["image"] = image
        self.spec.setdefault("workdir", self.WORK_DIR)
        self.tags = dict(tags or {})
        self.shell = list(shell)
        self.scaffold_command = scaffold_command
        self.sandbox_id: Optional[str] = None
        self._on_progress = on_progress
        self._client = client
        self._key: Tuple[Any, ...] = ("client", id(client)) if client else (
            provider, tuple(sorted((k, repr(v)) for k, v in client_kwargs.items())))
        self._client_kwargs = dict(client_kwargs, provider=provider)
        self._torn_down = False

    @property
    def client(self) -> Client:
        if self._client is None:
            self._client = _shared_client(self._key, self._client_kwargs)
            if self._on_progress is not None:
                _progress.setdefault(self._key, []).append(self._on_progress)
        return self._client

    # ---- lifecycle ------------------------------------------------------

    def create(self) -> None:
        if self.sandbox_id is not None:
            return
        if self._key not in _reaped:
            _reaped.add(self._key)
            self.reap_stale(self.client)
        tags = dict(self.tags)
        tags.update({HARNESS_TAG: HARNESS_VALUE, PID_TAG: str(os.getpid()), HOST_TAG: socket.gethostname()[:200]})
        self.sandbox_id = self.client.create_sandbox(self.spec, tags)
        self._torn_down = False
        with _lock:
            _live.add(self)

    @staticmethod
    def reap_stale(client: Client) -> List[str]:
        """Terminates this install's sandboxes that a ResidentSandbox of a
        process on this machine made, when that process is gone. Sandboxes of
        live processes and of other machines are left alone."""
        me = socket.gethostname()[:200]
        reaped = []
        for sb in client.list_owned():
            if sb.tags.get(HARNESS_TAG) != HARNESS_VALUE or sb.tags.get(HOST_TAG) != me:
                continue
            try:
                pid = int(sb.tags.get(PID_TAG, ""))
            except ValueError:
                continue
            if pid == os.getpid() or _pid_alive(pid):
                continue
            client.terminate(sb.sandbox_id)
            reaped.append(sb.sandbox_id)
        if reaped:
            log.info("reaped %d sandboxes left by crashed runs", len(reaped))
        return reaped

    def teardown(self) -> None:
        if self._torn_down or self.sandbox_id is None:
            self._torn_down = True
            return
        self.client.terminate(self.sandbox_id)
        self._torn_down = True
        with _lock:
            _live.discard(self)

    def __enter__(self) -> "ResidentSandbox":
        self.create()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.teardown()

    def __hash__(self) -> int:
        return id(self)

    # ---- work -----------------------------------------------------------

    def _id(self) -> str:
        if self.sandbox_id is None or self._torn_down:
            raise ResidentError("the sandbox is not created (call create())")
        return self.sandbox_id

    def exec(self, cmd: str, timeout: int = 300, cwd: Optional[str] = None,
             env: Optional[Mapping[str, str]] = None) -> ExecuteResult:
        r = self.client.exec(self._id(), [*self.shell, cmd], cwd=cwd or self.WORK_DIR, timeout_s=timeout, env=env)
        return ExecuteResult(r.exit_code, r.output.decode("utf-8", "replace"), r.timed_out)

    def exec_async_poll(self, cmd: str, timeout: int = 600, poll_interval: int = 10) -> ExecuteResult:
        """A long command that survives what a gateway timeout is for the
        peers: here, the resident itself going away. It runs as a detached
        exec (held by the sandbox, not by the resident) and is followed with
        exec/attach; when the resident dies the sandbox's client is spawned
        again and attaches from the last offset it delivered, so the output
        has nothing twice and nothing missing. ``poll_interval`` bounds the
        wait between reconnection attempts. A provider without detached
        execs runs it as one streamed exec."""
        sid = self._id()
        if not self.client.info.capabilities.get("detach"):
            return self.exec(cmd, timeout=timeout)
        exec_id = self.client.start_detached(sid, [*self.shell, cmd], cwd=self.WORK_DIR, timeout_s=timeout)
        chunks: List[bytes] = []
        offset = 0
        give_up = time.monotonic() + timeout + 60
        while True:
            ex = self.client.attach(exec_id, sandbox_id=sid, offset=offset,
                                    on_output=lambda _stream, data: chunks.append(data), capture=False)
            try:
                r = ex.result()
            except (ResidentExited, Transient) as e:
                offset = ex.offset if ex.offset is not None else offset
                if time.monotonic() > give_up:
                    raise
                log.warning("exec_async_poll: lost the resident (%s); attaching again at offset %d", e, offset)
                self._drop_dead_client()
                time.sleep(min(max(poll_interval, 0), 1.0))
                continue
            return ExecuteResult(r.exit_code, b"".join(chunks).decode("utf-8", "replace"), r.timed_out)

    def _drop_dead_client(self) -> None:
        """Forgets a shared client whose resident is gone, so the next use
        spawns a fresh one; a client the caller passed in is theirs."""
        if self._key[0] != "client" and self._client is not None and not self._client.alive:
            self._client = None

    def upload_file(self, remote_path: str, content: bytes, mode: Optional[int] = None) -> None:
        """Puts content at remote_path (relative paths are under WORK_DIR), any size."""
        sid = self._id()
        path = str(PurePosixPath(remote_path if remote_path.startswith("/") else f"{self.WORK_DIR}/{remote_path}"))
        limit = int(self.client.info.limits.get("max_file_bytes", 0))
        if len(content) <= limit:
            self.client.write_file(sid, path, content, mode)
            return
        if self.client.info.capabilities.get("upload"):
            self.client.upload(sid, path, content, mode)  # streamed and atomic
            return
        # Past one write_file, stream through the shell's cat. The path is
        # made relative to "/", which every provider resolves as the
        # sandbox's root (local maps it into the sandbox directory).
        rel = path.lstrip("/")
        script = 'mkdir -p "$(dirname "$1")" && cat > "$1"'
        if mode is not None:
            script += f' && chmod {mode:o} "$1"'
        r = self.client.exec(sid, [*self.shell, script, "sh", rel], cwd="/", stdin=content)
        if r.exit_code != 0:
            raise SetupError(f"upload of {remote_path} failed (exit {r.exit_code}): "
                             f"{r.output.decode('utf-8', 'replace')[-2000:]}")

    def read_file(self, remote_path: str) -> bytes:
        """The bytes of a file of the running sandbox (relative paths are
        under WORK_DIR), scrubbed as all output is; a missing file raises
        NotFound with reason no_such_file."""
        sid = self._id()
        path = remote_path if remote_path.startswith("/") else f"{self.WORK_DIR}/{remote_path}"
        data = self.client.read_sandbox_file(sid, path).data
        return data or b""

    def setup(self, seed_dir: Path, universe: str, loop_prompt_template: str,
              wheels: Optional[List[Path]] = None) -> None:
        self._id()
        if self.scaffold_command:
            self.upload_file(f"{self.WORK_DIR}/.loop_prompt_template", loop_prompt_template.encode("utf-8"))
            r = self.exec(self.scaffold_command, env={"UNIVERSE": universe,
                                                      "LOOP_PROMPT_TEMPLATE": ".loop_prompt_template"})
            if r.exit_code != 0:
                raise SetupError(f"scaffold command failed (exit {r.exit_code}): {r.output[-2000:]}")
        seed = Path(seed_dir)
        if seed.is_dir():
            for path in sorted(seed.rglob("*")):
                if path.is_file() and not path.is_symlink():
                    rel = path.relative_to(seed).as_posix()
                    self.upload_file(f"{self.WORK_DIR}/{rel}", path.read_bytes(), path.stat().st_mode & 0o777)
        if wheels:
            names = []
            for wheel in wheels:
                names.append(f".wheels/{Path(wheel).name}")
                self.upload_file(f"{self.WORK_DIR}/{names[-1]}", Path(wheel).read_bytes())
            if self.exec("python3 -m pip --version").exit_code != 0:
                log.warning("no pip in the image: %d wheels uploaded to %s/.wheels, not installed",
                            len(names), self.WORK_DIR)
                return
            r = self.exec("python3 -m pip install --no-index --find-links .wheels " +
                          " ".join(shlex.quote(n) for n in names), timeout=1800)
            if r.exit_code != 0:
                raise SetupError(f"wheel install failed (exit {r.exit_code}): {r.output[-2000:]}")


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
