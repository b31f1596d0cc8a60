"""Content-Length frames over a pair of binary streams (provider-protocol.md §1).

Reads are exact: a header block ends at an empty line, ``Content-Length`` is
matched without regard to case, the length must be in ``1..max_bytes``, and
exactly that many bytes are read before decoding. Writes are one ``write`` and
one ``flush`` per frame under a lock, so threads never interleave frames and
nothing waits in a pipe buffer.
"""

from __future__ import annotations

import json
import threading
from typing import Any, BinaryIO, Optional

DEFAULT_MAX_FRAME = 16 << 20
_MAX_HEADER_LINE = 1024
_MAX_HEADER_LINES = 16


class FrameError(Exception):
    """The peer sent something that is not a frame; the channel cannot be trusted."""


class FrameReader:
    def __init__(self, stream: BinaryIO, max_bytes: int = DEFAULT_MAX_FRAME) -> None:
        self._r = stream
        self.max_bytes = max_bytes

    def read(self) -> Optional[Any]:
        """Returns the next decoded message, or None at a clean EOF between frames."""
        length = None
        for n in range(_MAX_HEADER_LINES + 1):
            line = self._r.readline(_MAX_HEADER_LINE)
            if not line:
                if n == 0:
                    return None
                raise FrameError("end of input inside a frame header")
            if not line.endswith(b"\n"):
                raise FrameError("frame header line too long")
            line = line.rstrip(b"\r\n")
            if not line:
                if length is None:
                    raise FrameError("frame without Content-Length")
                break
            name, sep, value = line.partition(b":")
            if not sep:
                raise FrameError("malformed frame header %r" % line[:64])
            if name.strip().lower() == b"content-length":
                try:
                    length = int(value.strip())
                except ValueError:
                    raise FrameError("bad Content-Length %r" % value[:32]) from None
        else:
            raise FrameError("too many frame header lines")
        if not 0 < length <= self.max_bytes:
            raise FrameError("frame of %d bytes is outside 1..%d" % (length, self.max_bytes))
        body = self._read_exact(length)
        try:
            return json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as e:
            raise FrameError("frame is not UTF-8 JSON: %s" % e) from None

    def _read_exact(self, n: int) -> bytes:
        parts = []
        while n > 0:
            chunk = self._r.read(n)
            if not chunk:
                raise FrameError("end of input inside a frame body")
            parts.append(chunk)
            n -= len(chunk)
        return b"".join(parts)


class FrameWriter:
    def __init__(self, stream: BinaryIO, max_bytes: int = DEFAULT_MAX_FRAME) -> None:
        self._w = stream
        self._lock = threading.Lock()
        self.max_bytes = max_bytes

    def write(self, msg: Any) -> None:
        body = json.dumps(msg, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        if len(body) > self.max_bytes:
            raise FrameError("message of %d bytes is over the %d byte frame limit" % (len(body), self.max_bytes))
        frame = b"Content-Length: %d\r\n\r\n" % len(body) + body
        with self._lock:
            self._w.write(frame)
            self._w.flush()
