"""The original ByocProvider contract, as the design the resident grew from quoted it.

A shim may import these names (``from resident_shim.contract import ByocProvider,
ByocError, ExecResult``) or define its own: the bridge is duck-typed, and any
exception with string ``kind`` and ``msg`` attributes is read as a ByocError.

Optional extensions close gaps of the original contract without breaking it:

- the object returned by ``exec`` may have ``kill()``: ``exec/kill`` calls it, and
  the exec then ends when ``wait()`` returns;
- that object may have ``streams_end_after_exit`` (seconds): its ``stdout`` and
  ``stderr`` end by themselves at most that long after the main process exits, so
  the bridge waits for their end instead of guessing it from 0.3 s of silence;
- ``exec`` may name a ``cwd`` keyword: a working directory is then passed
  through (without it an exec with a ``cwd`` is ``invalid_request``);
- ``exec`` may name an ``exclusive`` keyword: True means stop every other
  process of the sandbox first (without it an exclusive exec is refused);
- the store methods may name an ``install_id`` keyword: the asking install's.

Keywords are passed only to a method whose signature names them, never through
``**kwargs``, so no extension is silently dropped.

``terminate`` may return a bool (did the sandbox exist); ``None`` counts as True.
"""

from __future__ import annotations

import re
from typing import Any, Callable, Dict, Iterable, List, NoReturn, Optional, Protocol, Tuple

#: The closed set of error kinds (docs/protocol.md §6). Anything else is transient.
KINDS = (
    "invalid_request", "not_found", "unauthorized", "quota", "timeout",
    "cancelled", "conflict", "transient", "internal",
)


class ExecResult(Protocol):
    stdout: Iterable[bytes]
    stderr: Iterable[bytes]

    def wait(self) -> int: ...


class ByocProvider(Protocol):
    """list_dir / list_volumes / read_file are optional: a provider without a browsable
    persistent store omits them and the matching op surfaces invalid_request."""

    secret_env_prefixes: Tuple[str, ...]
    token_scrub_regex: "re.Pattern[str]"

    def import_and_patch(self) -> None: ...

    def apply_auth(self, creds: Dict[str, str]) -> None: ...

    def install_unauth_hook(self, on_expired: Callable[[], NoReturn]) -> None: ...

    def create_sandbox(self, spec: Dict[str, Any], install_id: str,
                       tags: Optional[Dict[str, str]] = None) -> str:
        """tags are host-built identity tags, already sanitized; implementations that support tagging
        MUST apply them at create time and merge the <prefix>-install-id=install_id owner tag LAST."""
        ...

    def exec(self, sandbox_id: str, argv: List[str], *, stdin: Optional[Iterable[bytes]] = None,
             env: Optional[Dict[str, str]] = None, timeout: Optional[int] = None) -> ExecResult: ...

    def list_owned(self, install_id: str) -> List[Dict[str, Any]]: ...

    def read_owner(self, sandbox_id: str) -> Optional[str]: ...

    def terminate(self, sandbox_id: str) -> None: ...

    def list_dir(self, root: str, path: str, *, limit: Optional[int] = None) -> List[Dict[str, Any]]:
        """[{name, type: "file"|"dir", size, mtime}, ...]"""
        ...

    def list_volumes(self) -> List[Dict[str, Any]]:
        """[{name, created_at}, ...]"""
        ...

    def read_file(self, root: str, path: str) -> Iterable[bytes]: ...


class ByocError(Exception):
    """kind is one of the base error kinds; anything else is coerced to transient."""

    def __init__(self, kind: str, msg: str = "") -> None:
        super().__init__(msg or kind)
        self.kind = kind
        self.msg = msg
