"""Small helpers for calling a shim's code, which may lack an extension or raise anything."""

from __future__ import annotations

import inspect
import logging
from typing import Any

from .errors import to_wire

log = logging.getLogger("resident_shim")


def accepts(fn: Any, name: str) -> bool:
    """Whether fn names a keyword argument name (an optional extension of the contract).

    Only a parameter of that name counts, never ``**kwargs``: an extension such as
    ``exclusive`` must not be passed to a shim that could silently ignore it."""
    try:
        ps = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name and p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) for p in ps)


def quietly(fn: Any) -> None:
    try:
        fn()
    except Exception as e:
        log.warning("%s failed: %s", getattr(fn, "__name__", "call"), to_wire(e)["message"][:200])
