"""Files of a running sandbox, streamed uploads and volume admin, from
Python, on every provider that announces them; reasons tell a missing file
from a missing sandbox."""

from __future__ import annotations

import hashlib
import io
import os

import pytest

import resident


def needs(c: resident.Client, capability: str) -> None:
    if not c.info.capabilities.get(capability):
        pytest.skip(f"provider {c.info.provider} does not announce {capability}")


def test_read_and_list_a_running_sandbox(client, sandbox):
    needs(client, "sandbox_files")
    client.write_file(sandbox, "dir/a.txt", b"alpha\n")
    client.write_file(sandbox, "dir/b.bin", bytes(range(256)))
    r = client.read_sandbox_file(sandbox, "dir/a.txt")
    assert r.data == b"alpha\n" and r.size == 6 and r.sha256 == hashlib.sha256(b"alpha\n").hexdigest()
    sink = io.BytesIO()
    client.read_sandbox_file(sandbox, "dir/b.bin", into=sink)
    assert sink.getvalue() == bytes(range(256))
    listing = client.list_sandbox_dir(sandbox, "dir")
    assert sorted(e.name for e in listing.entries) == ["a.txt", "b.bin"] and not listing.truncated
    assert len(client.list_sandbox_dir(sandbox, "dir", limit=1).entries) == 1


def test_file_errors_carry_reasons(client, sandbox):
    needs(client, "sandbox_files")
    with pytest.raises(resident.NotFound) as missing:
        client.read_sandbox_file(sandbox, "no/such/file")
    assert missing.value.reason == "no_such_file" and missing.value.field == "path"
    with pytest.raises(resident.NotFound) as gone:
        client.read_sandbox_file("no-such-sandbox", "f")
    assert gone.value.reason is None  # a missing sandbox has no file reason
    client.write_file(sandbox, "d/f", b"x")
    with pytest.raises(resident.InvalidRequest) as isdir:
        client.read_sandbox_file(sandbox, "d")
    assert isdir.value.reason == "is_directory"
    with pytest.raises(resident.ResidentError) as notdir:
        client.list_sandbox_dir(sandbox, "d/f")
    assert notdir.value.reason == "not_directory"


def test_a_large_upload_streams_and_is_atomic(client, sandbox):
    needs(client, "upload")
    big = os.urandom(20 << 20)
    chunks = (big[i:i + (1 << 20)] for i in range(0, len(big), 1 << 20))
    assert client.upload(sandbox, "up/big.bin", chunks, mode=0o600) == len(big)
    r = client.exec(sandbox, ["sh", "-c", "wc -c < up/big.bin; sha256sum up/big.bin"])
    size, digest = r.stdout.split()[:2]
    assert int(size) == len(big) and digest.decode() == hashlib.sha256(big).hexdigest()

    def broken():
        yield b"partial data"
        raise OSError("the source broke")

    with pytest.raises(OSError):
        client.upload(sandbox, "up/never.bin", broken())
    left = client.exec(sandbox, ["sh", "-c", "ls -a up"]).stdout.decode().split()
    assert "never.bin" not in left and not [n for n in left if n.startswith(".resident")], left


def test_volume_admin_is_owner_scoped(env, client):
    needs(client, "volume_admin")
    name = f"pyvol-{os.getpid()}-{env.provider}"
    client.create_volume(name)
    try:
        assert name in [v.name for v in client.list_volumes()]
        with pytest.raises(resident.Conflict) as dup:
            client.create_volume(name)
        assert dup.value.reason == "exists"
        other = env.client(install_id=env.install_id + "-other")
        try:
            assert name not in [v.name for v in other.list_volumes()]
            with pytest.raises(resident.NotFound):
                other.delete_volume(name)
        finally:
            other.close()
    finally:
        client.delete_volume(name)
    assert name not in [v.name for v in client.list_volumes()]


def test_sandbox_read_file_through_the_harness_class(env):
    from resident.sandbox import ResidentSandbox
    kw = env.client_kwargs()
    kw.pop("provider")
    sb = ResidentSandbox(env.provider, image=env.image or None, **kw)
    sb.create()
    try:
        needs(sb.client, "sandbox_files")
        sb.upload_file("notes/a.txt", b"from the harness\n")
        assert sb.read_file("notes/a.txt") == b"from the harness\n"
        with pytest.raises(resident.NotFound) as e:
            sb.read_file("notes/missing.txt")
        assert e.value.reason == "no_such_file"
    finally:
        sb.teardown()
