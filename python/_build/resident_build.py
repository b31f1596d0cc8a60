"""A PEP 517 build backend of a few lines, so `pip install ./python` works
offline: setuptools would need `wheel` from a registry, and none is reachable
on the machines this project runs on. It packs resident/ into a pure-Python
wheel with the standard library only."""

from __future__ import annotations

import base64
import hashlib
import os
import tarfile
import zipfile

NAME = "resident"
# The host package and the provider shim bridge ship in one wheel.
PACKAGES = ("resident", "resident_shim")
VERSION = "0.1.0"
HERE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DIST = f"{NAME}-{VERSION}"
METADATA = f"""Metadata-Version: 2.1
Name: {NAME}
Version: {VERSION}
Summary: Drive a resident daemon (sandboxes on local, Docker and other providers) from Python
Requires-Python: >=3.9
"""
WHEEL = "Wheel-Version: 1.0\nGenerator: resident_build\nRoot-Is-Purelib: true\nTag: py3-none-any\n"


def _package_files():
    for package in PACKAGES:
        root = os.path.join(HERE, package)
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
            for f in sorted(filenames):
                if f.endswith((".py", ".typed")):
                    full = os.path.join(dirpath, f)
                    yield full, os.path.relpath(full, HERE).replace(os.sep, "/")


def _record_line(arcname: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    name = f"{DIST}-py3-none-any.whl"
    info = f"{DIST}.dist-info"
    records = []
    with zipfile.ZipFile(os.path.join(wheel_directory, name), "w", zipfile.ZIP_DEFLATED) as z:
        entries = [(arc, open(full, "rb").read()) for full, arc in _package_files()]
        entries += [(f"{info}/METADATA", METADATA.encode()), (f"{info}/WHEEL", WHEEL.encode())]
        for arc, data in entries:
            z.writestr(arc, data)
            records.append(_record_line(arc, data))
        records.append(f"{info}/RECORD,,")
        z.writestr(f"{info}/RECORD", "\n".join(records) + "\n")
    return name


def build_sdist(sdist_directory, config_settings=None):
    name = f"{DIST}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as t:
        for rel in ("pyproject.toml", "README.md", "_build/resident_build.py"):
            t.add(os.path.join(HERE, rel), f"{DIST}/{rel}")
        for full, arc in _package_files():
            t.add(full, f"{DIST}/{arc}")
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []
