// When provider credentials stop working (docs/protocol.md §3.5): the time is
// fixed when the user enters them (resident.credentialLifetimeSeconds after
// that moment) and handed to the resident as initialize's
// credentials_expire_at, so that it ends the session (resident/
// credentials_expired, exit 3) and the editor asks to sign in again. Pure
// logic, no editor: unit-tested in test/expiry.test.ts.

/** The expiry of credentials entered at now, or undefined for none (a lifetime of 0, or not a positive number). */
export function expiryFor(lifetimeSeconds: unknown, now: Date): string | undefined {
  if (typeof lifetimeSeconds !== 'number' || !Number.isFinite(lifetimeSeconds) || lifetimeSeconds <= 0) return undefined;
  return new Date(now.getTime() + Math.round(lifetimeSeconds * 1000)).toISOString(); // RFC 3339 with a zone (Z)
}

/** The credentials_expire_at to send: a stored expiry only if it parses (a hand-edited state must not break initialize). */
export function expireAtParam(stored: unknown): string | undefined {
  if (typeof stored !== 'string' || !/Z$|[+-]\d\d:\d\d$/.test(stored)) return undefined;
  return Number.isNaN(Date.parse(stored)) ? undefined : stored;
}

/** Whether an answer to initialize means the credentials have expired (unauthorized, -32002), not some other refusal. */
export function isExpiredAnswer(kind: string | undefined, code: number | undefined): boolean {
  return kind === 'unauthorized' || code === -32002;
}
