// Unit tests of the credential expiry the extension sends (no editor needed).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { expireAtParam, expiryFor, isExpiredAnswer } from '../src/expiry';

const now = new Date('2026-12-01T10:00:00.000Z');

test('a lifetime fixes the expiry from the moment the credentials are entered', () => {
  assert.equal(expiryFor(90, now), '2026-12-01T10:01:30.000Z');
  assert.equal(expiryFor(0.5, now), '2026-12-01T10:00:00.500Z');
});

test('no lifetime, zero, negative or not a number: no expiry', () => {
  for (const v of [0, -5, Number.NaN, Number.POSITIVE_INFINITY, '60', undefined, null]) {
    assert.equal(expiryFor(v, now), undefined, String(v));
  }
});

test('a stored expiry is sent only when it is RFC 3339 with a zone (the resident refuses the rest)', () => {
  assert.equal(expireAtParam('2026-12-01T10:01:30.000Z'), '2026-12-01T10:01:30.000Z');
  assert.equal(expireAtParam('2026-12-01T12:01:30+02:00'), '2026-12-01T12:01:30+02:00');
  for (const v of ['2026-12-01', '2026-12-01T10:01:30', 'soon', '', 42, undefined]) {
    assert.equal(expireAtParam(v), undefined, String(v));
  }
});

test('only unauthorized means expired credentials', () => {
  assert.equal(isExpiredAnswer('unauthorized', -32002), true);
  assert.equal(isExpiredAnswer(undefined, -32002), true);
  assert.equal(isExpiredAnswer('invalid_request', -32602), false);
  assert.equal(isExpiredAnswer('internal', -32603), false);
});
