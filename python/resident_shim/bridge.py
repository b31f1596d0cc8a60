"""The protocol's requests, each served by one call of the shim's contract.

Bridge holds what a session needs (the shim's PROVIDER, its description, the
running execs and store reads) and registers one handler per method on a
Server. Handlers run on request threads; whatever a shim call raises is
turned into a wire error by the Server (errors.to_wire).
"""

from __future__ import annotations

import base64
import logging
import threading
from typing import Any, Dict, Optional

from . import PROTOCOL_VERSION, convert
from .calls import accepts, quietly
from .errors import WireError
from .execs import Exec
from .flow import StdinFeed, Window
from .server import REPLIED, Request, Server, optional, require
from .store import StoreOps

log = logging.getLogger("resident_shim")

DEFAULT_WINDOW = 1 << 20
MAX_CHUNK = 256 << 10


class Bridge(StoreOps):
    def __init__(self, provider: Any, describe: Dict[str, Any], exec_timeout: Optional[int] = None) -> None:
        self.p = provider
        self.describe = describe
        self.name = describe["name"]
        self.exec_timeout = exec_timeout
        self.window = DEFAULT_WINDOW
        self.chunk = MAX_CHUNK
        self.initialized = False
        self.execs: Dict[str, Exec] = {}
        self.reads: Dict[str, Window] = {}
        self._lock = threading.Lock()
        self._exec_takes_cwd = accepts(getattr(provider, "exec", None), "cwd")
        self._exec_takes_exclusive = accepts(getattr(provider, "exec", None), "exclusive")

    def register(self, server: Server) -> None:
        self.server = server
        table = {
            "initialize": self.initialize, "auth/apply": self.auth_apply, "shutdown": self.shutdown,
            "sandbox/create": self.create, "sandbox/list_owned": self.list_owned,
            "sandbox/read_owner": self.read_owner, "sandbox/terminate": self.terminate,
            "sandbox/write_file": self.write_file, "exec/start": self.exec_start,
            "exec/stdin": self.exec_stdin, "exec/kill": self.exec_kill,
            "store/list_volumes": self.list_volumes, "store/list_dir": self.list_dir,
            "store/read_file": self.read_file,
        }
        for method, fn in table.items():
            server.handlers[method] = self._gate(fn) if method != "initialize" else fn
        server.notifications["exec/credit"] = self._exec_credit
        server.notifications["store/credit"] = self._store_credit

    def _gate(self, fn: Any) -> Any:
        def gated(req: Request) -> Any:
            if not self.initialized:
                raise WireError("invalid_request", "initialize first")
            return fn(req)
        return gated

    # -- session -----------------------------------------------------------------

    def initialize(self, req: Request) -> Dict[str, Any]:
        v = req.params.get("protocol_version")
        if v != PROTOCOL_VERSION:
            raise WireError("invalid_request", "protocol_version %r is not supported; this bridge speaks %d"
                            % (v, PROTOCOL_VERSION))
        frame = optional(req.params, "max_frame_bytes", int, 0)
        if frame > 0:
            self.server.reader.max_bytes = frame
            self.server.writer.max_bytes = frame
            # base64 grows 4/3, and the envelope needs room of its own
            self.chunk = max(1, min(MAX_CHUNK, (frame - 1024) * 3 // 4))
        self.window = optional(req.params, "exec_window_bytes", int, 0) or DEFAULT_WINDOW
        self.chunk = min(self.chunk, self.window)
        self.initialized = True
        log.info("session open with resident %s", str(req.params.get("resident_version", "?"))[:64])
        return self.describe

    def auth_apply(self, req: Request) -> Dict[str, Any]:
        creds = optional(req.params, "credentials", dict, {})
        self.p.apply_auth(convert.str_map(creds))
        return {}

    def shutdown(self, req: Request) -> Any:
        req.reply({})
        self.server.exit(0)
        return REPLIED

    # -- sandboxes ---------------------------------------------------------------

    def _owner_key(self, key: str) -> str:
        """key, when it is the one the shim writes.

        With --owner-key the shim writes that key and no other; a sandbox with
        two owner-shaped tags belongs to nobody (the resident drops it), so a
        different key is refused rather than creating a sandbox no one can
        find again."""
        fixed = self.describe.get("owner_key")
        if fixed and key != fixed:
            raise WireError("invalid_request", "owner key %r: this shim writes %r (its announced owner_key)"
                            % (key, fixed))
        return key

    def _writes(self, key: str) -> bool:
        """Whether the shim's sandboxes can carry an owner tag under key."""
        fixed = self.describe.get("owner_key")
        return not fixed or key == fixed

    def create(self, req: Request) -> Dict[str, Any]:
        spec = optional(req.params, "spec", dict, {})
        owner = require(req.params, "owner", dict)
        key, install_id = self._owner_key(require(owner, "key")), require(owner, "install_id")
        tags = convert.str_map(optional(req.params, "tags", dict, {}))
        for k in tags:
            # the resident refuses these first; an incoming tag must still never decide ownership
            if k.lower().endswith("-install-id") or k.lower().startswith("dev.resident."):
                raise WireError("invalid_request", "tag %r: owner-shaped and dev.resident. keys are the resident's" % k)
        tags[key] = install_id  # the owner tag merged last
        sid = self.p.create_sandbox(spec, install_id, tags)
        if not isinstance(sid, str) or not sid:
            raise TypeError("create_sandbox returned %r, not a sandbox id" % (sid,))
        return {"sandbox_id": sid}

    def list_owned(self, req: Request) -> Dict[str, Any]:
        owner = require(req.params, "owner", dict)
        key, install_id = require(owner, "key"), require(owner, "install_id")
        if not self._writes(key):
            return {"sandboxes": []}  # the shim writes no owner tag under that key
        items = self.p.list_owned(install_id)
        return {"sandboxes": convert.listed(items, convert.sandbox, key, install_id)}

    def read_owner(self, req: Request) -> Dict[str, Any]:
        key = optional(req.params, "owner_key", str, "")
        owner = self.p.read_owner(require(req.params, "sandbox_id"))  # not_found for a missing sandbox
        if key and not self._writes(key):
            return {"owner": ""}  # the shim writes no tag under any other key
        return {"owner": owner if isinstance(owner, str) else ""}

    def terminate(self, req: Request) -> Dict[str, Any]:
        try:
            existed = self.p.terminate(require(req.params, "sandbox_id"))
        except Exception as e:
            if getattr(e, "kind", None) == "not_found":
                return {"existed": False}
            raise
        return {"existed": existed if isinstance(existed, bool) else True}

    def write_file(self, req: Request) -> Any:
        raise WireError("invalid_request", "provider %s has no write_file (the shim contract has none)" % self.name)

    # -- exec --------------------------------------------------------------------

    def exec_start(self, req: Request) -> Any:
        exec_id = require(req.params, "exec_id")
        sid = require(req.params, "sandbox_id")
        argv = require(req.params, "argv", list)
        if not argv or not all(isinstance(a, str) for a in argv):
            raise WireError("invalid_request", "argv must be a non-empty list of strings")
        env = convert.str_map(optional(req.params, "env", dict, {}))
        cwd = optional(req.params, "cwd", str, "")
        kw: Dict[str, Any] = {"env": env, "timeout": self.exec_timeout}
        if cwd:
            if not self._exec_takes_cwd:
                raise WireError("invalid_request", "provider %s cannot set an exec's cwd" % self.name)
            kw["cwd"] = cwd
        exclusive = optional(req.params, "exclusive", bool, False)
        if exclusive:
            # never run it beside others: a shim that cannot stop them refuses
            if not self._exec_takes_exclusive:
                raise WireError("invalid_request", "provider %s cannot run an exclusive exec "
                                "(its exec takes no exclusive keyword)" % self.name)
            kw["exclusive"] = True
        feed = StdinFeed() if optional(req.params, "stdin", bool, False) else None
        kw["stdin"] = feed
        with self._lock:
            if exec_id in self.execs:
                raise WireError("conflict", "exec %s is already running" % exec_id)
            ex = Exec(exec_id, Window(self.window), self.chunk, self.server.notify, self._exec_ended, feed)
            ex.sandbox_id = sid
            self.execs[exec_id] = ex
            victims = [o for o in self.execs.values() if exclusive and o is not ex and o.sandbox_id == sid]
            for other in victims:  # the shim stops them; their exits say why
                other.killed_for_exclusive = True
        try:
            result = self.p.exec(sid, list(argv), **kw)
        except BaseException:
            self._exec_ended(ex)
            for other in victims:  # it did not start: maybe nothing was stopped
                other.killed_for_exclusive = False
            raise
        if not req.reply({}):  # cancelled while it started: nobody wants it
            self._exec_ended(ex)
            ex.result = result
            kill = getattr(result, "kill", None)
            if callable(kill):
                threading.Thread(target=quietly, args=(kill,), daemon=True).start()
            ex.abandon(send_exit=False)
            return REPLIED
        ex.start(result)
        return REPLIED

    def _exec_ended(self, ex: Exec) -> None:
        with self._lock:
            if self.execs.get(ex.id) is ex:
                del self.execs[ex.id]

    def _find(self, req: Request) -> Exec:
        exec_id = require(req.params, "exec_id")
        with self._lock:
            ex = self.execs.get(exec_id)
        if ex is None:
            raise WireError("not_found", "no running exec %s" % exec_id)
        return ex

    def exec_stdin(self, req: Request) -> Dict[str, Any]:
        ex = self._find(req)
        if ex.stdin is None:
            raise WireError("invalid_request", "exec %s was started without stdin" % ex.id)
        data = optional(req.params, "data", str, "")
        try:
            raw = base64.b64decode(data, validate=True)
        except ValueError:
            raise WireError("invalid_request", "data is not base64") from None
        ex.stdin.put(raw, bool(req.params.get("eof")))
        return {}

    def exec_kill(self, req: Request) -> Dict[str, Any]:
        exec_id = require(req.params, "exec_id")
        with self._lock:
            ex = self.execs.get(exec_id)
        if ex is not None:  # else it already ended: its exec/exit was sent
            ex.kill()
        return {}

    def _exec_credit(self, params: Dict[str, Any]) -> None:
        with self._lock:
            ex = self.execs.get(params.get("exec_id"))
        n = params.get("bytes")
        if ex is not None and isinstance(n, int):
            ex.window.credit(n)
