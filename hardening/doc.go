// Package hardening keeps registered secrets out of everything resident
// sends to its host: exec output, JSON frames and logs all pass through a
// Scrubber, which replaces secrets with Mask.
//
// # What it promises
//
//   - Every occurrence of a registered literal form is masked, wherever the
//     writes to a Stream split it. The forms of a secret are the rows of one
//     table (Forms, forms.go): the raw value; the inside of a JSON string as
//     encoding/json writes it (with and without its HTML-safe \u003c-style
//     escapes), as zap writes it (\u0008, not \b), and ASCII-only with
//     \uXXXX escapes and surrogate pairs (lower- and upper-case hex, as
//     Python's json.dumps and Jackson write it); the inside of strconv.Quote
//     and strconv.QuoteToASCII; URL query, path and userinfo escaping, and
//     every byte outside RFC 3986's unreserved set percent-encoded (upper-
//     and lower-case hex); standard and URL-safe base64, padded and
//     unpadded, whole and as the stable inner part at each of the three byte
//     alignments (so a secret inside a larger base64 blob is caught: the one
//     or two characters at each end that mix in neighbouring bytes stay
//     visible). Every form is registered again as the resident's own
//     output quotes it: Go-quoted (%q in an error message), then each of
//     those as encoding/json and zap spell it (a frame, a log line; the
//     table's InMessages and InFrames columns). Multi-line values are
//     registered whole (LF and CRLF, with and without the trailing newline)
//     and per line, each line with every row.
//   - Overlapping or nested matches become a single Mask, and at each
//     position the longest form wins, so no fragment of a longer secret
//     survives because a shorter one matched first.
//   - Token patterns (TokenPattern) are matched where one of their literal
//     prefixes occurs, with the regex anchored at the prefix and limited to
//     MaxLen bytes, so the result does not depend on how writes were split.
//   - Stream output equals Scrub of the whole input for any split, while the
//     secret set is unchanged. A Stream holds back only bytes that may still
//     become part of a match (see Stream).
//   - Output with no match is the input, byte for byte; Scrub then returns
//     its argument without copying.
//
// # What it cannot do
//
//   - A process that knows a secret can always leak it in a form not listed
//     above: reversed, hex-encoded, base32, compressed, encrypted, split
//     across lines, one character per line, base64 of a base64, JSON with
//     an escape chosen per character, or a mix of two rows. Scrubbing
//     stops accidents, not a hostile sandbox.
//   - A token pattern matches the token as printed; its base64 or other
//     encodings are not matched (only registered literals have forms).
//   - Values shorter than MinSecretLen, and derived forms shorter than it,
//     are not registered.
//   - Bytes a Stream emitted before a secret was added cannot be recalled.
//   - A base64 blob reveals the few bits of a secret that share a
//     character with its neighbours.
//   - Masking is byte-oriented: a match may start just after a backslash
//     of a JSON escape or inside a multi-byte UTF-8 sequence, leaving a
//     stray backslash or partial rune beside the Mask.
//
// # Design
//
// Literal forms are found with a Wu–Manber search (literal.go): a window as
// long as the shortest form (capped at 24 bytes) slides over the data,
// jumping by a distance read from a table hashed on its last four bytes, so
// throughput barely depends on the number of forms. Candidates are verified
// against forms bucketed by their first four bytes, longest first. Token
// prefixes get the same treatment on two-byte blocks (tokens.go), and the
// regex runs only at prefix hits; a stream decides a hit as soon as no
// thread of the regex's automaton can go on (tokens_live.go), not only once
// MaxLen bytes follow it. Large buffers are scanned as four
// interleaved lanes, because each jump waits on the previous table load.
//
// All of it is immutable and replaced copy-on-write (atomic.Pointer) when
// secrets or patterns are added, so scrubbing never takes a lock. A Stream
// (stream.go) asks the same search where the undecided tail starts, and
// keeps only that.
package hardening
