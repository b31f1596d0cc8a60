"""Detached execs from Python: they outlive the client and the resident,
and exec_async_poll follows one across a resident killed mid-command."""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

import resident


def needs_detach(c: resident.Client) -> None:
    if not c.info.capabilities.get("detach"):
        pytest.skip(f"provider {c.info.provider} does not announce detach")


def test_a_detached_exec_is_followed_from_another_client(env, client, sandbox):
    needs_detach(client)
    exec_id = client.start_detached(sandbox, ["sh", "-c", 'read x; echo "got-$x"; echo warn >&2; exit 4'], stdin=True)
    with pytest.raises(resident.Conflict):
        client.start_detached(sandbox, ["true"], exec_id=exec_id)
    (info,) = [e for e in client.list_execs(sandbox) if e.exec_id == exec_id]
    assert info.running and info.argv[0] == "sh"

    other = env.client()
    try:
        ex = other.attach(exec_id, sandbox_id=sandbox)
        ex.write(b"hello\n", eof=True)
        r = ex.result(timeout=60)
        assert r.exit_code == 4 and r.stdout == b"got-hello\n" and r.stderr == b"warn\n"
        assert r.next_offset == len(b"got-hello\nwarn\n") and ex.offset == r.next_offset
        # Attaching again from the end replays nothing and answers at once.
        again = other.attach(exec_id, offset=r.next_offset)  # no sandbox id: found
        r2 = again.result(timeout=60)
        assert r2.exit_code == 4 and r2.stdout == b"" and r2.output_lost == 0
    finally:
        other.close()
    (info,) = [e for e in client.list_execs(sandbox) if e.exec_id == exec_id]
    assert not info.running and info.exit_code == 4


def test_kill_detached_and_errors(client, sandbox):
    needs_detach(client)
    exec_id = client.start_detached(sandbox, ["sleep", "300"])
    ex = client.attach(exec_id, sandbox_id=sandbox)
    client.kill_detached(sandbox, exec_id)
    assert ex.result(timeout=60).killed
    with pytest.raises(resident.NotFound):
        client.attach("no-such-exec", sandbox_id=sandbox).result(timeout=60)
    with pytest.raises(resident.NotFound):
        client.list_execs("no-such-sandbox")


def test_exec_async_poll_survives_a_resident_restart(make_sandbox):
    sb = make_sandbox()
    sb.create()
    needs_detach(sb.client)
    lines = 30  # a 30 s command, as a long build or test run is
    cmd = f'i=1; while [ $i -le {lines} ]; do echo "line-$i"; i=$((i+1)); sleep 1; done'
    result = {}

    def run():
        try:
            result["r"] = sb.exec_async_poll(cmd, timeout=300, poll_interval=1)
        except BaseException as e:  # reported below
            result["e"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    first = sb.client
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        execs = first.list_execs(sb.sandbox_id)
        if execs and execs[0].next_offset >= len("line-1\nline-2\n"):
            break
        time.sleep(0.2)
    else:
        pytest.fail(f"the detached command produced no output (exec_async_poll: {result!r}; execs {execs!r})")
    os.kill(first._proc.pid, signal.SIGKILL)  # the resident dies mid-command
    t.join(timeout=300)
    assert "e" not in result, result.get("e")
    r = result["r"]
    assert r.exit_code == 0
    assert r.output == "".join(f"line-{i}\n" for i in range(1, lines + 1))
    assert sb.client is not first and sb.client.alive
