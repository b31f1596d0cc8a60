"""Drive a resident (sandboxes on local, Docker and other providers) from Python.

    from resident import Client
    with Client(provider="local") as rc:
        sid = rc.create_sandbox()
        print(rc.exec(sid, ["sh", "-c", "echo hi"]).stdout)
        rc.terminate(sid)

``resident.aio.AsyncClient`` is the asyncio flavour; ``resident.sandbox.ResidentSandbox``
is the eval harnesses' ``Sandbox`` backed by a resident.
"""

from .client import Client, Execution, default_install_id, find_binary
from .errors import (Cancelled, Conflict, CredentialsExpired, InternalError, InvalidRequest, NotFound,
                     OperationTimeout, ProtocolError, QuotaExceeded, ResidentError, ResidentExited, Transient,
                     Unauthorized)
from .types import DirEntry, ExecInfo, ExecResult, Info, Listing, ReadResult, Sandbox, Volume

__all__ = [
    "Client", "Execution", "default_install_id", "find_binary",
    "ResidentError", "InvalidRequest", "NotFound", "Unauthorized", "CredentialsExpired", "QuotaExceeded",
    "OperationTimeout", "Cancelled", "Conflict", "Transient", "InternalError", "ResidentExited", "ProtocolError",
    "ExecResult", "ExecInfo", "Info", "Sandbox", "Volume", "DirEntry", "Listing", "ReadResult",
]
