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


def _spy_write_file_params(c: resident.Client) -> list:
    """Records the params of every sandbox/write_file c sends (the real
    call goes on to the resident)."""
    sent: list = []
    orig = c._start

    def spying(method, params, *a, **k):
        if method == "sandbox/write_file":
            sent.append(dict(params))
        return orig(method, params, *a, **k)

    c._start = spying  # type: ignore[method-assign]
    return sent


def _digest(client, sandbox, path):
    r = client.exec(sandbox, ["sh", "-c", f"wc -c < {path}; sha256sum {path}"])
    size, digest = r.stdout.split()[:2]
    return int(size), digest.decode()


def test_upload_sends_the_size_it_knows(client, sandbox, tmp_path):
    needs(client, "upload")
    sent = _spy_write_file_params(client)
    data = os.urandom((3 << 20) + 123)
    local = tmp_path / "local.bin"
    local.write_bytes(data)
    skip = 1000
    with open(local, "rb") as f:
        f.seek(skip)  # a file from its position on
        cases = [
            ("bytes", data, len(data), data),
            ("memoryview", memoryview(data), len(data), data),
            ("path", local, len(data), data),
            ("str path", str(local), len(data), data),
            ("file at an offset", f, len(data) - skip, data[skip:]),
            ("BytesIO", io.BytesIO(data), len(data), data),
            ("iterable", iter([data[:1 << 20], data[1 << 20:]]), None, data),
        ]
        for i, (what, source, size, want) in enumerate(cases):
            assert client.upload(sandbox, f"sized/{i}.bin", source) == len(want), what
            assert sent[-1].get("size") == size, what
            assert _digest(client, sandbox, f"sized/{i}.bin") == (len(want), hashlib.sha256(want).hexdigest()), what
    # A pipe is not seekable: no size.
    r, w = os.pipe()
    with os.fdopen(r, "rb") as pipe:
        os.write(w, b"through a pipe")
        os.close(w)
        assert client.upload(sandbox, "sized/pipe.bin", pipe) == len(b"through a pipe")
    assert "size" not in sent[-1]
    # A size given for an iterable is sent, and held to.
    chunks = [data[:1 << 20], data[1 << 20:2 << 20]]
    assert client.upload(sandbox, "sized/given.bin", iter(chunks), size=2 << 20) == 2 << 20
    assert sent[-1]["size"] == 2 << 20
    for wrong in ((2 << 20) + 1, (2 << 20) - 1):
        with pytest.raises(resident.InvalidRequest):
            client.upload(sandbox, "sized/wrong.bin", iter(chunks), size=wrong)
    left = client.exec(sandbox, ["sh", "-c", "ls -a sized"]).stdout.decode().split()
    assert "wrong.bin" not in left and not [n for n in left if n.startswith(".resident")], left
    with pytest.raises(ValueError):
        client.upload(sandbox, "sized/negative.bin", b"", size=-1)


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
        if sb.client.info.capabilities.get("upload"):
            # Past one write_file it streams, with its size.
            sent = _spy_write_file_params(sb.client)
            big = os.urandom(int(sb.client.info.limits["max_file_bytes"]) + 1)
            sb.upload_file("notes/big.bin", big)
            assert sent[-1]["size"] == len(big) and sent[-1]["stream_id"]
            assert sb.read_file("notes/big.bin") == big
        with pytest.raises(resident.NotFound) as e:
            sb.read_file("notes/missing.txt")
        assert e.value.reason == "no_such_file"
    finally:
        sb.teardown()
