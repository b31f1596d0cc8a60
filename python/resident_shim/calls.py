"""Small helpers for calling a shim's code, which may lack an extension or raise anything."""

from __future__ import annotations

import inspect
import logging
from typing import Any

from .errors import to_wire

log = logging.getLogger("resident_shim")


def accepts(fn: Any, name: str) -> bool:
    """Whether fn takes a keyword argument name (an optional extension of the contract)."""
    try:
        ps = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind == p.VAR_KEYWORD for p in ps)


def quietly(fn: Any) -> None:
    try:
        fn()
    except Exception as e:
        log.warning("%s failed: %s", getattr(fn, "__name__", "call"), to_wire(e)["message"][:200])
