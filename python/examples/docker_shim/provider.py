"""A reference shim of the original ByocProvider contract, over Debian's python3-docker.

Run it through the bridge (the owner key is the one this shim writes)::

    resident --provider external -- \\
        python3 -m resident_shim python/examples/docker_shim/provider.py --owner-key openai4s-install-id

It talks to the engine at $DOCKER_HOST (the SDK's from_env rules) and never pulls:
an image must already be on the engine. This is the shape of the original design's
per-cloud shims: the contract, the SDK, and nothing of the resident.

- A sandbox is a container whose main command is ``sh -c 'sleep N & wait'``, N being
  spec.lifetime_s (or 2**31-1): it stops by itself at its lifetime with no resident, and
  the shell as pid 1 reaps the orphans of killed execs.
  Its labels are the host's tags, then this shim's own (under ``dev.resident.shim.``),
  then the owner label last. No network unless spec.network names one.
- exec uses the low-level API (exec_create + a hijacked exec_start socket): stdin is
  written to the socket, output is demultiplexed on a reader thread into two bounded
  queues, the exit code comes from exec_inspect. kill() finds the exec's processes by a
  marker in their environment, stops them all and then SIGKILLs them, with a second exec
  (so it needs a POSIX sh in the image, as the main command does). Each command runs
  under a shell of the shim's (a Docker exec's process has no parent in the container,
  so ``kill -9 $PPID`` would kill its own group); an exec ended by a signal takes its
  marked tree with it, a normal exit leaves its background services running. A missing
  executable is that shell's exit 127 with its message on stderr (the contract's exec
  cannot tell it apart before the process would have run). ``exclusive`` stops every
  process but pid 1 and its keepalive sleep before the command starts.
- Store: Docker volumes this shim labelled, owner-scoped like sandboxes: a spec's volume
  ``work`` is the engine volume ``rshim-<hash of the install>-work``, labelled with the
  owner tag, so two installs' ``work`` never meet. The store methods take an optional
  ``install_id`` keyword (the bridge passes it). list_dir and read_file read through a
  helper container that is created, never started, and removed (the engine's archive
  API); every component of a path is checked not to be a symlink, so nothing is
  followed out of the volume.
"""

from __future__ import annotations

import base64
import json
import os
import posixpath
import queue
import re
import socket
import tarfile
import threading
import time
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional

try:
    from resident_shim.contract import ByocError
except ImportError:  # the shim also runs without the bridge's package, as the originals did
    class ByocError(Exception):  # type: ignore[no-redef]
        def __init__(self, kind: str, msg: str = "") -> None:
            super().__init__(msg or kind)
            self.kind, self.msg = kind, msg

__version__ = "0.1.0"

#: The owner label this shim writes, hard-coded as the original shims did; run the bridge
#: with the same --owner-key. DOCKER_SHIM_OWNER_KEY overrides it (for a suite that uses its own).
OWNER_KEY = os.environ.get("DOCKER_SHIM_OWNER_KEY") or "openai4s-install-id"
PREFIX = "dev.resident.shim."
L_MANAGED = PREFIX + "managed"
L_TAG_KEYS = PREFIX + "tag-keys"
L_LIFETIME = PREFIX + "lifetime-s"
L_VOLUME = PREFIX + "volume"
L_IMAGE = PREFIX + "image"
L_EXEC = "RESIDENT_SHIM_EXEC"
FOREVER = 2147483647
OUT_QUEUE = 64  # chunks of output held per stream before the reader waits
GO_DIR, GO_SYMLINK, GO_IRREGULAR = 1 << 31, 1 << 27, (1 << 31) | (1 << 27) | (1 << 26) | (1 << 25) | (1 << 24) | (1 << 21) | (1 << 19)
VOLUME_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
SANDBOX_ID = re.compile(r"^[0-9a-f]{64}$")  # what create_sandbox returns: a full container id


def _sandbox(sandbox_id: str) -> str:
    """sandbox_id when it is one this shim could have made, else not_found (never an API path)."""
    if not isinstance(sandbox_id, str) or not SANDBOX_ID.match(sandbox_id):
        raise ByocError("not_found", "no sandbox %r" % sandbox_id)
    return sandbox_id


def volume_name(install_id: str, name: str) -> str:
    """The engine volume behind one install's store volume name."""
    import hashlib

    return "rshim-%s-%s" % (hashlib.sha256(install_id.encode()).hexdigest()[:12], name)


def _classify(e: Exception, what: str) -> ByocError:
    """A docker SDK or transport error as a contract error kind."""
    import docker.errors

    if isinstance(e, ByocError):
        return e
    status = getattr(getattr(e, "response", None), "status_code", None)
    msg = "%s: %s" % (what, getattr(e, "explanation", None) or e)
    if isinstance(e, (docker.errors.NotFound, docker.errors.NullResource)) or status == 404:
        return ByocError("not_found", msg)
    if status == 409:
        return ByocError("conflict", msg)
    if status in (401, 403):
        return ByocError("unauthorized", msg)
    if status == 400:
        return ByocError("invalid_request", msg)
    return ByocError("transient", msg)


class _Output:
    """One stream of an exec as an iterable of bytes, fed by the demux thread."""

    def __init__(self) -> None:
        self.q: "queue.Queue[Optional[bytes]]" = queue.Queue(OUT_QUEUE)
        self.closed = False

    def __iter__(self) -> Iterator[bytes]:
        while True:
            chunk = self.q.get()
            if chunk is None:
                return
            yield chunk

    def put(self, chunk: Optional[bytes]) -> None:
        while not self.closed:
            try:
                self.q.put(chunk, timeout=0.2)
                return
            except queue.Full:
                continue

    def close(self) -> None:
        self.closed = True
        try:
            self.q.put_nowait(None)
        except queue.Full:
            pass


#: how soon wait() first asks the engine whether an exec still runs, and the
#: longest it goes between two asks
WAIT_POLL_FIRST, WAIT_POLL_MAX = 0.1, 1.0


class DockerExec:
    """What exec returns: stdout, stderr, wait() and the optional kill()."""

    # The engine closes an exec's streams 2 s after its process exits, even with a
    # background child holding them (measured on 20.10; moby's exec exit handling).
    # wait() sees the exit up to a poll later. The bridge waits this long for the
    # streams' end, so a loaded engine's slow tail is delivered, not cut by silence.
    streams_end_after_exit = 2.5

    def __init__(self, prov: "DockerProvider", container: str, exec_id: str, marker: str, sock: Any,
                 stdin: Optional[Iterable[bytes]]) -> None:
        self._p, self._container, self._id, self._marker = prov, container, exec_id, marker
        self._sock = sock._sock if hasattr(sock, "_sock") else sock
        self.stdout, self.stderr = _Output(), _Output()
        self._done = threading.Event()
        threading.Thread(target=self._demux, daemon=True).start()
        if stdin is not None:
            threading.Thread(target=self._feed, args=(stdin,), daemon=True).start()
        else:
            self._shut_write()

    def _shut_write(self) -> None:
        try:
            self._sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass

    def _feed(self, stdin: Iterable[bytes]) -> None:
        try:
            for chunk in stdin:
                self._sock.sendall(chunk)
        except OSError:
            pass
        finally:
            self._shut_write()

    def _demux(self) -> None:
        from docker.utils.socket import frames_iter

        try:
            for stream, data in frames_iter(self._sock, tty=False):
                (self.stderr if stream == 2 else self.stdout).put(data)
        except (OSError, ValueError):
            pass
        finally:
            self._done.set()
            self.stdout.put(None)
            self.stderr.put(None)
            try:
                self._sock.close()
            except OSError:
                pass

    def wait(self) -> int:
        # The stream ends when the process's stdio closes; a background child can keep
        # it open, so the exec's own state is asked too, less often the longer it runs:
        # an hour-long command would otherwise cost the engine 36000 inspects, and the
        # engine ends the streams itself 2 s after the exit whatever the poll.
        info: Optional[Dict[str, Any]] = None
        poll = WAIT_POLL_FIRST
        while not self._done.wait(poll):
            got = self._p.api.exec_inspect(self._id)
            if not got["Running"]:
                info = got
                break
            poll = min(poll * 2, WAIT_POLL_MAX)
        code = 0
        for _ in range(50):
            if info is None:
                info = self._p.api.exec_inspect(self._id)
            if not info["Running"]:
                code = int(info["ExitCode"] or 0)
                break
            info = None
            time.sleep(0.02)
        if code >= 128:
            # Ended by a signal (killed, or its wrapper killed under it): its whole tree
            # goes with it. A normal exit leaves its background services running.
            try:
                self.kill()
            except ByocError:
                pass
        return code

    def kill(self) -> None:
        # Freeze first, then kill: a process of the tree killed before its parent would let
        # the parent see it go and exit by itself (code 0). Stopping every process that
        # carries the exec's marker, again until no new one appears, leaves none able to
        # act; SIGKILL then ends them all. A process that cleared its environment escapes.
        script = ('m="%s=$1"; all=""; '
                  'for round in 1 2 3 4 5; do new=""; '
                  'for d in /proc/[0-9]*; do p=${d#/proc/}; case " $all " in *" $p "*) continue;; esac; '
                  'tr "\\0" "\\n" < "$d/environ" 2>/dev/null | grep -qx "$m" && new="$new $p"; done; '
                  '[ -z "$new" ] && break; kill -STOP $new 2>/dev/null; all="$all $new"; done; '
                  '[ -n "$all" ] && kill -KILL $all 2>/dev/null; true') % L_EXEC
        try:
            k = self._p.api.exec_create(self._container, ["sh", "-c", script, "sh", self._marker])
            self._p.api.exec_start(k["Id"])
        except Exception as e:
            raise _classify(e, "exec kill") from None


class DockerProvider:
    """The contract over one Docker engine."""

    secret_env_prefixes = ("DOCKER_AUTH_CONFIG", "DOCKER_PASSWORD", "DOCKER_TOKEN", "REGISTRY_AUTH")
    token_scrub_regex = re.compile(r"dckr_pat_[A-Za-z0-9_-]{16,100}")
    capabilities = {"isolation": True, "network_control": True, "resource_limits": True,
                    "read_only_volumes": True, "image_pull": False}
    # A container's labels are fixed at create: the resident may remember
    # read_owner's answers and skip the inspect before every exec.
    owner_tags_fixed = True
    version = __version__

    def __init__(self) -> None:
        self.api: Any = None
        self._creds: Dict[str, str] = {}
        self._on_expired: Optional[Callable[[], Any]] = None

    # -- session -----------------------------------------------------------------

    def import_and_patch(self) -> None:
        import docker  # the SDK import is the slow part: once, at start

        self.api = docker.APIClient(**docker.utils.kwargs_from_env())
        self.api.ping()

    def apply_auth(self, creds: Dict[str, str]) -> None:
        self._creds = dict(creds)  # registry credentials; this shim never pulls, so nothing uses them yet

    def install_unauth_hook(self, on_expired: Callable[[], Any]) -> None:
        self._on_expired = on_expired

    def _call(self, what: str, fn: Callable[..., Any], *a: Any, **kw: Any) -> Any:
        try:
            return fn(*a, **kw)
        except Exception as e:
            err = _classify(e, what)
            if err.kind == "unauthorized" and self._on_expired is not None:
                self._on_expired()
            raise err from None

    # -- sandboxes ---------------------------------------------------------------

    def create_sandbox(self, spec: Dict[str, Any], install_id: str, tags: Optional[Dict[str, str]] = None) -> str:
        image = spec.get("image")
        if not image:
            raise ByocError("invalid_request", "spec.image is required (this shim does not pull)")
        labels = {}
        for k, v in (tags or {}).items():
            if k.startswith(PREFIX):
                raise ByocError("invalid_request", "tag %r: the %r prefix is reserved for this shim" % (k, PREFIX))
            labels[k] = v
        host_keys = sorted(k for k in labels if k != OWNER_KEY)
        lifetime = int(spec.get("lifetime_s") or 0)
        labels.update({L_MANAGED: "true", L_TAG_KEYS: json.dumps(host_keys), L_LIFETIME: str(lifetime)})
        labels.pop(OWNER_KEY, None)
        labels[OWNER_KEY] = install_id  # the owner tag merged last
        mounts = [self._volume_mount(v, image, install_id, spec.get("workdir") or "/")
                  for v in spec.get("volumes") or []]
        read_only = bool(spec.get("read_only_root"))
        tmpfs = {"/tmp": ""}
        if read_only and spec.get("workdir"):
            tmpfs[spec["workdir"]] = ""
        host = self.api.create_host_config(
            network_mode=spec.get("network") or "none",
            nano_cpus=int(float(spec["cpus"]) * 1e9) if spec.get("cpus") else None,
            mem_limit="%dm" % spec["memory_mb"] if spec.get("memory_mb") else None,
            pids_limit=int(spec.get("pids_limit") or 512),
            read_only=read_only, tmpfs=tmpfs if read_only else None, mounts=mounts or None,
            init=False)
        env = dict(spec.get("env") or {})
        c = self._call("container create", self.api.create_container, image,
                       # sh stays pid 1 and its wait reaps orphans; the sleep ends the sandbox at its lifetime
                       ["sh", "-c", "sleep %d & wait" % (lifetime if lifetime > 0 else FOREVER)],
                       labels=labels, environment=env or None, working_dir=spec.get("workdir") or None,
                       host_config=host)
        try:
            self._call("container start", self.api.start, c["Id"])
        except ByocError:
            self.terminate(c["Id"])
            raise
        return c["Id"]

    def _volume_mount(self, v: Dict[str, Any], image: str, install_id: str, workdir: str) -> Any:
        from docker.types import Mount

        name = v.get("name", "")
        if not VOLUME_NAME.match(name) or name in (".", ".."):
            raise ByocError("invalid_request", "volume name %r" % name)
        real = volume_name(install_id, name)
        taken = self._call("volume list", self.api.volumes, filters={"label": "%s=%s" % (L_VOLUME, name)})
        if any((v.get("Labels") or {}).get(OWNER_KEY) != install_id for v in taken.get("Volumes") or []):
            # store names are one namespace: another install's volume looks exactly missing,
            # and nothing is made under its name
            raise ByocError("not_found", "no volume %r" % name)
        try:
            self.api.inspect_volume(real)
        except Exception:
            self._call("volume create", self.api.create_volume, real,
                       labels={L_MANAGED: "true", L_VOLUME: name, L_IMAGE: image, OWNER_KEY: install_id})
        path = posixpath.join(workdir or "/", v["path"])  # a relative path is taken in the work directory
        return Mount(path, real, type="volume", read_only=bool(v.get("read_only")))

    def list_owned(self, install_id: str) -> List[Dict[str, Any]]:
        found = self._call("container list", self.api.containers, all=True,
                           filters={"label": ["%s=%s" % (OWNER_KEY, install_id), L_MANAGED + "=true"]})
        out = []
        for c in found:
            labels = c.get("Labels") or {}
            if labels.get(OWNER_KEY) != install_id:
                continue  # exactly this install, never a prefix
            keys = json.loads(labels.get(L_TAG_KEYS) or "[]")
            tags = {k: labels[k] for k in keys if k in labels}
            tags[OWNER_KEY] = install_id
            out.append({"sandbox_id": c["Id"], "tags": tags, "created_at": c.get("Created"),
                        "state": self._state(c, labels), "image": c.get("Image")})
        return out

    @staticmethod
    def _state(c: Dict[str, Any], labels: Dict[str, str]) -> str:
        state = c.get("State")
        if state == "running":
            return "running"
        if state in ("exited", "dead", "created"):
            lifetime = int(labels.get(L_LIFETIME) or 0)
            if lifetime > 0 and time.time() >= float(c.get("Created") or 0) + lifetime:
                return "expired"
            return "stopped"
        return "unknown"

    def read_owner(self, sandbox_id: str) -> Optional[str]:
        info = self._call("container inspect", self.api.inspect_container, _sandbox(sandbox_id))
        return (info.get("Config", {}).get("Labels") or {}).get(OWNER_KEY)

    def terminate(self, sandbox_id: str) -> bool:
        try:
            self._call("container remove", self.api.remove_container, _sandbox(sandbox_id), force=True)
        except ByocError as e:
            if e.kind == "not_found":
                return False  # idempotent: gone is gone
            if e.kind == "conflict" and "already in progress" in e.msg:
                self._await_gone(sandbox_id)  # a concurrent terminate removes it: that one existed
                return False
            raise
        return True

    def _await_gone(self, sandbox_id: str) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            try:
                self.api.inspect_container(sandbox_id)
            except Exception as e:
                if _classify(e, "container inspect").kind == "not_found":
                    return
                raise _classify(e, "container inspect") from None
            time.sleep(0.05)
        raise ByocError("transient", "container %s: removal did not finish in 30 s" % sandbox_id)

    # -- exec --------------------------------------------------------------------

    def exec(self, sandbox_id: str, argv: List[str], *, stdin: Optional[Iterable[bytes]] = None,
             env: Optional[Dict[str, str]] = None, timeout: Optional[int] = None,
             cwd: Optional[str] = None, exclusive: bool = False) -> DockerExec:
        _sandbox(sandbox_id)
        if exclusive:
            self._stop_everything(sandbox_id)
        marker = base64.b32encode(os.urandom(10)).decode().lower()
        environment = dict(env or {})
        environment[L_EXEC] = marker
        if timeout:
            argv = ["timeout", "-s", "KILL", str(int(timeout))] + list(argv)  # busybox and coreutils both
        if cwd and not cwd.startswith("/"):
            cwd = "/" + cwd  # relative to the sandbox root, as the protocol says
        # A shell of our own as the command's parent: a Docker exec's process has no parent
        # inside the container (PPID 0), and `kill -9 $PPID` would then kill its own group.
        argv = ["sh", "-c", '"$@"; exit $?', "sh"] + list(argv)
        e = self._call("exec create", self.api.exec_create, sandbox_id, argv, stdin=stdin is not None,
                       environment=environment, workdir=cwd or None)
        sock = self._call("exec start", self.api.exec_start, e["Id"], socket=True)
        return DockerExec(self, sandbox_id, e["Id"], marker, sock, stdin)

    def _stop_everything(self, sandbox_id: str) -> None:
        """Freezes and then kills every process of the sandbox but its pid 1 (an exclusive exec)."""
        # Spared: pid 1, its keepalive sleep (its oldest child: orphans it adopted are younger)
        # and this script, which forks nothing (builtins only) so it cannot hit itself.
        script = ('keep=""; for d in /proc/[0-9]*; do p=${d#/proc/}; read -r line < "$d/stat" 2>/dev/null || continue; '
                  'set -- ${line##*) }; [ "$2" = 1 ] || continue; '
                  'if [ -z "$keep" ] || [ "$p" -lt "$keep" ]; then keep=$p; fi; done; '
                  'all=""; for round in 1 2 3 4 5; do new=""; '
                  'for d in /proc/[0-9]*; do p=${d#/proc/}; case " 1 $keep $$ $all " in *" $p "*) continue;; esac; '
                  'new="$new $p"; done; '
                  '[ -z "$new" ] && break; kill -STOP $new 2>/dev/null; all="$all $new"; done; '
                  '[ -n "$all" ] && kill -KILL $all 2>/dev/null; true')
        k = self._call("exec create", self.api.exec_create, sandbox_id, ["sh", "-c", script])
        self._call("exec start", self.api.exec_start, k["Id"])

    # -- store -------------------------------------------------------------------

    def list_volumes(self, *, install_id: Optional[str] = None) -> List[Dict[str, Any]]:
        labels = [L_VOLUME] + (["%s=%s" % (OWNER_KEY, install_id)] if install_id else [])
        got = self._call("volume list", self.api.volumes, filters={"label": labels})
        return [{"name": v["Labels"][L_VOLUME], "created_at": v.get("CreatedAt"),
                 "tags": {OWNER_KEY: v["Labels"].get(OWNER_KEY, "")}}
                for v in got.get("Volumes") or [] if (v.get("Labels") or {}).get(L_VOLUME)]

    def list_dir(self, root: str, path: str, *, limit: Optional[int] = None,
                 install_id: Optional[str] = None) -> List[Dict[str, Any]]:
        with _Helper(self, root, install_id) as h:
            inner = h.checked(path, want_dir=True)
            stream, _ = self._call("archive", self.api.get_archive, h.id, inner + "/.")
            entries: List[Dict[str, Any]] = []
            with tarfile.open(fileobj=_Chunks(stream), mode="r|") as tar:
                for m in tar:
                    name = m.name[2:] if m.name.startswith("./") else m.name
                    if not name or name == "." or "/" in name.rstrip("/"):
                        continue  # the directory itself, or deeper down
                    kind = "dir" if m.isdir() else "file" if m.isreg() else "symlink" if m.issym() else "other"
                    entries.append({"name": name.rstrip("/"), "type": kind, "size": m.size if m.isreg() else 0,
                                    "mtime": m.mtime})
                    if limit is not None and len(entries) >= limit:
                        break
            return entries

    def read_file(self, root: str, path: str, *, install_id: Optional[str] = None) -> Iterable[bytes]:
        h = _Helper(self, root, install_id).__enter__()
        try:
            inner = h.checked(path, want_dir=False)
            stream, _ = self._call("archive", self.api.get_archive, h.id, inner)
        except BaseException:
            h.__exit__(None, None, None)
            raise

        def chunks() -> Iterator[bytes]:
            try:
                with tarfile.open(fileobj=_Chunks(stream), mode="r|") as tar:
                    for m in tar:
                        f = tar.extractfile(m)
                        while f is not None:
                            b = f.read(64 << 10)
                            if not b:
                                break
                            yield b
                        return
            finally:
                h.__exit__(None, None, None)

        return chunks()


class _Helper:
    """A created, never started container with one store volume at /v, for the archive API."""

    def __init__(self, prov: DockerProvider, root: str, install_id: Optional[str]) -> None:
        self.p, self.root, self.install_id, self.id = prov, root, install_id, ""

    def __enter__(self) -> "_Helper":
        api = self.p.api
        if not VOLUME_NAME.match(self.root) or not self.install_id:
            raise ByocError("not_found", "no volume %r" % self.root)
        self.volume = volume_name(self.install_id, self.root)
        vol = self.p._call("volume inspect", api.inspect_volume, self.volume)
        labels = vol.get("Labels") or {}
        if labels.get(L_VOLUME) != self.root or labels.get(OWNER_KEY) != self.install_id:
            raise ByocError("not_found", "no volume %r" % self.root)
        image = os.environ.get("DOCKER_SHIM_HELPER_IMAGE") or labels.get(L_IMAGE)
        from docker.types import Mount

        host = api.create_host_config(network_mode="none", mounts=[Mount("/v", self.volume, read_only=True)])
        c = self.p._call("helper create", api.create_container, image, ["true"], host_config=host,
                         labels={L_MANAGED: "true", PREFIX + "role": "store-helper"})
        self.id = c["Id"]
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.id:
            try:
                self.p.api.remove_container(self.id, force=True)
            except Exception:
                pass
            self.id = ""

    def stat(self, inner: str) -> Optional[Dict[str, Any]]:
        api = self.p.api
        r = api.head(api._url("/containers/{0}/archive", self.id), params={"path": inner})
        if r.status_code == 404:
            return None
        if r.status_code != 200:
            raise ByocError("transient", "archive stat %s: HTTP %d" % (inner, r.status_code))
        return json.loads(base64.b64decode(r.headers["X-Docker-Container-Path-Stat"]))

    def checked(self, path: str, want_dir: bool) -> str:
        """/v/path after every component was found and none was a symlink."""
        parts = [p for p in path.split("/") if p not in ("", ".")]
        if ".." in parts:
            raise ByocError("invalid_request", "path %r: \"..\" is not allowed" % path)
        inner = "/v"
        for i, part in enumerate(parts):
            inner = posixpath.join(inner, part)
            st = self.stat(inner)
            if st is None:
                raise ByocError("not_found", "no such file or directory %r" % path)
            mode = int(st["mode"])
            if mode & GO_SYMLINK:
                raise ByocError("invalid_request", "path %r: %r is a symlink" % (path, "/".join(parts[:i + 1])))
            last = i == len(parts) - 1
            if not last and not mode & GO_DIR:
                raise ByocError("not_found", "path %r: %r is not a directory" % (path, "/".join(parts[:i + 1])))
            if last and want_dir and not mode & GO_DIR:
                raise ByocError("invalid_request", "path %r is not a directory" % path)
            if last and not want_dir and mode & GO_IRREGULAR:
                raise ByocError("invalid_request", "path %r is not a regular file" % path)
        if not parts and not want_dir:
            raise ByocError("invalid_request", "path is required")
        return inner


class _Chunks:
    """A read() over an iterator of byte chunks, for tarfile's stream mode."""

    def __init__(self, it: Iterable[bytes]) -> None:
        self._it = iter(it)
        self._buf = b""

    def read(self, n: int = -1) -> bytes:
        while n < 0 or len(self._buf) < n:
            try:
                self._buf += next(self._it)
            except StopIteration:
                break
        if n < 0:
            out, self._buf = self._buf, b""
        else:
            out, self._buf = self._buf[:n], self._buf[n:]
        return out


PROVIDER = DockerProvider()
