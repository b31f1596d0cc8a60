// Unit tests of the line editing a tty-less terminal does (no editor needed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { LineDiscipline, toTerminalLines } from '../src/lineDiscipline';

function run(input: string[]) {
  const log = { echo: '', lines: [] as string[], eof: 0, interrupts: 0 };
  const d = new LineDiscipline({
    echo: (t) => { log.echo += t; },
    sendLine: (l) => log.lines.push(l),
    endOfInput: () => { log.eof++; },
    interrupt: () => { log.interrupts++; },
  });
  for (const chunk of input) d.input(chunk);
  return log;
}

test('Enter sends the line with a newline and echoes CRLF', () => {
  const log = run(['ls -l', '\r']);
  assert.deepEqual(log.lines, ['ls -l\n']);
  assert.equal(log.echo, 'ls -l\r\n');
});

test('the same keys in one chunk or one key per chunk give the same lines', () => {
  const keys = 'echo hi\rabc\x7f\x7fd\r';
  assert.deepEqual(run([keys]).lines, run([...keys]).lines);
  assert.deepEqual(run([keys]).lines, ['echo hi\n', 'ad\n']);
});

test('Backspace erases one character (a whole code point), and nothing on an empty line', () => {
  const log = run(['\x7f', 'aé', '\x7f', '\r']);
  assert.deepEqual(log.lines, ['a\n']);
  assert.equal(log.echo, 'aé\b \b\r\n');
});

test('Ctrl-D sends the pending text without a newline, then end of input', () => {
  const log = run(['partial', '\x04']);
  assert.deepEqual(log.lines, ['partial']);
  assert.equal(log.eof, 1);
});

test('Ctrl-C drops the line and is reported; escape sequences (arrows) are ignored', () => {
  const log = run(['rm -rf x', '\x03', '\x1b[A', 'ok\r']);
  assert.equal(log.interrupts, 1);
  assert.deepEqual(log.lines, ['ok\n']);
});

test('output lines end in CRLF for the terminal, once', () => {
  assert.equal(toTerminalLines('a\nb\r\nc'), 'a\r\nb\r\nc');
});
