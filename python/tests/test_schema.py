"""The package against docs/protocol.schema.json, the wire generated from the
Go types: every method the resident serves has a Client method, and the
typed results carry every field the schema gives them."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import resident
from resident import types

SCHEMA = json.loads((Path(__file__).resolve().parents[2] / "docs" / "protocol.schema.json").read_text())

# The Client method for each request of the wire (initialize and shutdown
# are the constructor and close()).
CLIENT_METHODS = {
    "initialize": "__init__",
    "shutdown": "shutdown",
    "sandbox/create": "create_sandbox",
    "sandbox/exec": "start_exec",
    "exec/stdin": None,  # Execution.write
    "exec/kill": None,  # Execution.kill
    "sandbox/write_file": "write_file",
    "sandbox/list_owned": "list_owned",
    "sandbox/read_owner": "read_owner",
    "sandbox/terminate": "terminate",
    "store/list_volumes": "list_volumes",
    "store/list_dir": "list_dir",
    "store/read_file": "read_file",
    "sandbox/snapshot": "snapshot",
    "snapshot/list": "list_snapshots",
    "snapshot/delete": "delete_snapshot",
    "image/build": "build_image",
    "sandbox/forward_port": "forward_port",
    "port/close": "close_port",
    "exec/start": "start_detached",
    "exec/attach": "attach",
    "sandbox/list_execs": "list_execs",
    "sandbox/read_file": "read_sandbox_file",
    "sandbox/list_dir": "list_sandbox_dir",
    "upload/data": "upload",
    "exec/resize": None,  # Execution.resize
    "store/create_volume": "create_volume",
    "store/delete_volume": "delete_volume",
    "sandbox/watch": "watch",
}


def test_every_request_of_the_wire_has_a_method():
    assert set(SCHEMA["methods"]) == set(CLIENT_METHODS), "the wire gained or lost a method"
    for method, attr in CLIENT_METHODS.items():
        if attr:
            assert callable(getattr(resident.Client, attr)), method
    assert callable(resident.Execution.write) and callable(resident.Execution.kill)


def props(name):
    return set(SCHEMA["$defs"][name]["properties"])


def test_exec_result_has_every_field_of_the_wire():
    fields = {f.name for f in dataclasses.fields(types.ExecResult)}
    assert props("ExecResult") <= fields


def test_listing_types_have_every_field_of_the_wire():
    assert props("Sandbox") <= {f.name for f in dataclasses.fields(types.Sandbox)}
    assert props("Volume") <= {f.name for f in dataclasses.fields(types.Volume)}
    assert props("DirEntry") <= {f.name for f in dataclasses.fields(types.DirEntry)}
    assert props("ReadFileResult") <= {f.name for f in dataclasses.fields(types.ReadResult)}


def test_error_kinds_are_the_wire_closed_set():
    kinds = set(SCHEMA["$defs"]["ErrorData"]["properties"]["kind"]["enum"])
    assert kinds == set(resident.errors.KINDS)
