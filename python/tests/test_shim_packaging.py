"""resident_shim ships in the wheel that `pip install ./python` builds.

The in-tree build backend (python/_build/resident_build.py) comes with the host
package; where it is present it must pack resident_shim too, or `python3 -m
resident_shim` would work from a checkout and not once installed.
"""

from __future__ import annotations

import importlib.util
import zipfile

import pytest

from shimclient import PYTHON_DIR

BACKEND = PYTHON_DIR / "_build" / "resident_build.py"


def test_the_wheel_holds_resident_shim(tmp_path):
    if not BACKEND.exists():
        pytest.skip("no in-tree build backend in this tree yet")
    spec = importlib.util.spec_from_file_location("resident_build", BACKEND)
    backend = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(backend)
    wheel = tmp_path / backend.build_wheel(str(tmp_path))
    names = set(zipfile.ZipFile(wheel).namelist())
    for module in ("__init__", "__main__", "contract", "app", "bridge", "re2", "tokens"):
        assert "resident_shim/%s.py" % module in names, "the backend's package list lacks resident_shim"
