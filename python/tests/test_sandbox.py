"""ResidentSandbox exactly as an eval harness drives it, on every provider."""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import resident
from resident.sandbox import ExecuteResult, ResidentSandbox, Sandbox, SetupError


def test_trial_lifecycle(make_sandbox, tmp_path: Path):
    seed = tmp_path / "seed"
    (seed / "pkg").mkdir(parents=True)
    (seed / "README.md").write_text("seed readme\n")
    (seed / "pkg" / "run.sh").write_text("echo run from seed\n")
    (seed / "pkg" / "run.sh").chmod(0o755)
    sb = make_sandbox(scaffold_command='echo "$UNIVERSE" > universe.txt && cp "$LOOP_PROMPT_TEMPLATE" prompt.md')
    assert isinstance(sb, Sandbox)
    sb.create()
    sb.setup(seed, "universe-9", "Do the task: {task}\n")

    r = sb.exec("cat universe.txt prompt.md README.md && ./pkg/run.sh")
    assert r == ExecuteResult(0, "universe-9\nDo the task: {task}\nseed readme\nrun from seed\n")

    sb.exec("mkdir -p nested/dir")
    r = sb.exec("pwd; echo out; echo err >&2", cwd=f"{sb.WORK_DIR}/nested/dir")
    lines = r.output.splitlines()
    assert any(line.endswith("/home/evaluser/project/nested/dir") for line in lines), lines
    assert "out" in lines and "err" in lines

    r = sb.exec("echo before; sleep 60; echo after", timeout=1)
    assert r.timed_out and r.exit_code != 0
    assert "before" in r.output and "after" not in r.output
    assert sb.exec("echo alive").output == "alive\n"

    r = sb.exec_async_poll("sleep 1; echo long done", timeout=60, poll_interval=1)
    assert r.exit_code == 0 and r.output == "long done\n"

    big = os.urandom(50 << 20)
    sb.upload_file(f"{sb.WORK_DIR}/big.bin", big)
    r = sb.exec("wc -c < big.bin; sha256sum big.bin")
    size, digest = r.output.split()[0], r.output.split()[1]
    assert int(size) == len(big) and digest == hashlib.sha256(big).hexdigest()

    sb.upload_file("relative/small.txt", b"small\n")
    assert sb.exec("cat relative/small.txt").output == "small\n"

    sb.teardown()
    sb.teardown()
    with pytest.raises(resident.ResidentError):
        sb.exec("true")


def test_scaffold_failure_is_a_setup_error_with_output(make_sandbox, tmp_path):
    sb = make_sandbox(scaffold_command="echo scaffold broke >&2; exit 3")
    sb.create()
    with pytest.raises(SetupError) as info:
        sb.setup(tmp_path, "u", "t")
    assert "scaffold broke" in str(info.value) and "exit 3" in str(info.value)


def test_wheels_without_pip_are_uploaded_and_not_installed(make_sandbox, tmp_path, env):
    if env.provider == "local":
        pytest.skip("the machine's own pip would install into the host")
    wheel = tmp_path / "demo-0.1-py3-none-any.whl"
    wheel.write_bytes(b"PK\x05\x06" + b"\0" * 18)
    sb = make_sandbox()
    sb.create()
    sb.setup(tmp_path / "no-seed", "u", "t", wheels=[wheel])
    assert sb.exec("ls .wheels").output == wheel.name + "\n"


def test_context_manager_tears_down(make_sandbox, env):
    sb = make_sandbox()
    with sb:
        sid = sb.sandbox_id
        assert sb.exec("echo in").output == "in\n"
    with env.client() as c:
        assert sid not in {s.sandbox_id for s in c.list_owned()}


def test_a_crashed_harness_is_reaped_by_the_next_run(env, make_sandbox):
    kw = env.client_kwargs()
    provider = kw.pop("provider")
    crash = textwrap.dedent(f"""
        import os, sys
        sys.path.insert(0, {str(Path(__file__).resolve().parents[1])!r})
        from resident.sandbox import ResidentSandbox
        sb = ResidentSandbox({provider!r}, image={env.image or None!r}, **{kw!r})
        sb.create()
        print(sb.sandbox_id, flush=True)
        os._exit(9)  # no teardown, no atexit: a crash
    """)
    out = subprocess.run([sys.executable, "-c", crash], capture_output=True, text=True, timeout=120)
    orphan = out.stdout.strip()
    assert orphan, out.stderr
    with env.client() as c:
        assert orphan in {s.sandbox_id for s in c.list_owned()}
        reaped = ResidentSandbox.reap_stale(c)
        assert orphan in reaped
        assert orphan not in {s.sandbox_id for s in c.list_owned()}


def test_a_live_harness_is_not_reaped(env, make_sandbox):
    sb = make_sandbox()
    sb.create()
    with env.client() as c:
        assert sb.sandbox_id not in ResidentSandbox.reap_stale(c)
    assert sb.exec("echo kept").output == "kept\n"


def test_use_before_create_is_a_clear_error(make_sandbox):
    sb = make_sandbox()
    with pytest.raises(resident.ResidentError, match="not created"):
        sb.exec("true")
