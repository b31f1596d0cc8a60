"""Translate a Python ``re`` pattern into RE2 text for the resident's scrubber.

The resident compiles token patterns with Go's ``regexp`` (RE2). Most Python
syntax means the same there; the rest is rewritten (``\\Z`` to ``\\z``,
``\\uXXXX`` and octal escapes to ``\\x{...}``, ``{,n}`` to ``{0,n}``, the
verbose flag to plain text, ``(?#...)`` dropped, compile flags to an inline
group) or refused with an error that names the construct: backreferences,
lookahead and lookbehind, atomic groups, possessive quantifiers, conditionals,
and repeat counts over RE2's 1000. RE2's ``\\d \\w \\s \\b`` are ASCII, so a
pattern is read as if ``re.ASCII`` were set; tokens are ASCII in practice.

tokens.py turns a shim's token_scrub_regex into the handshake's token patterns.
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any, List, Optional

RE2_MAX_REPEAT = 1000
_OCT = "01234567"
_HEX = "0123456789abcdefABCDEF"
_PUNCT = set("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~")


class RegexError(ValueError):
    """The pattern uses a construct RE2 does not have."""


def _hexesc(cp: int) -> str:
    return "\\x{%x}" % cp


class _Translator:
    def __init__(self, src: str, flags: int) -> None:
        self.s = src
        self.i = 0
        self.verbose = bool(flags & re.VERBOSE)
        self.out: List[str] = []

    def fail(self, what: str, at: Optional[int] = None) -> RegexError:
        at = self.i if at is None else at
        return RegexError("RE2 has no %s (at offset %d of %r)" % (what, at, self.s))

    def peek(self, k: int = 0) -> str:
        j = self.i + k
        return self.s[j] if j < len(self.s) else ""

    def run(self) -> str:
        s = self.s
        while self.i < len(s):
            c = s[self.i]
            if c == "\\":
                self.out.append(self.escape(in_class=False))
            elif c == "[":
                self.char_class()
            elif c == "(":
                self.group()
            elif c in "*+?":
                self.i += 1
                self.out.append(c)
                self.quantifier_suffix()
            elif c == "{":
                self.brace()
            elif self.verbose and c in " \t\n\r\f\v":
                self.i += 1
            elif self.verbose and c == "#":
                while self.i < len(s) and s[self.i] != "\n":
                    self.i += 1
            else:
                self.i += 1
                self.out.append(c)
        return "".join(self.out)

    def quantifier_suffix(self) -> None:
        if self.peek() == "?":
            self.i += 1
            self.out.append("?")
        elif self.peek() == "+":
            raise self.fail("possessive quantifier")

    def brace(self) -> None:
        m = re.compile(r"\{(\d*)(,?)(\d*)\}").match(self.s, self.i)
        if not m or (not m.group(1) and not m.group(3)) or (not m.group(2) and not m.group(1)):
            self.i += 1
            self.out.append("\\{")  # Python reads a brace that is no repeat as a literal
            return
        lo, comma, hi = m.group(1) or "0", m.group(2), m.group(3)
        for n in (lo, hi):
            if n and int(n) > RE2_MAX_REPEAT:
                raise self.fail("repeat count over %d ({%s})" % (RE2_MAX_REPEAT, m.group(0)[1:-1]))
        self.i = m.end()
        self.out.append("{%d%s%s}" % (int(lo), comma, str(int(hi)) if hi else ""))
        self.quantifier_suffix()

    def group(self) -> None:
        s, start = self.s, self.i
        if self.peek(1) != "?":
            self.i += 1
            self.out.append("(")
            return
        rest = s[start + 2:]
        if rest.startswith(":"):
            self.i += 3
            self.out.append("(?:")
        elif rest.startswith("P<"):
            end = s.index(">", start)
            self.out.append(s[start:end + 1])
            self.i = end + 1
        elif rest.startswith("P="):
            raise self.fail("backreference (?P=...)")
        elif rest[:1] in ("=", "!"):
            raise self.fail("lookahead (?%s...)" % rest[0])
        elif rest[:2] in ("<=", "<!"):
            raise self.fail("lookbehind (?%s...)" % rest[:2])
        elif rest.startswith(">"):
            raise self.fail("atomic group (?>...)")
        elif rest.startswith("("):
            raise self.fail("conditional (?(...)...)")
        elif rest.startswith("#"):
            self.i = s.index(")", start) + 1
        else:
            self.inline_flags(start)

    def inline_flags(self, start: int) -> None:
        m = re.compile(r"\(\?([aiLmsux]*)(?:-([imsx]*))?([:)])").match(self.s, start)
        if not m:
            raise self.fail("group syntax %r" % self.s[start:start + 4])
        on, off, end = m.group(1), m.group(2) or "", m.group(3)
        if "L" in on:
            raise self.fail("locale flag (?L)")
        if "x" in on + off:
            if end != ")":
                raise self.fail("scoped verbose flag (?x:...)")
            self.verbose = True
        keep_on = "".join(f for f in on if f in "ims")
        keep_off = "".join(f for f in off if f in "ims")
        flags = keep_on + ("-" + keep_off if keep_off else "")
        self.i = m.end()
        if end == ":":
            self.out.append("(?%s:" % flags)
        elif flags:
            self.out.append("(?%s)" % flags)

    def escape(self, in_class: bool) -> str:
        s, at = self.s, self.i
        c = self.peek(1)
        self.i += 2
        if c == "":
            raise self.fail("trailing backslash", at)
        if c.isdigit():
            digits = c
            while len(digits) < 3 and self.peek() in _OCT and self.peek():
                digits += self.peek()
                self.i += 1
            # Python: \0, a class escape or three octal digits are octal; else a group reference
            if in_class or c == "0" or (len(digits) == 3 and c in _OCT):
                return _hexesc(int(digits, 8))
            raise self.fail("backreference \\%s" % c, at)
        if c == "Z" and not in_class:
            return "\\z"
        if c == "b" and in_class:
            return _hexesc(8)
        if c in "AbBdDwWsSntrfva":
            return "\\" + c
        if c == "x":
            h = s[self.i:self.i + 2]
            self.i += 2
            return _hexesc(int(h, 16))
        if c in "uU":
            n = 4 if c == "u" else 8
            h = s[self.i:self.i + n]
            self.i += n
            return _hexesc(int(h, 16))
        if c == "N":
            end = s.index("}", self.i)
            name = s[self.i + 1:end]
            self.i = end + 1
            return _hexesc(ord(unicodedata.lookup(name)))
        if c in _PUNCT:
            return "\\" + c
        return c  # an escaped non-ASCII or white space character is itself

    def char_class(self) -> None:
        self.i += 1
        parts = ["["]
        if self.peek() == "^":
            parts.append("^")
            self.i += 1
        if self.peek() == "]":
            parts.append("\\]")
            self.i += 1
        while True:
            c = self.peek()
            if c == "":
                raise self.fail("end of a character class")
            if c == "]":
                self.i += 1
                break
            if c == "\\":
                parts.append(self.escape(in_class=True))
            elif c == "[":
                parts.append("\\[")
                self.i += 1
            else:
                parts.append(c)
                self.i += 1
        parts.append("]")
        self.out.append("".join(parts))


def translate(pattern: Any) -> str:
    """RE2 text for a compiled Python pattern (or its source string)."""
    if isinstance(pattern, str):
        src, flags = pattern, 0
    elif isinstance(getattr(pattern, "pattern", None), str):
        src, flags = pattern.pattern, pattern.flags
    elif isinstance(getattr(pattern, "pattern", None), bytes):
        raise RegexError("token_scrub_regex must be a str pattern, not bytes")
    else:
        raise RegexError("token_scrub_regex must be an re.Pattern[str], got %s" % type(pattern).__name__)
    if flags & re.LOCALE:
        raise RegexError("RE2 has no re.LOCALE")
    body = _Translator(src, flags).run()
    try:
        re.compile(src, flags)
    except re.error as e:
        raise RegexError("token_scrub_regex %r is not a valid pattern: %s" % (src, e)) from None
    lead = "".join(f for flag, f in ((re.IGNORECASE, "i"), (re.MULTILINE, "m"), (re.DOTALL, "s")) if flags & flag)
    return ("(?%s)" % lead if lead else "") + body
