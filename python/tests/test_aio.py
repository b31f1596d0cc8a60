from __future__ import annotations

import asyncio

import pytest

import resident
from resident.aio import AsyncClient


def test_async_exec_iteration_and_errors(env):
    async def main():
        async with await AsyncClient.start(**env.client_kwargs()) as c:
            sid = await c.create_sandbox(env.spec())
            try:
                results = await asyncio.gather(*(c.exec(sid, ["sh", "-c", f"echo {i}"]) for i in range(8)))
                assert [r.stdout for r in results] == [f"{i}\n".encode() for i in range(8)]
                ex = await c.start_exec(sid, ["sh", "-c", "echo a; echo b >&2"], iterate=True)
                got = [chunk async for chunk in ex]
                assert sorted(got) == [("stderr", b"b\n"), ("stdout", b"a\n")]
                assert (await ex.result()).exit_code == 0
                with pytest.raises(resident.NotFound):
                    await c.exec("missing", ["true"])
            finally:
                await c.terminate(sid)

    asyncio.run(main())


def test_cancelling_the_task_cancels_the_exec(env):
    async def main():
        async with await AsyncClient.start(**env.client_kwargs()) as c:
            sid = await c.create_sandbox(env.spec())
            try:
                task = asyncio.ensure_future(c.exec(sid, ["sleep", "60"]))
                await asyncio.sleep(0.5)
                task.cancel()
                with pytest.raises(asyncio.CancelledError):
                    await task
                r = await c.exec(sid, ["echo", "still serving"])
                assert r.stdout == b"still serving\n"
            finally:
                await c.terminate(sid)

    asyncio.run(main())
