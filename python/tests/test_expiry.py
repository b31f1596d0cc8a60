from __future__ import annotations

import datetime
import threading

import pytest

import resident


def test_credential_expiry_fires_callback_and_typed_error(env):
    fired = threading.Event()
    when = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=2)
    c = env.client(credentials={"api_token": "expiring-token-123456"}, credentials_expire_at=when,
                   on_credentials_expired=lambda msg: fired.set())
    try:
        sid = c.create_sandbox(env.spec())
        ex = c.start_exec(sid, ["sleep", "60"])
        with pytest.raises(resident.CredentialsExpired) as info:
            ex.result(timeout=60)
        assert isinstance(info.value, resident.Unauthorized)
        assert fired.wait(30)
        assert c.credentials_expired
        with pytest.raises(resident.CredentialsExpired):
            c.list_owned()
    finally:
        rc = c.close()
    assert rc == resident.client.EXIT_CREDENTIALS_EXPIRED
    with env.client() as again:
        again.terminate(sid)
