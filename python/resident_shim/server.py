"""The session: read frames, run each request on its own thread, answer once.

The reader thread never runs shim code: requests go to threads (a shim call
may block for as long as the resident's deadline, after which the resident
kills this process), and the three notifications the resident sends
(``$/cancelRequest``, ``exec/credit``, ``store/credit``) only touch bridge
state. A cancelled request answers ``cancelled`` at once; whatever its thread
returns later is dropped. Params are never logged: they hold credentials.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from typing import Any, Callable, Dict

from .errors import WireError, error_object, to_wire
from .frames import FrameError, FrameReader, FrameWriter
from .workers import spawn

log = logging.getLogger("resident_shim")

Handler = Callable[["Request"], Any]

#: What a handler returns when it has answered its request itself.
REPLIED = object()


class Request:
    """One request in flight; reply() and fail() answer it at most once."""

    def __init__(self, server: "Server", rid: Any, method: str, params: Dict[str, Any]) -> None:
        self.server = server
        self.id = rid
        self.method = method
        self.params = params
        self.cancelled = threading.Event()
        self.on_cancel: Callable[[], None] = lambda: None  # a handler's way to unblock itself
        self._answered = False
        self._lock = threading.Lock()

    def _answer(self, key: str, value: Any) -> bool:
        with self._lock:
            if self._answered:
                return False
            self._answered = True
        self.server.forget(self.id)
        self.server.write({"jsonrpc": "2.0", "id": self.id, key: value})
        return True

    def reply(self, result: Any) -> bool:
        return self._answer("result", result)

    def fail(self, err: Dict[str, Any]) -> bool:
        return self._answer("error", err)

    def cancel(self) -> None:
        self.cancelled.set()
        if self.fail(error_object("cancelled", "%s was cancelled" % self.method)):
            self.on_cancel()


class Server:
    def __init__(self, reader: FrameReader, writer: FrameWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.handlers: Dict[str, Handler] = {}
        self.notifications: Dict[str, Callable[[Dict[str, Any]], None]] = {"$/cancelRequest": self._cancel}
        self._pending: Dict[Any, Request] = {}
        self._lock = threading.Lock()
        self.serving = False

    def write(self, msg: Dict[str, Any]) -> None:
        try:
            self.writer.write(msg)
        except (BrokenPipeError, OSError, ValueError) as e:  # the resident is gone
            log.info("stdout closed (%s); exiting", type(e).__name__)
            self.exit(0)
        except FrameError as e:
            log.error("dropped a message: %s", e)
            if "id" in msg:
                self.writer.write({"jsonrpc": "2.0", "id": msg["id"], "error": error_object("internal", str(e))})

    def notify(self, method: str, params: Dict[str, Any]) -> None:
        self.write({"jsonrpc": "2.0", "method": method, "params": params})

    def forget(self, rid: Any) -> None:
        with self._lock:
            self._pending.pop(rid, None)

    def exit(self, code: int) -> None:
        """Ends the process now: threads blocked in shim calls cannot hold it up."""
        try:
            sys.stderr.flush()
        finally:
            os._exit(code)

    # -- the read loop -----------------------------------------------------------

    def serve(self) -> None:
        """Reads until stdin EOF, then exits 0; a broken frame exits 1."""
        self.serving = True
        while True:
            try:
                msg = self.reader.read()
            except FrameError as e:
                log.error("the resident sent a broken frame: %s", e)
                self.exit(1)
            except OSError as e:
                log.error("reading stdin failed: %s", e)
                self.exit(1)
            if msg is None:
                log.info("stdin closed; exiting")
                self.exit(0)
            self._dispatch(msg)

    def _dispatch(self, msg: Any) -> None:
        if not isinstance(msg, dict) or not isinstance(msg.get("method"), str):
            if isinstance(msg, dict) and "id" in msg and ("result" in msg or "error" in msg):
                return  # we send no requests; an answer is not ours
            self.write({"jsonrpc": "2.0", "id": msg.get("id") if isinstance(msg, dict) else None,
                        "error": error_object("invalid_request", "not a JSON-RPC request")})
            return
        method = msg["method"]
        params = msg.get("params")
        if params is None:
            params = {}
        if "id" not in msg:
            fn = self.notifications.get(method)
            if fn is not None and isinstance(params, dict):
                try:
                    fn(params)
                except Exception as e:
                    log.warning("notification %s: %s", method, type(e).__name__)
            return
        rid = msg["id"]
        if not isinstance(params, dict):
            self.write({"jsonrpc": "2.0", "id": rid, "error": error_object("invalid_request", "params must be an object")})
            return
        handler = self.handlers.get(method)
        if handler is None:
            err = error_object("invalid_request", "unknown method %s" % method)
            err["code"] = -32601
            self.write({"jsonrpc": "2.0", "id": rid, "error": err})
            return
        req = Request(self, rid, method, params)
        with self._lock:
            self._pending[rid] = req
        spawn(self._run, handler, req, name="req-%s" % method)

    def _run(self, handler: Handler, req: Request) -> None:
        try:
            result = handler(req)
        except WireError as e:
            req.fail(error_object(e.kind, e.msg))
        except BaseException as e:  # a shim raising SystemExit must not end the session silently
            if not isinstance(e, Exception):
                log.warning("%s raised %s", req.method, type(e).__name__)
            req.fail(to_wire(e))
        else:
            if result is not REPLIED:
                req.reply(result)

    def _cancel(self, params: Dict[str, Any]) -> None:
        with self._lock:
            req = self._pending.get(params.get("id"))
        if req is not None:
            threading.Thread(target=req.cancel, name="cancel", daemon=True).start()


def require(params: Dict[str, Any], name: str, kind: type = str) -> Any:
    v = params.get(name)
    if not isinstance(v, kind) or isinstance(v, bool) and kind is not bool:
        raise WireError("invalid_request", "%s is required (%s)" % (name, kind.__name__))
    return v


def optional(params: Dict[str, Any], name: str, kind: type, default: Any) -> Any:
    v = params.get(name)
    if v is None:
        return default
    if not isinstance(v, kind) or isinstance(v, bool) and kind is not bool:
        raise WireError("invalid_request", "%s must be %s" % (name, kind.__name__))
    return v

