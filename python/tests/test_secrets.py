"""A canary credential never reaches any Python-side surface: exec output,
exception messages and reprs, the resident's log lines, results."""

from __future__ import annotations

import logging

import pytest

import resident

CANARY = "canary-py-7f3a9c2e5b1d"


def test_canary_never_reaches_a_python_surface(env, caplog):
    logs = []
    c = env.client(credentials={"api_token": CANARY}, on_log=logs.append, log_level="debug")
    surfaces = []
    try:
        sid = c.create_sandbox(env.spec(), tags={"trial": "canary"})
        r = c.exec(sid, ["sh", "-c", f"echo token={CANARY}; echo {CANARY} >&2"])
        surfaces += [r.stdout, r.stderr, repr(r)]
        assert b"[REDACTED]" in r.stdout
        for bad in (lambda: c.exec(sid, [CANARY]),
                    lambda: c.exec(sid, ["true"], cwd=f"/{CANARY}"),
                    lambda: c.write_file(sid, "", CANARY.encode()),
                    lambda: c.create_sandbox({"env": {"X": "y"}, "image": CANARY} if env.provider == "docker"
                                             else {"volumes": [{"name": CANARY, "path": ""}]})):
            with pytest.raises(resident.ResidentError) as info:
                bad()
            surfaces += [str(info.value), repr(info.value), repr(info.value.data), info.value.message]
        surfaces += [repr(s) for s in c.list_owned()]
        c.terminate(sid)
    finally:
        c.close()
    surfaces += logs
    surfaces += [rec.getMessage() for rec in caplog.records]
    for s in surfaces:
        text = s.decode("utf-8", "replace") if isinstance(s, bytes) else s
        assert CANARY not in text, f"the canary leaked: {text[:300]}"
    assert logs, "the resident wrote no log lines to check"


def test_default_logging_gets_scrubbed_lines(env, caplog):
    caplog.set_level(logging.DEBUG, logger="resident")
    c = env.client(credentials={"api_token": CANARY}, log_level="debug")
    try:
        with pytest.raises(resident.ResidentError):
            c.exec("nope", [CANARY])
    finally:
        c.close()
    assert all(CANARY not in rec.getMessage() for rec in caplog.records)
