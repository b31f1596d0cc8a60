"""resident.Client against the real resident, on every provider."""

from __future__ import annotations

import io
import threading
import time

import pytest

import resident


def test_initialize_reports_provider_and_limits(client, env):
    assert client.info.provider == env.provider
    assert client.info.protocol_version == 1
    assert client.info.limits["max_file_bytes"] > 0
    assert client.info.owner_tag.endswith("-install-id")


def test_exec_streams_stdout_and_stderr_separately_in_order(client, sandbox):
    seen = []
    r = client.exec(sandbox, ["sh", "-c", "echo one; echo two >&2; echo three"],
                    on_output=lambda s, d: seen.append((s, d)))
    assert r.exit_code == 0 and r.ok
    assert r.stdout == b"one\nthree\n"
    assert r.stderr == b"two\n"
    assert b"".join(d for s, d in seen if s == "stdout") == b"one\nthree\n"
    assert r.stdout_bytes == 10 and r.stderr_bytes == 4


def test_exec_exit_code_env_and_cwd(client, sandbox):
    client.exec(sandbox, ["mkdir", "-p", "sub"])
    r = client.exec(sandbox, ["sh", "-c", 'echo "$GREETING"; pwd; exit 7'], env={"GREETING": "hello"}, cwd="sub")
    assert r.exit_code == 7
    lines = r.stdout.decode().splitlines()
    assert lines[0] == "hello" and lines[1].endswith("/sub")


def test_exec_timeout_kills_and_reports(client, sandbox):
    r = client.exec(sandbox, ["sh", "-c", "echo started; sleep 60"], timeout_s=1)
    assert r.timed_out and not r.ok
    assert r.stdout == b"started\n"
    assert r.signal == "SIGKILL"


def test_stdin_bytes_are_streamed_and_closed(client, sandbox):
    data = bytes(range(256)) * 8192  # 2 MiB, more than one stdin chunk
    r = client.exec(sandbox, ["sh", "-c", "wc -c"], stdin=data)
    assert r.stdout.strip() == str(len(data)).encode()


def test_stdin_from_a_file_object(client, sandbox):
    r = client.exec(sandbox, ["cat"], stdin=io.BytesIO(b"from a file\n"))
    assert r.stdout == b"from a file\n"


def test_interactive_stdin_and_iteration(client, sandbox):
    ex = client.start_exec(sandbox, ["sh", "-c", "read line; echo got:$line"], stdin=True, iterate=True)
    ex.write(b"ping\n", eof=True)
    chunks = list(ex)
    assert b"".join(d for s, d in chunks if s == "stdout") == b"got:ping\n"
    assert ex.result().exit_code == 0


def test_kill_ends_the_tree_with_killed(client, sandbox):
    ex = client.start_exec(sandbox, ["sh", "-c", "echo up; sleep 60"], iterate=True)
    for stream, data in ex:
        if data:
            break
    ex.kill()
    r = ex.result(timeout=60)
    assert r.killed


def test_cancel_raises_cancelled(client, sandbox):
    ex = client.start_exec(sandbox, ["sh", "-c", "echo up; sleep 60"], iterate=True)
    next(iter(ex))
    ex.cancel()
    with pytest.raises(resident.Cancelled) as info:
        ex.result(timeout=60)
    assert info.value.kind == "cancelled"


def test_write_file_then_read_it_back(client, sandbox):
    assert client.write_file(sandbox, "dir/hello.sh", b"echo written\n", mode=0o755) == 13
    r = client.exec(sandbox, ["sh", "dir/hello.sh"])
    assert r.stdout == b"written\n"


def test_list_owned_read_owner_and_idempotent_terminate(client, env):
    sid = client.create_sandbox(env.spec(), tags={"trial": "t-1"})
    owned = {s.sandbox_id: s for s in client.list_owned()}
    assert sid in owned
    assert owned[sid].tags["trial"] == "t-1"
    assert owned[sid].created_at is not None
    assert client.read_owner(sid) == env.install_id
    assert client.terminate(sid) is True
    assert client.terminate(sid) is False
    assert sid not in {s.sandbox_id for s in client.list_owned()}


def test_store_list_and_read(client, env):
    if not client.info.capabilities.get("store"):
        pytest.skip("provider has no store")
    vol = f"pyvol-{int(time.time() * 1000) % 10**9}"
    sid = client.create_sandbox(env.spec(volumes=[{"name": vol, "path": env.volume_path}]))
    payload = b"volume bytes\n" * 1000
    client.write_file(sid, f"{env.volume_path}/f.txt", payload)
    assert vol in {v.name for v in client.list_volumes()}
    listing = client.list_dir(vol, "")
    assert [e.name for e in listing.entries] == ["f.txt"] and not listing.truncated
    got = client.read_file(vol, "f.txt")
    assert got.data == payload and got.size == len(payload) and not got.redacted
    sink = io.BytesIO()
    assert client.read_file(vol, "f.txt", into=sink).data is None
    assert sink.getvalue() == payload
    # The volume outlives the sandbox: left, it stays on the engine after the run.
    assert client.terminate(sid) is True
    if client.info.capabilities.get("volume_admin"):
        for _ in range(100):  # Docker's terminate answers before the engine has removed the mount
            try:
                client.delete_volume(vol)
                break
            except resident.Conflict:
                time.sleep(0.1)
        assert vol not in {v.name for v in client.list_volumes()}


@pytest.mark.parametrize("call,kind", [
    (lambda c, s: c.exec("missing-sandbox", ["true"]), resident.NotFound),
    (lambda c, s: c.exec(s, []), resident.InvalidRequest),
    (lambda c, s: c.write_file(s, "big", b"x" * (c.info.limits["max_file_bytes"] + 1)), resident.QuotaExceeded),
    (lambda c, s: c.list_dir("no-such-volume-here", ""), resident.NotFound),
    (lambda c, s: c.create_sandbox({"env": {"RESIDENT_SECRET_X": "v"}}), resident.InvalidRequest),
])
def test_errors_are_typed(client, sandbox, call, kind):
    with pytest.raises(kind) as info:
        call(client, sandbox)
    assert isinstance(info.value, resident.ResidentError)
    assert info.value.kind == kind.kind and info.value.code is not None and info.value.method


def test_an_exec_id_in_use_is_conflict_and_free_once_answered(client, sandbox):
    running = client.start_exec(sandbox, ["sleep", "60"], exec_id="same-id")
    with pytest.raises(resident.Conflict):
        client.exec(sandbox, ["true"], exec_id="same-id")
    running.kill()
    running.result(timeout=60)
    assert client.exec(sandbox, ["true"], exec_id="same-id").exit_code == 0


def test_concurrent_execs_from_many_threads(client, sandbox):
    results = {}

    def run(i):
        results[i] = client.exec(sandbox, ["sh", "-c", f"echo {i}"])

    threads = [threading.Thread(target=run, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {i: r.stdout for i, r in results.items()} == {i: f"{i}\n".encode() for i in range(16)}


def test_a_dead_resident_fails_calls_in_flight(env):
    c = env.client()
    try:
        sid = c.create_sandbox(env.spec())
        ex = c.start_exec(sid, ["sleep", "60"])
        c._proc.kill()
        with pytest.raises(resident.ResidentExited):
            ex.result(timeout=60)
        with pytest.raises(resident.ResidentExited):
            c.list_owned()
    finally:
        c.close()
    # the next resident with the same identity still owns and removes it
    with env.client() as again:
        assert sid in {s.sandbox_id for s in again.list_owned()}
        assert again.terminate(sid)


def test_missing_binary_is_a_clear_error(tmp_path):
    with pytest.raises(FileNotFoundError):
        resident.Client(binary=str(tmp_path / "no-resident"), provider="local")


def test_unknown_provider_fails_cleanly(resident_bin):
    with pytest.raises(resident.ResidentError):
        resident.Client(binary=resident_bin, provider="no-such-provider", install_id="x")
