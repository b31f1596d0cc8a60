"""Shapes of the contract's dicts turned into the wire's (never trusting a shim's types).

Times become RFC 3339 in UTC (Go's time.Time reads nothing else): a datetime,
an ISO string, or seconds since the epoch; anything unreadable is the zero
time. A sandbox dict may name its id ``sandbox_id`` or ``id`` and its tags
``tags`` or ``labels``.
"""

from __future__ import annotations

import datetime as _dt
import re
from typing import Any, Dict, List, Optional

ZERO_TIME = "0001-01-01T00:00:00Z"
STATES = ("running", "stopped", "expired", "unknown")
ENTRY_TYPES = ("file", "dir", "symlink", "other")
_FRACTION = re.compile(r"(\.\d{6})\d+")


def rfc3339(v: Any) -> str:
    when: Optional[_dt.datetime] = None
    if isinstance(v, _dt.datetime):
        when = v
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        try:
            when = _dt.datetime.fromtimestamp(v, _dt.timezone.utc)
        except (OverflowError, OSError, ValueError):
            return ZERO_TIME
    elif isinstance(v, str) and v:
        text = _FRACTION.sub(r"\1", v.strip()).replace("Z", "+00:00").replace("z", "+00:00")
        try:
            when = _dt.datetime.fromisoformat(text)
        except ValueError:
            return ZERO_TIME
    if when is None:
        return ZERO_TIME
    if when.tzinfo is None:
        when = when.replace(tzinfo=_dt.timezone.utc)
    return when.astimezone(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def str_map(v: Any) -> Dict[str, str]:
    if not isinstance(v, dict):
        return {}
    return {str(k): str(val) for k, val in v.items() if val is not None}


def sandbox(d: Any, owner_key: str, install_id: str) -> Optional[Dict[str, Any]]:
    """One list_owned entry, or None when it is not this install's.

    A shim's list_owned(install_id) vouches for ownership; an entry that shows
    no tags at all is reported with the owner tag, one whose owner tag says
    another install is dropped (the contract is an exact match).
    """
    if isinstance(d, str):
        d = {"sandbox_id": d}
    if not isinstance(d, dict):
        return None
    sid = d.get("sandbox_id", d.get("id"))
    if not isinstance(sid, str) or not sid:
        return None
    raw_tags = d.get("tags", d.get("labels"))
    tags = str_map(raw_tags)
    if raw_tags is None:
        tags = {owner_key: install_id}
    elif tags.get(owner_key, install_id) != install_id:
        return None
    state = d.get("state", "unknown")
    out: Dict[str, Any] = {"sandbox_id": sid, "tags": tags, "created_at": rfc3339(d.get("created_at")),
                           "state": state if state in STATES else "unknown"}
    if isinstance(d.get("image"), str) and d["image"]:
        out["image"] = d["image"]
    return out


def volume(d: Any, owner_key: str = "", install_id: str = "") -> Optional[Dict[str, Any]]:
    """One list_volumes entry, or None when the asking install may not see it.

    Store volumes are owner-scoped like sandboxes. A volume dict with ``tags``
    (or ``labels``) is visible only when its owner tag is install_id; one with
    neither is visible to every install (the contract's store has no owner: the
    shim's credentials scope it)."""
    if isinstance(d, str):
        d = {"name": d}
    if not isinstance(d, dict) or not isinstance(d.get("name"), str):
        return None
    raw_tags = d.get("tags", d.get("labels"))
    if owner_key and raw_tags is not None and str_map(raw_tags).get(owner_key) != install_id:
        return None
    return {"name": d["name"], "created_at": rfc3339(d.get("created_at"))}


def entry(d: Any) -> Optional[Dict[str, Any]]:
    if not isinstance(d, dict) or not isinstance(d.get("name"), str):
        return None
    kind = d.get("type", "other")
    size = d.get("size", 0)
    return {"name": d["name"], "type": kind if kind in ENTRY_TYPES else "other",
            "size": int(size) if isinstance(size, (int, float)) and not isinstance(size, bool) else 0,
            "mtime": rfc3339(d.get("mtime"))}


def listed(items: Any, fn: Any, *args: Any) -> List[Dict[str, Any]]:
    if items is None:
        return []
    return [x for x in (fn(i, *args) for i in items) if x is not None]
