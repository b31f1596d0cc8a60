// Unit tests of telling the terminal's own answers from keys (no editor needed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isTerminalReport } from '../src/terminalReports';

test('the answers a terminal sends by itself are reports', () => {
  for (const answer of [
    '\x1b[24;1R', // busybox's prompt asks where the cursor is
    '\x1b[?24;1R',
    '\x1b[?1;2c', '\x1b[>0;276;0c', '\x1b[=c',
    '\x1b[I', '\x1b[O',
    '\x1b[?2004;1$y',
    '\x1b[8;24;80t',
    '\x1b]11;rgb:ffff/ffff/ffff\x07', '\x1b]10;rgb:0000/0000/0000\x1b\\',
    '\x1bP1$r0m\x1b\\',
    '\x1b[24;1R\x1b[24;1R', // two prompts replayed at once
  ]) {
    assert.equal(isTerminalReport(answer), true, JSON.stringify(answer));
  }
});

test('keys the user presses are not reports, alone or after an answer', () => {
  for (const key of ['a', '\r', ' ', '\x03', '\x04', '\x1b', '\x1b[A', '\x1b[B', '\x1bOP', '\x1b[15~', '\x1b[1;5C', '\x1b[24;1Rq', 'q\x1b[24;1R', '']) {
    assert.equal(isTerminalReport(key), false, JSON.stringify(key));
  }
});
