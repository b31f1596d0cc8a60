"""python3 -m resident_shim PATH/TO/provider.py [--owner-key KEY] [--name NAME]"""

from __future__ import annotations

import sys

from .app import main

sys.exit(main())
