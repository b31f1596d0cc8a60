"""Typed results of the resident's operations (docs/protocol.md section 4)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Dict, List, Optional, Tuple


def parse_time(text: Any) -> Optional[datetime]:
    """RFC 3339 from the wire; Python before 3.11 takes neither 'Z' nor
    nanoseconds, so both are normalised first."""
    if not isinstance(text, str) or not text:
        return None
    t = text.replace("Z", "+00:00")
    head, dot, rest = t.partition(".")
    if dot:
        digits = ""
        i = 0
        while i < len(rest) and rest[i].isdigit():
            digits += rest[i]
            i += 1
        t = head + "." + (digits[:6].ljust(6, "0")) + rest[i:]
    return datetime.fromisoformat(t)


@dataclass
class Info:
    """What initialize answered: the provider, its capabilities and every limit."""
    resident_version: str
    protocol_version: int
    provider: str
    provider_version: str
    capabilities: Dict[str, bool]
    limits: Dict[str, int]
    owner_tag: str
    raw: Dict[str, Any] = field(repr=False, default_factory=dict)

    @classmethod
    def from_wire(cls, r: Dict[str, Any]) -> "Info":
        p = r.get("provider") or {}
        return cls(r.get("resident_version", ""), r.get("protocol_version", 0), p.get("name", ""),
                   p.get("version", ""), dict(r.get("capabilities") or {}), dict(r.get("limits") or {}),
                   r.get("owner_tag", ""), r)


@dataclass
class ExecResult:
    """How an exec ended, with its output (when captured) in bytes."""
    exit_code: int
    timed_out: bool = False
    killed: bool = False
    signal: Optional[str] = None
    oom_killed: bool = False
    stdout_bytes: int = 0
    stderr_bytes: int = 0
    stdout_dropped: int = 0
    stderr_dropped: int = 0
    duration_ms: int = 0
    #: Detached execs: where exec/attach would continue (the end of the
    #: output), and the asked-for bytes the sandbox no longer kept.
    next_offset: Optional[int] = None
    output_lost: int = 0
    stdout: bytes = b""
    stderr: bytes = b""
    #: (stream, data) chunks in the order they arrived, when captured.
    chunks: List[Tuple[str, bytes]] = field(default_factory=list, repr=False)

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out and not self.killed

    @property
    def output(self) -> bytes:
        """stdout and stderr together, in arrival order."""
        return b"".join(data for _, data in self.chunks)

    @classmethod
    def from_wire(cls, r: Dict[str, Any]) -> "ExecResult":
        return cls(exit_code=int(r.get("exit_code", -1)), timed_out=bool(r.get("timed_out")),
                   killed=bool(r.get("killed")), signal=r.get("signal") or None,
                   oom_killed=bool(r.get("oom_killed")), stdout_bytes=int(r.get("stdout_bytes", 0)),
                   stderr_bytes=int(r.get("stderr_bytes", 0)), stdout_dropped=int(r.get("stdout_dropped", 0)),
                   stderr_dropped=int(r.get("stderr_dropped", 0)), duration_ms=int(r.get("duration_ms", 0)),
                   next_offset=r.get("next_offset"), output_lost=int(r.get("output_lost", 0)))


@dataclass
class ExecInfo:
    """One detached exec as sandbox/list_execs reports it."""
    exec_id: str
    argv: List[str]
    started_at: str
    running: bool
    exit_code: Optional[int] = None
    signal: Optional[str] = None
    next_offset: int = 0
    buffered_bytes: int = 0
    dropped_bytes: int = 0

    @classmethod
    def from_wire(cls, r: Dict[str, Any]) -> "ExecInfo":
        return cls(r.get("exec_id", ""), list(r.get("argv") or []), r.get("started_at", ""), bool(r.get("running")),
                   r.get("exit_code"), r.get("signal") or None, int(r.get("next_offset", 0)),
                   int(r.get("buffered_bytes", 0)), int(r.get("dropped_bytes", 0)))


@dataclass
class Sandbox:
    """One owned sandbox as sandbox/list_owned reports it."""
    sandbox_id: str
    tags: Dict[str, str]
    created_at: Optional[datetime]
    state: str
    image: Optional[str] = None

    @classmethod
    def from_wire(cls, r: Dict[str, Any]) -> "Sandbox":
        return cls(r["sandbox_id"], dict(r.get("tags") or {}), parse_time(r.get("created_at")),
                   r.get("state", "unknown"), r.get("image") or None)


@dataclass
class Volume:
    name: str
    created_at: Optional[datetime]

    @classmethod
    def from_wire(cls, r: Dict[str, Any]) -> "Volume":
        return cls(r["name"], parse_time(r.get("created_at")))


@dataclass
class DirEntry:
    name: str
    type: str
    size: int
    mtime: Optional[datetime]

    @classmethod
    def from_wire(cls, r: Dict[str, Any]) -> "DirEntry":
        return cls(r["name"], r.get("type", "other"), int(r.get("size", 0)), parse_time(r.get("mtime")))


@dataclass
class Listing:
    entries: List[DirEntry]
    truncated: bool


@dataclass
class ReadResult:
    """A streamed read: the bytes as received (scrubbed), and their checks."""
    size: int
    sha256: str
    redacted: bool
    data: Optional[bytes] = field(default=None, repr=False)
