"""The store requests (provider-protocol.md §3): the contract's optional list_volumes,
list_dir and read_file, owner-scoped the way the protocol says.

The contract's store has no owner. A volume the shim reports with ``tags`` (or
``labels``) is seen only by the install its owner tag names; one with neither by
every install. ``list_dir`` and ``read_file`` of a volume the asking install
cannot see answer ``not_found`` before the shim is asked, and a store method
that accepts ``install_id`` is given the asking install's.
"""

from __future__ import annotations

import base64
from typing import Any, Dict, List, Optional

from . import convert
from .calls import accepts, quietly
from .errors import WireError
from .flow import Window
from .server import Request, optional, require


class StoreOps:
    """Mixed into Bridge, whose p, name, window, chunk, reads, _lock and server it uses."""

    def _store_op(self, name: str, req: Request) -> Any:
        """The shim's store method, given the asking install when it takes install_id."""
        fn = getattr(self.p, name, None)
        if not callable(fn):
            raise WireError("invalid_request", "provider %s has no persistent store" % self.name)
        owner = self._store_owner(req)
        if owner is not None and accepts(fn, "install_id"):
            return lambda *a, **kw: fn(*a, install_id=owner[1], **kw)
        return fn

    def _store_owner(self, req: Request) -> Optional[Any]:
        owner = optional(req.params, "owner", dict, None)
        if owner is None:
            return None
        return require(owner, "key"), require(owner, "install_id")

    def _visible(self, req: Request) -> List[Dict[str, Any]]:
        """The volumes the asking install may see (store volumes are owner-scoped)."""
        list_volumes = self._store_op("list_volumes", req)
        owner = self._store_owner(req)
        if owner is not None and not self._writes(owner[0]):
            return []  # nothing of this shim carries an owner tag under that key
        return convert.listed(list_volumes(), convert.volume, *(owner or ("", "")))

    def _check_root(self, req: Request) -> str:
        root = require(req.params, "root")
        if self._store_owner(req) is not None and root not in {v["name"] for v in self._visible(req)}:
            raise WireError("not_found", "no volume %r" % root)
        return root

    def list_volumes(self, req: Request) -> Dict[str, Any]:
        return {"volumes": self._visible(req)}

    def list_dir(self, req: Request) -> Dict[str, Any]:
        fn = self._store_op("list_dir", req)
        limit = optional(req.params, "limit", int, 0) or 1000
        root = self._check_root(req)
        items = convert.listed(fn(root, optional(req.params, "path", str, ""), limit=limit + 1), convert.entry)
        return {"entries": items[:limit], "truncated": len(items) > limit}

    def read_file(self, req: Request) -> Dict[str, Any]:
        fn = self._store_op("read_file", req)
        stream_id = require(req.params, "stream_id")
        root = self._check_root(req)
        window = Window(self.window)
        req.on_cancel = window.close  # a read waiting for credit stops at once
        with self._lock:
            self.reads[stream_id] = window
        src = None
        try:
            src = fn(root, require(req.params, "path"))
            for chunk in src:
                data = chunk.encode("utf-8") if isinstance(chunk, str) else bytes(chunk)
                for off in range(0, len(data), self.chunk):
                    piece = data[off:off + self.chunk]
                    if req.cancelled.is_set() or not window.acquire(len(piece)):
                        raise WireError("cancelled", "store/read_file was cancelled")
                    self.server.notify("store/data", {"stream_id": stream_id,
                                                      "data": base64.b64encode(piece).decode("ascii")})
            return {}
        finally:
            with self._lock:
                if self.reads.get(stream_id) is window:
                    del self.reads[stream_id]
            window.close()
            close = getattr(src, "close", None)
            if callable(close):
                quietly(close)

    def _store_credit(self, params: Dict[str, Any]) -> None:
        with self._lock:
            window = self.reads.get(params.get("stream_id"))
        n = params.get("bytes")
        if window is not None and isinstance(n, int):
            window.credit(n)


