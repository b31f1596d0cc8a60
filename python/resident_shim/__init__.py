"""resident_shim: serve a Python provider shim over resident's external provider protocol.

A shim is a Python file that exports ``PROVIDER``, an implementation of the original
``ByocProvider`` contract (see :mod:`resident_shim.contract`). Run it as::

    python3 -m resident_shim PATH/TO/provider.py [--owner-key KEY] [--name NAME]

and give that command to ``resident --provider external -- ...``. The wire is
``docs/provider-protocol.md`` (version 1). Standard library only, Python 3.9+.
"""

from __future__ import annotations

__version__ = "0.1.0"

PROTOCOL_VERSION = 1
