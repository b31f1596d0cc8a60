"""One place where Python exceptions become wire errors (provider-protocol.md §7).

A ByocError (ours, or any exception with string ``kind`` and ``msg``) keeps its
kind when the kind is in the closed set and becomes ``transient`` otherwise, as
the contract says. Every other exception is a bug of the shim: ``internal``, with
its message (the resident scrubs messages before a host sees them).
"""

from __future__ import annotations

from typing import Any, Dict

from .contract import KINDS

CODES = {
    "invalid_request": -32602,
    "not_found": -32001,
    "unauthorized": -32002,
    "quota": -32003,
    "timeout": -32004,
    "conflict": -32005,
    "transient": -32006,
    "cancelled": -32800,
    "internal": -32603,
}


class WireError(Exception):
    """An error the bridge itself raises, with a kind from the closed set."""

    def __init__(self, kind: str, msg: str) -> None:
        super().__init__(msg)
        self.kind = kind
        self.msg = msg


def error_object(kind: str, message: str) -> Dict[str, Any]:
    if kind not in KINDS:
        kind = "transient"
    return {"code": CODES[kind], "message": message or kind, "data": {"kind": kind}}


def to_wire(exc: BaseException) -> Dict[str, Any]:
    """The JSON-RPC error object for exc."""
    kind = getattr(exc, "kind", None)
    msg = getattr(exc, "msg", None)
    if isinstance(kind, str) and (msg is None or isinstance(msg, str)):
        message = msg or str(exc) or kind
        return error_object(kind if kind in KINDS else "transient", message)
    text = str(exc)
    message = "%s: %s" % (type(exc).__name__, text) if text else type(exc).__name__
    return error_object("internal", message)
