"""Fixtures: the real resident binary, on the real local and Docker providers.

The binary comes from $RESIDENT_BIN, else it is built from this checkout.
Docker runs when $DOCKER_HOST answers; under CI a missing engine is a failure,
not a skip. The Docker image is made from nothing (Debian's static busybox),
since no registry is reachable.
"""

from __future__ import annotations

import hashlib
import io
import os
import re
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Dict, Iterator

import pytest

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python"))

import resident  # noqa: E402
from resident.sandbox import ResidentSandbox  # noqa: E402

BUSYBOX = "/usr/bin/busybox"


@pytest.fixture(scope="session")
def resident_bin(tmp_path_factory: pytest.TempPathFactory) -> str:
    given = os.environ.get("RESIDENT_BIN")
    if given:
        return given
    out = tmp_path_factory.mktemp("bin")
    subprocess.run(["go", "build", "-o", str(out), "./cmd/resident"], cwd=REPO, check=True)
    return str(out / "resident")


def _docker_client():  # pragma: no cover - depends on the machine
    if not os.environ.get("DOCKER_HOST"):
        return None
    try:
        import docker
    except ImportError:
        return None
    try:
        cli = docker.DockerClient(base_url=os.environ["DOCKER_HOST"])
        cli.ping()
        return cli
    except Exception:
        return None


def busybox_image(cli) -> str:
    """Imports a busybox image with every applet linked; reused by content hash."""
    data = Path(BUSYBOX).read_bytes()
    ref = "resident-pytest/busybox:" + hashlib.sha256(data).hexdigest()[:12]
    if cli.images.list(name=ref):
        return ref
    applets = subprocess.run([BUSYBOX, "--list"], check=True, capture_output=True, text=True).stdout.split()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for d, mode in (("bin", 0o755), ("tmp", 0o1777), ("etc", 0o755), ("root", 0o700), ("home", 0o755)):
            info = tarfile.TarInfo(d)
            info.type, info.mode = tarfile.DIRTYPE, mode
            tar.addfile(info)
        info = tarfile.TarInfo("bin/busybox")
        info.size, info.mode = len(data), 0o755
        tar.addfile(info, io.BytesIO(data))
        passwd = b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
        info = tarfile.TarInfo("etc/passwd")
        info.size, info.mode = len(passwd), 0o644
        tar.addfile(info, io.BytesIO(passwd))
        for a in applets:
            if a != "busybox":
                info = tarfile.TarInfo("bin/" + a)
                info.type, info.linkname = tarfile.SYMTYPE, "busybox"
                tar.addfile(info)
    repo, tag = ref.split(":")
    cli.api.import_image_from_data(buf.getvalue(), repository=repo, tag=tag)
    return ref


def provider_names():
    return ["local", "docker"]


@pytest.fixture(scope="session")
def docker_image() -> str:
    cli = _docker_client()
    if cli is None:
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but no Docker engine answers at $DOCKER_HOST")
        pytest.skip("no Docker engine (set DOCKER_HOST)")
    return busybox_image(cli)


class Env:
    """What a test needs to talk to one provider."""

    def __init__(self, provider: str, bin: str, state_dir: str, image: str, install_id: str) -> None:
        self.provider = provider
        self.bin = bin
        self.state_dir = state_dir
        self.image = image
        self.install_id = install_id

    def client_kwargs(self, **extra) -> Dict:
        kw = dict(binary=self.bin, provider=self.provider, install_id=self.install_id)
        if self.provider == "local":
            kw["state_dir"] = self.state_dir
        kw.update(extra)
        return kw

    def client(self, **extra) -> resident.Client:
        return resident.Client(**self.client_kwargs(**extra))

    def spec(self, **fields) -> Dict:
        if self.image:
            fields.setdefault("image", self.image)
        return fields

    @property
    def volume_path(self) -> str:
        # local cannot mount at an absolute path until it isolates
        return "data" if self.provider == "local" else "/data"


@pytest.fixture(params=provider_names())
def env(request, resident_bin: str, tmp_path: Path) -> Env:
    image = ""
    if request.param == "docker":
        image = request.getfixturevalue("docker_image")
    return Env(request.param, resident_bin, str(tmp_path / "state"), image,
               re.sub(r"[^A-Za-z0-9._-]", "-", f"pytest-{os.getpid()}-{request.node.name}")[:64])


@pytest.fixture
def client(env: Env) -> Iterator[resident.Client]:
    c = env.client()
    made = set()
    orig = c.create_sandbox

    def tracking(*a, **k):
        sid = orig(*a, **k)
        made.add(sid)
        return sid

    c.create_sandbox = tracking  # type: ignore[method-assign]
    yield c
    if c.alive:
        for sid in made:
            try:
                c.terminate(sid)
            except resident.ResidentError:
                pass
    c.close()


@pytest.fixture
def sandbox(client: resident.Client, env: Env) -> str:
    return client.create_sandbox(env.spec())


@pytest.fixture
def make_sandbox(env):
    """ResidentSandboxes on the test's provider, torn down after the test."""
    made = []

    def make(**kw):
        kw.setdefault("client", None)
        client_kw = env.client_kwargs()
        client_kw.pop("provider")
        if env.image:
            kw.setdefault("image", env.image)
        sb = ResidentSandbox(env.provider, **client_kw, **kw)
        made.append(sb)
        return sb

    yield make
    for sb in made:
        sb.teardown()
