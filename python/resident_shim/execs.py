"""One running exec: its output pumps, its waiter and its single exec/exit.

Each of the shim's ``stdout`` and ``stderr`` iterables is drained on its own
thread, so a slow or silent stream never holds the other back; both share the
exec's credit Window (§4.4). A third thread calls ``wait()``; once the main
process has exited, a stream that stays silent for DRAIN_IDLE (a background
child holding it open), or keeps the exec reading for longer than DRAIN_MAX,
is abandoned so the exit is not delayed (§4.5). Exactly one ``exec/exit`` is
sent, after the last ``exec/output``: both go out under the exec's lock.

Silence is a guess, and on a loaded machine a stream still delivering can
be silent that long: its tail would be lost with exit 0. An exec object
whose streams end by themselves soon after the exit (Docker's engine closes
them 2 s after an exec's process exits) says so with
``streams_end_after_exit`` (seconds): the bridge then waits that long for the
end before silence counts, and nothing the backend delivers is cut.

Kill: an exec object with ``kill()`` has it called, and the exit follows from
``wait()``. Without it the exec is abandoned at once: its iterators are closed
when they have ``close()``, and the exit says 137/SIGKILL; the remote process
runs on until the shim's own timeout stops it.
"""

from __future__ import annotations

import base64
import logging
import signal as _signal
import threading
import time
from typing import Any, Callable, Dict, Iterable, List, Optional

from .errors import to_wire
from .flow import StdinFeed, Window
from .workers import spawn

DRAIN_IDLE = 0.3
DRAIN_MAX = 5.0
#: the most an exec object's streams_end_after_exit is taken at
STREAMS_END_MAX = 10.0
KILLED_CODE = 128 + 9

log = logging.getLogger("resident_shim")


def _streams_end_after_exit(result: Any) -> float:
    """The exec object's promise of when its streams end after the exit, 0 if none."""
    try:
        grace = getattr(result, "streams_end_after_exit", None)
    except Exception:  # a property of the shim's that raises promises nothing
        return 0.0
    if isinstance(grace, bool) or not isinstance(grace, (int, float)) or not grace > 0:
        return 0.0
    return min(float(grace), STREAMS_END_MAX)


def _signal_name(n: int) -> str:
    try:
        return _signal.Signals(n).name
    except ValueError:
        return ""


class _Pump:
    def __init__(self, name: str) -> None:
        self.name = name
        self.reading_since: Optional[float] = time.monotonic()
        self.done = False


class Exec:
    def __init__(self, exec_id: str, window: Window, chunk: int, send: Callable[[str, Dict[str, Any]], None],
                 on_end: Callable[["Exec"], None], stdin: Optional[StdinFeed]) -> None:
        self.id = exec_id
        self.sandbox_id = ""
        #: an exclusive exec in the same sandbox stopped this one: its exit says killed
        self.killed_for_exclusive = False
        self.window = window
        self.chunk = chunk
        self.stdin = stdin
        self._send = send
        self._on_end = on_end
        self._lock = threading.Lock()
        self._cond = threading.Condition(self._lock)
        self._ended = False
        self._pumps: List[_Pump] = []
        self._kill_pending = False
        self.result: Any = None

    # -- start -------------------------------------------------------------------

    def start(self, result: Any) -> None:
        """Begins draining the shim's exec object; call after exec/start was answered."""
        with self._lock:
            self.result = result
            kill_now = self._kill_pending
        for name in ("stdout", "stderr"):
            pump = _Pump(name)
            self._pumps.append(pump)
            src = getattr(result, name, None) or ()
            spawn(self._pump, pump, src, name="exec-%s-%s" % (self.id, name))
        spawn(self._wait, name="exec-%s-wait" % self.id)
        if kill_now:
            self.kill()

    def _pump(self, pump: _Pump, src: Iterable[Any]) -> None:
        try:
            it = iter(src)
            while True:
                with self._lock:
                    pump.reading_since = time.monotonic()
                try:
                    chunk = next(it)
                except StopIteration:
                    break
                with self._lock:
                    pump.reading_since = None
                if isinstance(chunk, str):
                    chunk = chunk.encode("utf-8")
                data = bytes(chunk)
                for off in range(0, len(data), self.chunk):
                    piece = data[off:off + self.chunk]
                    if not self.window.acquire(len(piece)):
                        return
                    with self._lock:
                        if self._ended:
                            return
                        self._send("exec/output", {"exec_id": self.id, "stream": pump.name,
                                                   "data": base64.b64encode(piece).decode("ascii")})
        except Exception as e:  # the stream broke: the exit still comes from wait()
            if not self._ended:
                log.warning("exec %s: %s stream failed: %s", self.id, pump.name, type(e).__name__)
        finally:
            with self._cond:
                pump.done = True
                pump.reading_since = None
                self._cond.notify_all()

    def _wait(self) -> None:
        code: Optional[int] = None
        error: Optional[Dict[str, Any]] = None
        try:
            got = self.result.wait()
            if isinstance(got, bool) or not isinstance(got, int):
                raise TypeError("wait() returned %r, not an int" % (got,))
            code = got
        except BaseException as e:  # a shim's wait() may raise anything, SystemExit included
            error = to_wire(e)
        exited = time.monotonic()
        # Silence counts only after the streams were promised to end; the cap
        # stays a backstop against a shim that does not keep its promise.
        quiet_from = exited + _streams_end_after_exit(self.result)
        with self._cond:
            while not self._ended and not all(p.done for p in self._pumps):
                now = time.monotonic()
                stuck = [p for p in self._pumps if not p.done and p.reading_since is not None and
                         (now - max(p.reading_since, quiet_from) >= DRAIN_IDLE or now - quiet_from >= DRAIN_MAX)]
                if stuck:
                    break
                self._cond.wait(DRAIN_IDLE / 4)
        if code is not None and code < 0:  # subprocess style: -N for signal N
            self.finish(128 - code, _signal_name(-code), None)
        else:
            self.finish(code or 0, "", error)

    # -- end ---------------------------------------------------------------------

    def finish(self, code: int, signal: str, error: Optional[Dict[str, Any]]) -> bool:
        """Sends the one exec/exit; later calls do nothing. True if this call sent it."""
        with self._lock:
            if self._ended:
                return False
            self._ended = True
            msg: Dict[str, Any] = {"exec_id": self.id, "code": code}
            if signal:
                msg["signal"] = signal
            if self.killed_for_exclusive:
                msg["killed"] = True
            if error is not None:
                msg["error"] = error
            try:
                self._send("exec/exit", msg)
            finally:
                self._cond.notify_all()
        self.window.close()
        if self.stdin is not None:
            self.stdin.close()
        self._on_end(self)
        return True

    @property
    def ended(self) -> bool:
        return self._ended

    def kill(self) -> None:
        """exec/kill: the shim's kill() when it has one, else abandon at once.

        A kill that arrives while the exec is still being started is applied
        as soon as it runs."""
        with self._lock:
            if self._ended:
                return
            if self.result is None:
                self._kill_pending = True
                return
        kill = getattr(self.result, "kill", None)
        if callable(kill):
            kill()
            return
        self.abandon(send_exit=True)

    def abandon(self, send_exit: bool) -> None:
        """Stops caring about this exec: closes its iterators and, if asked, reports it killed."""
        if send_exit:
            self.finish(KILLED_CODE, "SIGKILL", None)
        else:
            with self._lock:
                self._ended = True
            self.window.close()
            if self.stdin is not None:
                self.stdin.close()
            self._on_end(self)
        for name in ("stdout", "stderr"):
            close = getattr(getattr(self.result, name, None), "close", None)
            if callable(close):
                try:
                    close()
                except Exception:  # a generator running on its pump thread refuses; it is abandoned anyway
                    pass
