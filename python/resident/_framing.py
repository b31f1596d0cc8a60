"""LSP-style Content-Length framing, as docs/protocol.md section 1 states it."""

from __future__ import annotations

import json
from typing import IO, Any, Optional

MAX_HEADER_BYTES = 8192


class FramingError(Exception):
    """The byte stream from the resident is not a valid frame sequence."""


def encode(message: Any) -> bytes:
    body = json.dumps(message, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body


def read_frame(stream: IO[bytes], max_body: int) -> Optional[bytes]:
    """Reads one frame body; None at a clean end of stream (between frames)."""
    length = None
    header_bytes = 0
    first = True
    while True:
        line = stream.readline(MAX_HEADER_BYTES + 1)
        if not line:
            if first:
                return None
            raise FramingError("stream ended inside a frame header")
        first = False
        header_bytes += len(line)
        if header_bytes > MAX_HEADER_BYTES or not line.endswith(b"\n"):
            raise FramingError("frame header too long")
        line = line.rstrip(b"\r\n")
        if not line:
            break
        name, sep, value = line.partition(b":")
        if not sep:
            raise FramingError("malformed header line %r" % line[:80])
        if name.strip().lower() == b"content-length":
            try:
                length = int(value.strip())
            except ValueError:
                raise FramingError("bad Content-Length %r" % value[:40]) from None
    if length is None or length <= 0 or length > max_body:
        raise FramingError("bad frame length %r" % length)
    body = stream.read(length)
    if body is None or len(body) != length:
        raise FramingError("stream ended inside a frame body")
    return body
