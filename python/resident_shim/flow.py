"""Credit windows and the stdin feed: the two bounded buffers of an exec.

A Window is provider-protocol.md §4.4 on the sending side: at most ``size``
decoded bytes of one stream (an exec's two outputs together, or one
store/read_file) sent and not yet credited back. A sender blocks in
``acquire`` until the resident's ``exec/credit`` / ``store/credit`` makes room,
so a slow host stalls that stream alone and nothing here grows without bound.

A StdinFeed is the ``stdin`` iterable handed to a shim's ``exec``: each
``exec/stdin`` puts one chunk and waits until the shim's iterator has taken
it, which is what "answers once written into the process's stdin" means for
a Python iterable; memory is bounded by the one chunk per request.
"""

from __future__ import annotations

import collections
import threading
from typing import Deque, Iterator

from .errors import WireError


class Window:
    def __init__(self, size: int) -> None:
        self.size = max(1, size)
        self._outstanding = 0
        self._cond = threading.Condition()
        self._closed = False

    def acquire(self, n: int) -> bool:
        """Waits for room for n bytes (n <= size); False once the window is closed."""
        with self._cond:
            while not self._closed and self._outstanding + n > self.size:
                self._cond.wait()
            if self._closed:
                return False
            self._outstanding += n
            return True

    def credit(self, n: int) -> None:
        with self._cond:
            self._outstanding = max(0, self._outstanding - max(0, n))
            self._cond.notify_all()

    def close(self) -> None:
        with self._cond:
            self._closed = True
            self._cond.notify_all()


class StdinFeed(Iterator[bytes]):
    """The stdin iterable of one exec, fed by exec/stdin."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._items: Deque[bytes] = collections.deque()
        self._taken = 0  # chunks the shim has pulled so far
        self._put = 0  # chunks ever queued
        self._eof = False
        self._closed = False

    def __iter__(self) -> "StdinFeed":
        return self

    def __next__(self) -> bytes:
        with self._cond:
            while not self._items and not self._eof and not self._closed:
                self._cond.wait()
            if self._items:
                self._taken += 1
                self._cond.notify_all()
                return self._items.popleft()
            raise StopIteration

    def put(self, data: bytes, eof: bool) -> None:
        """Hands data to the shim and returns once its iterator took it."""
        with self._cond:
            if self._closed:
                raise WireError("conflict", "the exec has ended; its stdin is closed")
            if self._eof:
                raise WireError("conflict", "stdin was already closed (eof)")
            mine = None
            if data:
                self._items.append(bytes(data))
                self._put += 1
                mine = self._put
            self._eof = eof
            self._cond.notify_all()
            while mine is not None and self._taken < mine:
                if self._closed:
                    raise WireError("conflict", "the exec ended before it read this stdin")
                self._cond.wait()

    def close(self) -> None:
        """The exec is over: pending and later puts fail with conflict."""
        with self._cond:
            self._closed = True
            self._items.clear()
            self._cond.notify_all()
