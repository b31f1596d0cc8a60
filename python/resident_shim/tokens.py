"""A shim's token_scrub_regex as the handshake's ``secrets.token_patterns``.

Each pattern is translated to RE2 text (re2.py). ``derive`` adds ``prefixes``
and ``max_len`` only when they are plain to see (literal starts, every repeat
bounded, no case folding); otherwise it leaves them out and the resident
derives them itself or refuses the pattern, naming it. Widths are those of RE2
on UTF-8: its ``\\d \\w \\s`` are ASCII, ``.`` and negated classes up to 4 bytes.
"""

from __future__ import annotations

import re
from typing import Any, Dict, List, Optional, Tuple

from .re2 import translate

try:
    import re._constants as _c  # type: ignore[import]  # Python 3.11+
    import re._parser as _sre  # type: ignore[import]
except ImportError:  # pragma: no cover - Python < 3.11
    import sre_constants as _c  # type: ignore[no-redef]
    import sre_parse as _sre  # type: ignore[no-redef]

MAX_DERIVED_LEN = 4096  # the resident's own bound on a derived token length


def _utf8len(cp: int) -> int:
    return len(chr(cp).encode("utf-8", "surrogatepass"))


_NEGATED_CATEGORIES = {_c.CATEGORY_NOT_DIGIT, _c.CATEGORY_NOT_WORD, _c.CATEGORY_NOT_SPACE,
                       _c.CATEGORY_NOT_LINEBREAK, getattr(_c, "CATEGORY_UNI_NOT_DIGIT", None),
                       getattr(_c, "CATEGORY_UNI_NOT_WORD", None), getattr(_c, "CATEGORY_UNI_NOT_SPACE", None)}


def _max_len(items: Any) -> Optional[int]:
    total = 0
    for op, av in items:
        if op == _c.LITERAL:
            n: Optional[int] = _utf8len(av)
        elif op in (_c.NOT_LITERAL, _c.ANY):
            n = 4
        elif op == _c.IN:
            n = 1
            for iop, iav in av:
                if iop == _c.NEGATE or (iop == _c.CATEGORY and iav in _NEGATED_CATEGORIES):
                    n = 4
                elif iop == _c.LITERAL:
                    n = max(n, _utf8len(iav))
                elif iop == _c.RANGE:
                    n = max(n, _utf8len(iav[1]))
        elif op in (_c.MAX_REPEAT, _c.MIN_REPEAT):
            lo, hi, sub = av
            inner = _max_len(sub)
            n = None if inner is None or hi == _c.MAXREPEAT else inner * hi
        elif op == _c.SUBPATTERN:
            n = _max_len(av[-1])
        elif op == _c.BRANCH:
            widths = [_max_len(b) for b in av[1]]
            n = None if None in widths else max(widths)  # type: ignore[type-var]
        elif op == _c.AT:
            n = 0
        else:
            return None
        if n is None:
            return None
        total += n
    return total


_MAX_PREFIXES = 16


def _prefixes(items: List[Any]) -> List[str]:
    """Literal strings one of which starts every match of items ([""] when none)."""
    if not items:
        return [""]
    (op, av), rest = items[0], items[1:]
    heads: List[Tuple[str, List[Any]]]
    if op == _c.LITERAL:
        heads = [(chr(av), rest)]
    elif op == _c.IN and 0 < len(av) <= 8 and all(iop == _c.LITERAL for iop, _ in av):
        heads = [(chr(c), rest) for _, c in av]
    elif op == _c.BRANCH:
        heads = [("", list(b) + rest) for b in av[1]]
    elif op == _c.SUBPATTERN and not av[1] and not av[2]:
        heads = [("", list(av[-1]) + rest)]
    else:
        return [""]
    out: List[str] = []
    for head, tail in heads:
        out += [head + p for p in _prefixes(tail)]
        if len(out) > _MAX_PREFIXES:
            return [""]
    return out


def derive(pattern: Any) -> Dict[str, Any]:
    """{"prefixes": [...], "max_len": n}, each only when plain to see."""
    if isinstance(pattern, str):
        src, flags = pattern, 0
    else:
        src, flags = pattern.pattern, pattern.flags
    out: Dict[str, Any] = {}
    parsed = _sre.parse(src, flags)
    if parsed.state.flags & re.IGNORECASE:
        return out
    items = list(parsed)
    prefixes = _prefixes(items)
    if all(len(p.encode()) >= 2 for p in prefixes):
        out["prefixes"] = sorted(set(prefixes))
    n = _max_len(items)
    if n is not None and 0 < n <= MAX_DERIVED_LEN:
        out["max_len"] = n
    return out


def token_patterns(value: Any, name: str) -> List[Dict[str, Any]]:
    """The initialize ``secrets.token_patterns`` for a shim's token_scrub_regex.

    value is an re.Pattern (or source string), None for no tokens, or a list or
    tuple of patterns; they are named name, name-2, ...
    """
    if value is None:
        return []
    values = list(value) if isinstance(value, (list, tuple)) else [value]
    out = []
    for k, v in enumerate(values):
        entry: Dict[str, Any] = {"name": name if k == 0 else "%s-%d" % (name, k + 1), "regexp": translate(v)}
        entry.update(derive(v))
        out.append(entry)
    return out

