"""Start-up: claim stdio, load the shim, describe it, then serve.

Order matters. stdout is claimed at the descriptor level before the shim is
imported: fd 1 is duplicated for frames and then pointed at stderr, so a stray
print (from the shim, an SDK or a child process) lands in the log and never
in the channel; stdin is taken the same way and fd 0 becomes /dev/null, so
nothing else can read the resident's frames. The duplicates are close-on-exec.
"""

from __future__ import annotations

import argparse
import importlib.util
import logging
import os
import re
import sys
import threading
import traceback
from typing import Any, BinaryIO, Dict, List, Optional, Tuple

from . import PROTOCOL_VERSION, re2, tokens
from .bridge import Bridge
from .frames import FrameReader, FrameWriter
from .server import Server

log = logging.getLogger("resident_shim")

DESCRIBE_ENV = "RESIDENT_PROVIDER_DESCRIBE"
EXIT_START = 2  # the shim cannot be served: bad file, missing PROVIDER, a pattern RE2 lacks
EXIT_EXPIRED = 3  # on_expired was called before the session began
STORE_OPS = ("list_dir", "list_volumes", "read_file")
#: Capabilities a shim may state in a ``capabilities`` dict; store and write_file are derived.
SETTABLE = ("stdin", "isolation", "network_control", "resource_limits", "read_only_volumes", "image_pull",
            "credential_expiry")


class StartError(Exception):
    """The shim cannot be served; the message says why."""


def claim_stdio() -> Tuple[BinaryIO, BinaryIO]:
    frames_out = os.fdopen(os.dup(1), "wb")
    frames_in = os.fdopen(os.dup(0), "rb")
    os.dup2(2, 1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    sys.stdout = sys.stderr
    sys.stdin = open(os.devnull)
    return frames_in, frames_out


def load(path: str) -> Tuple[Any, Any]:
    """(module, PROVIDER) of the shim file at path."""
    path = os.path.abspath(path)
    if not os.path.isfile(path):
        raise StartError("shim %s: no such file" % path)
    name = "resident_shim_provider_" + re.sub(r"\W", "_", os.path.splitext(os.path.basename(path))[0])
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise StartError("shim %s: not a Python file" % path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, os.path.dirname(path))  # a shim may import its neighbours
    try:
        spec.loader.exec_module(module)
    except BaseException:
        raise StartError("shim %s failed to import:\n%s" % (path, traceback.format_exc().rstrip())) from None
    provider = getattr(module, "PROVIDER", None)
    if provider is None:
        raise StartError("shim %s has no PROVIDER" % path)
    if isinstance(provider, type):
        provider = provider()
    for op in ("create_sandbox", "exec", "list_owned", "read_owner", "terminate", "apply_auth"):
        if not callable(getattr(provider, op, None)):
            raise StartError("shim %s: PROVIDER has no %s()" % (path, op))
    return module, provider


def provider_name(path: str, given: Optional[str], provider: Any) -> str:
    raw = given or getattr(provider, "name", None)
    if not isinstance(raw, str) or not raw:
        path = os.path.abspath(path)
        stem = os.path.splitext(os.path.basename(path))[0]
        raw = os.path.basename(os.path.dirname(path)) if stem == "provider" else stem
        raw = raw[len("remote-compute-"):] if raw.startswith("remote-compute-") else raw
    name = re.sub(r"-+", "-", re.sub(r"[^a-z0-9-]", "-", raw.lower())).strip("-")[:32].strip("-")
    if given and name != given:
        raise StartError("--name %r must be 1-32 of a-z0-9-" % given)
    return name or "shim"


def describe(path: str, module: Any, provider: Any, name: Optional[str], owner_key: Optional[str]) -> Dict[str, Any]:
    """The initialize result; raises StartError for a secret policy the resident cannot use."""
    pname = provider_name(path, name, provider)
    version = getattr(provider, "version", None) or getattr(module, "__version__", None) or "0.0.0"
    caps = {"store": all(callable(getattr(provider, op, None)) for op in STORE_OPS), "write_file": False,
            "stdin": True, "isolation": False, "network_control": False, "resource_limits": False,
            "read_only_volumes": False, "image_pull": False,
            "credential_expiry": callable(getattr(provider, "install_unauth_hook", None))}
    stated = getattr(provider, "capabilities", None)
    if isinstance(stated, dict):
        for k, v in stated.items():
            if k in SETTABLE and isinstance(v, bool):
                caps[k] = v
            else:
                log.warning("capability %r of the shim is ignored (settable: %s)", k, ", ".join(SETTABLE))
    prefixes = getattr(provider, "secret_env_prefixes", ())
    if isinstance(prefixes, str) or not all(isinstance(p, str) and p for p in prefixes or ()):
        raise StartError("secret_env_prefixes must be a tuple of non-empty strings")
    try:
        patterns = tokens.token_patterns(getattr(provider, "token_scrub_regex", None), pname + "-token")
    except re2.RegexError as e:
        raise StartError("token_scrub_regex cannot be used by the resident's scrubber: %s" % e) from None
    out: Dict[str, Any] = {"protocol_version": PROTOCOL_VERSION, "name": pname, "version": str(version),
                           "capabilities": caps,
                           "secrets": {"env_prefixes": list(prefixes or ()), "token_patterns": patterns}}
    if owner_key:
        out["owner_key"] = owner_key
    if getattr(provider, "owner_tags_fixed", False) is True:
        out["fixed_owners"] = True
    return out


def parse_args(argv: List[str]) -> argparse.Namespace:
    ap = argparse.ArgumentParser(prog="python3 -m resident_shim",
                                 description="Serve a ByocProvider shim over resident's external provider protocol.")
    ap.add_argument("shim", help="path to the shim file that exports PROVIDER")
    ap.add_argument("--owner-key", help="the owner tag key the shim writes (e.g. openai4s-install-id); "
                                        "announced in initialize so the resident's ownership checks match it")
    ap.add_argument("--name", help="provider name, 1-32 of a-z0-9- (default: from the shim's path)")
    ap.add_argument("--exec-timeout", type=int, default=None, metavar="S",
                    help="the timeout passed to every exec(); what stops a remote process of a shim "
                         "whose exec object has no kill() (default: none)")
    ap.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING", "ERROR"))
    return ap.parse_args(argv)


def main(argv: Optional[List[str]] = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    frames_in, frames_out = claim_stdio()
    logging.basicConfig(stream=sys.stderr, level=args.log_level, format="%(levelname)s resident_shim: %(message)s")
    key = args.owner_key
    if key is not None and (not re.fullmatch(r"[A-Za-z0-9._-]{1,128}", key) or not key.lower().endswith("-install-id")
                            or key == "-install-id" or key.lower().startswith("dev.resident.")):
        log.error("--owner-key %r: an owner key is a tag key ending in -install-id, outside dev.resident.", key)
        return EXIT_START
    try:
        module, provider = load(args.shim)
        desc = describe(args.shim, module, provider, args.name, args.owner_key)
    except StartError as e:
        log.error("%s", e)
        return EXIT_START
    writer, reader = FrameWriter(frames_out), FrameReader(frames_in)
    if os.environ.get(DESCRIBE_ENV) == "1":
        writer.write(desc)  # one frame holding the initialize result (provider-protocol.md §2)
        return 0
    server = Server(reader, writer)
    bridge = Bridge(provider, desc, args.exec_timeout)
    bridge.register(server)
    hook = getattr(provider, "install_unauth_hook", None)
    if callable(hook):
        hook(_on_expired(server))
    patch = getattr(provider, "import_and_patch", None)
    if callable(patch):
        try:
            patch()
        except Exception:
            log.error("import_and_patch failed:\n%s", traceback.format_exc().rstrip())
            return 1
    log.info("serving %s %s", desc["name"], desc["version"])
    server.serve()
    return 0


def _on_expired(server: Server) -> Any:
    """The on_expired given to install_unauth_hook.

    It does not return. In a session it sends provider/unauthorized and then
    blocks the calling thread for good: the resident ends the session (exit 3)
    and closes stdin, and this process exits. Called before the session began
    (from import_and_patch), it raises SystemExit(3) instead.
    """
    sent = threading.Event()

    def on_expired(reason: str = "") -> Any:
        if not server.serving:
            log.error("the shim's credentials expired before the session began")
            raise SystemExit(EXIT_EXPIRED)
        if not sent.is_set():
            sent.set()
            log.warning("the shim reported expired credentials")
            server.notify("provider/unauthorized", {"reason": str(reason or "the provider's credentials were refused")})
        threading.Event().wait()
        raise SystemExit(EXIT_EXPIRED)  # not reached

    return on_expired
