"""Exceptions mirroring the resident's closed set of error kinds.

Branch on the class (or ``kind``), never on the message: the message is for
humans, it is scrubbed by the resident before it leaves it, and its wording may
change. ``reason``, when the resident sends one, is a stable finer code.
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Type


class ResidentError(Exception):
    """Any failure reported by (or about) the resident."""

    kind: Optional[str] = None

    def __init__(self, message: str, *, code: Optional[int] = None, method: Optional[str] = None,
                 data: Optional[Dict[str, Any]] = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.method = method
        self.data: Dict[str, Any] = dict(data or {})

    @property
    def reason(self) -> Optional[str]:
        """Why, from a closed set (no_such_file, is_directory, not_directory,
        permission_denied, too_large, exists), for a failure about a file, a
        program or a volume: a missing file is told from a missing sandbox."""
        r = self.data.get("reason")
        return r if isinstance(r, str) else None

    @property
    def field(self) -> Optional[str]:
        """The param the reason is about (path, argv, cwd, user, name)."""
        f = self.data.get("field")
        return f if isinstance(f, str) else None

    def __str__(self) -> str:
        where = f"{self.method}: " if self.method else ""
        return f"{where}{self.message}"


class InvalidRequest(ResidentError):
    """The request is malformed or refused by validation: fix it, do not retry."""
    kind = "invalid_request"


class NotFound(ResidentError):
    """The sandbox, exec, volume or file does not exist, or is not yours."""
    kind = "not_found"


class Unauthorized(ResidentError):
    """Credentials were refused or expired; the session is ending."""
    kind = "unauthorized"


class CredentialsExpired(Unauthorized):
    """The credentials given at start expired; respawn with fresh ones."""


class QuotaExceeded(ResidentError):
    """A limit was hit; retry later or shrink the request."""
    kind = "quota"


class OperationTimeout(ResidentError):
    """A provider operation timed out (an exec's own timeout is a result, not this)."""
    kind = "timeout"


class Cancelled(ResidentError):
    """Cancelled by the host, by shutdown or by the end of the session."""
    kind = "cancelled"


class Conflict(ResidentError):
    """The request clashes with state (a reused exec id, a stopped sandbox)."""
    kind = "conflict"


class Transient(ResidentError):
    """A temporary or unclassified failure: retry with backoff."""
    kind = "transient"


class InternalError(ResidentError):
    """A bug in the resident. Report it."""
    kind = "internal"


class ResidentExited(ResidentError):
    """The resident process ended; every call in flight fails with this."""

    def __init__(self, message: str, *, returncode: Optional[int] = None, **kw: Any) -> None:
        super().__init__(message, **kw)
        self.returncode = returncode


class ProtocolError(ResidentError):
    """The resident sent something this package cannot understand."""


KINDS: Dict[str, Type[ResidentError]] = {
    cls.kind: cls  # type: ignore[misc]
    for cls in (InvalidRequest, NotFound, Unauthorized, QuotaExceeded, OperationTimeout,
                Cancelled, Conflict, Transient, InternalError)
}


def from_wire(error: Any, method: Optional[str]) -> ResidentError:
    """Builds the exception for a JSON-RPC error object. An unknown kind is
    transient, as the protocol says of unknown kinds."""
    if not isinstance(error, dict):
        return ProtocolError(f"malformed error object {error!r:.200}", method=method)
    data = error.get("data") if isinstance(error.get("data"), dict) else {}
    kind = data.get("kind")
    cls = KINDS.get(kind, Transient) if isinstance(kind, str) else Transient
    code = error.get("code") if isinstance(error.get("code"), int) else None
    message = error.get("message") if isinstance(error.get("message"), str) else "error"
    return cls(message, code=code, method=method, data=data)
