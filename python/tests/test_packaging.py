"""`pip install ./python` must work with no registry: the in-tree backend
builds a wheel from the standard library alone, holding the whole package."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE / "_build"))

import resident_build  # noqa: E402


def test_wheel_holds_the_package_and_imports(tmp_path):
    name = resident_build.build_wheel(str(tmp_path))
    wheel = tmp_path / name
    with zipfile.ZipFile(wheel) as z:
        names = set(z.namelist())
        record = z.read("resident-0.1.0.dist-info/RECORD").decode()
    expected = {f"resident/{p.name}" for p in (HERE / "resident").glob("*.py")} | {"resident/py.typed"}
    assert expected <= names
    assert all(n in record for n in expected)
    probe = "import resident, resident.aio, resident.sandbox; print(resident.__file__)"
    out = subprocess.run([sys.executable, "-I", "-c", f"import sys; sys.path.insert(0, {str(wheel)!r}); {probe}"],
                         capture_output=True, text=True, check=True)
    assert str(wheel) in out.stdout


def test_backend_needs_nothing_to_build():
    assert resident_build.get_requires_for_build_wheel() == []
    assert resident_build.get_requires_for_build_sdist() == []
