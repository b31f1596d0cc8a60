"""The asyncio flavour: the same operations as resident.Client, awaitable.

It wraps a Client (whose reader thread does the I/O) and turns its futures
into asyncio ones, so an async harness never blocks its event loop and
output callbacks run on the loop, not on the reader thread.
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any, AsyncIterator, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from .client import Client, Execution
from .types import ExecInfo, ExecResult, Listing, ReadResult, Sandbox, Volume


class AsyncExecution:
    """A running exec, awaitable; iterate its output with ``async for``."""

    def __init__(self, inner: Execution, queue: "Optional[asyncio.Queue[Optional[Tuple[str, bytes]]]]") -> None:
        self._inner = inner
        self._queue = queue
        self.exec_id = inner.exec_id

    async def write(self, data: bytes, eof: bool = False) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self._inner.write, data, eof)

    async def close_stdin(self) -> None:
        await self.write(b"", eof=True)

    async def kill(self) -> None:
        await asyncio.get_running_loop().run_in_executor(None, self._inner.kill)

    def cancel(self) -> None:
        self._inner.cancel()

    async def result(self) -> ExecResult:
        try:
            await asyncio.wrap_future(self._inner._future)
        except asyncio.CancelledError:
            self._inner.cancel()  # the task was cancelled: so is the exec
            raise
        except Exception:
            pass
        return self._inner.result(0)

    def __aiter__(self) -> AsyncIterator[Tuple[str, bytes]]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Tuple[str, bytes]]:
        if self._queue is None:
            raise RuntimeError("start the exec with iterate=True to iterate its output")
        while True:
            item = await self._queue.get()
            if item is None:
                return
            yield item


class AsyncClient:
    """An awaitable resident client. Create it with ``await AsyncClient.start(...)``
    (spawning is blocking work, done off the loop); arguments as for Client."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self.info = client.info

    @classmethod
    async def start(cls, *args: Any, **kwargs: Any) -> "AsyncClient":
        loop = asyncio.get_running_loop()
        client = await loop.run_in_executor(None, functools.partial(Client, *args, **kwargs))
        return cls(client)

    async def _run(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(None, functools.partial(fn, *args, **kwargs))

    async def create_sandbox(self, spec: Optional[Mapping[str, Any]] = None,
                             tags: Optional[Mapping[str, str]] = None) -> str:
        return await self._run(self.client.create_sandbox, spec, tags)

    async def list_owned(self) -> List[Sandbox]:
        return await self._run(self.client.list_owned)

    async def read_owner(self, sandbox_id: str) -> Optional[str]:
        return await self._run(self.client.read_owner, sandbox_id)

    async def terminate(self, sandbox_id: str) -> bool:
        return await self._run(self.client.terminate, sandbox_id)

    async def write_file(self, sandbox_id: str, path: str, data: bytes, mode: Optional[int] = None) -> int:
        return await self._run(self.client.write_file, sandbox_id, path, data, mode)

    async def start_exec(self, sandbox_id: str, argv: Sequence[str], *,
                         on_output: Optional[Callable[[str, bytes], None]] = None, iterate: bool = False,
                         **kw: Any) -> AsyncExecution:
        loop = asyncio.get_running_loop()
        queue: "Optional[asyncio.Queue[Optional[Tuple[str, bytes]]]]" = asyncio.Queue() if iterate else None

        def on_reader_thread(stream: str, data: bytes) -> None:
            if on_output is not None:
                loop.call_soon_threadsafe(on_output, stream, data)
            if queue is not None:
                loop.call_soon_threadsafe(queue.put_nowait, (stream, data))

        inner = await self._run(self.client.start_exec, sandbox_id, argv, on_output=on_reader_thread, **kw)
        return self._wrap(inner, queue)

    def _streams(self, on_output: Optional[Callable[[str, bytes], None]], iterate: bool) -> Tuple[Any, Any]:
        loop = asyncio.get_running_loop()
        queue: "Optional[asyncio.Queue[Optional[Tuple[str, bytes]]]]" = asyncio.Queue() if iterate else None

        def on_reader_thread(stream: str, data: bytes) -> None:
            if on_output is not None:
                loop.call_soon_threadsafe(on_output, stream, data)
            if queue is not None:
                loop.call_soon_threadsafe(queue.put_nowait, (stream, data))

        return on_reader_thread, queue

    def _wrap(self, inner: Execution, queue: Any) -> AsyncExecution:
        if queue is not None:
            loop = asyncio.get_running_loop()
            inner._future.add_done_callback(lambda _f: loop.call_soon_threadsafe(queue.put_nowait, None))
        return AsyncExecution(inner, queue)

    async def start_detached(self, sandbox_id: str, argv: Sequence[str], **kw: Any) -> str:
        return await self._run(self.client.start_detached, sandbox_id, argv, **kw)

    async def attach(self, exec_id: str, *, on_output: Optional[Callable[[str, bytes], None]] = None,
                     iterate: bool = False, **kw: Any) -> AsyncExecution:
        on_reader_thread, queue = self._streams(on_output, iterate)
        inner = await self._run(self.client.attach, exec_id, on_output=on_reader_thread, **kw)
        return self._wrap(inner, queue)

    async def list_execs(self, sandbox_id: str) -> List[ExecInfo]:
        return await self._run(self.client.list_execs, sandbox_id)

    async def kill_detached(self, sandbox_id: str, exec_id: str) -> None:
        await self._run(self.client.kill_detached, sandbox_id, exec_id)

    async def exec(self, sandbox_id: str, argv: Sequence[str], **kw: Any) -> ExecResult:
        ex = await self.start_exec(sandbox_id, argv, **kw)
        return await ex.result()

    async def list_volumes(self) -> List[Volume]:
        return await self._run(self.client.list_volumes)

    async def list_dir(self, root: str, path: str = "", limit: Optional[int] = None) -> Listing:
        return await self._run(self.client.list_dir, root, path, limit)

    async def read_file(self, root: str, path: str, into: Any = None) -> ReadResult:
        return await self._run(self.client.read_file, root, path, into)

    async def create_volume(self, name: str) -> None:
        await self._run(self.client.create_volume, name)

    async def delete_volume(self, name: str) -> None:
        await self._run(self.client.delete_volume, name)

    async def read_sandbox_file(self, sandbox_id: str, path: str, into: Any = None) -> ReadResult:
        return await self._run(self.client.read_sandbox_file, sandbox_id, path, into)

    async def list_sandbox_dir(self, sandbox_id: str, path: str = "", limit: Optional[int] = None) -> Listing:
        return await self._run(self.client.list_sandbox_dir, sandbox_id, path, limit)

    async def upload(self, sandbox_id: str, path: str, source: Any, mode: Optional[int] = None,
                     size: Optional[int] = None) -> int:
        return await self._run(self.client.upload, sandbox_id, path, source, mode, size)

    async def close(self) -> Optional[int]:
        return await self._run(self.client.close)

    async def __aenter__(self) -> "AsyncClient":
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.close()
