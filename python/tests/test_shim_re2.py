"""token_scrub_regex to RE2 text: what is rewritten, what is refused, what is derived."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from resident_shim import re2, tokens  # noqa: E402


@pytest.mark.parametrize("pattern, want", [
    (re.compile(r"dckr_pat_[A-Za-z0-9_-]{16,100}"), r"dckr_pat_[A-Za-z0-9_-]{16,100}"),
    (re.compile(r"ab\Z"), r"ab\z"),
    (re.compile(r"x\u00e9\N{BULLET}\x41"), r"x\x{e9}\x{2022}\x{41}"),
    (re.compile(r"a{,3}b{2}c{1,}"), r"a{0,3}b{2}c{1,}"),
    (re.compile(r"a{x}"), r"a\{x}"),
    (re.compile(r"\0\012"), r"\x{0}\x{a}"),
    (re.compile(r"[]a\b]"), r"[\]a\x{8}]"),
    (re.compile(r"(?#note)tok_(?P<body>\w+)"), r"tok_(?P<body>\w+)"),
    (re.compile(r"tok _ \d+  # comment", re.VERBOSE), r"tok_\d+"),
    (re.compile(r"tok", re.IGNORECASE | re.DOTALL), r"(?is)tok"),
    (re.compile(r"(?a)t(?i:o)k"), r"t(?i:o)k"),
])
def test_translate(pattern, want):
    assert re2.translate(pattern) == want


@pytest.mark.parametrize("source, construct", [
    (r"(a)\1", "backreference"),
    (r"(?P<n>a)(?P=n)", "backreference"),
    (r"tok(?=x)", "lookahead"),
    (r"tok(?!x)", "lookahead"),
    (r"(?<=x)tok", "lookbehind"),
    (r"(?<!x)tok", "lookbehind"),
    (r"(a)?(?(1)b|c)", "conditional"),
    (r"tok{1,5000}", "repeat count over 1000"),
    pytest.param(r"tok_a++", "possessive", marks=pytest.mark.skipif(sys.version_info < (3, 11), reason="3.11 syntax")),
    pytest.param(r"(?>tok)", "atomic", marks=pytest.mark.skipif(sys.version_info < (3, 11), reason="3.11 syntax")),
])
def test_refused_naming_the_construct(source, construct):
    with pytest.raises(re2.RegexError, match=construct):
        re2.translate(re.compile(source))


def test_bytes_patterns_are_refused():
    with pytest.raises(re2.RegexError, match="bytes"):
        re2.translate(re.compile(rb"tok"))


@pytest.mark.parametrize("pattern, want", [
    (r"dckr_pat_[A-Za-z0-9_-]{16,100}", {"prefixes": ["dckr_pat_"], "max_len": 109}),
    (r"(?:ghp|gho)_[A-Za-z0-9]{36}", {"prefixes": ["gho_", "ghp_"], "max_len": 40}),
    (r"ghp_\w{36}|glpat-[\w-]{20}", {"prefixes": ["ghp_", "glpat-"], "max_len": 40}),
    (r"tok_.+", {"prefixes": ["tok_"]}),  # unbounded: the resident refuses or is told max_len
    (r"[a-z]tok{4}", {"max_len": 7}),  # no literal start
    (r"(?i)tok_[a-z]{4}", {}),  # case folding: left to the resident
])
def test_derive_only_what_is_plain(pattern, want):
    assert tokens.derive(re.compile(pattern)) == want


def test_token_patterns_names_and_none():
    assert tokens.token_patterns(None, "p-token") == []
    got = tokens.token_patterns((re.compile("aa_[0-9]{4}"), "bb_[0-9]{2}"), "p-token")
    assert [t["name"] for t in got] == ["p-token", "p-token-2"]
