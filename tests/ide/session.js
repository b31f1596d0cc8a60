#!/usr/bin/env node
// Proof that an IDE-style client speaks resident's protocol: this is how a
// VS Code extension talks to a child process (vscode-jsonrpc's
// StreamMessageReader/StreamMessageWriter over the child's stdio), with no
// resident-specific framing code. It runs one session against the local
// provider and checks every result; any mismatch exits 1.
//
//   node session.js /path/to/resident        (or RESIDENT_BIN=/path/to/resident node session.js)
'use strict';

const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const assert = require('node:assert/strict');
const rpc = require('vscode-jsonrpc/node');

const bin = process.argv[2] || process.env.RESIDENT_BIN;
if (!bin) {
  console.error('usage: node session.js RESIDENT_BINARY (or set RESIDENT_BIN)');
  process.exit(2);
}

const SECRET = 'ide-secret-4f3e2d1c';
const LIMIT_MS = 60_000; // a hang fails with a message; not a performance bound

const stateDir = fs.mkdtempSync(path.join(os.tmpdir(), 'resident-ide-'));
const child = spawn(bin, ['--provider', 'local', '--state-dir', stateDir], { stdio: ['pipe', 'pipe', 'pipe'] });
let logs = '';
child.stderr.on('data', (chunk) => { logs = (logs + chunk).slice(-16384); });
const exited = new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));

const raw = rpc.createMessageConnection(new rpc.StreamMessageReader(child.stdout), new rpc.StreamMessageWriter(child.stdin));

// The wire comes from docs/protocol.schema.json (generated from the Go
// types), not from names copied by hand: a request the schema does not
// know, a params key or a result key outside its definition, fails.
const schema = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'docs', 'protocol.schema.json'), 'utf8'));
function definition(ref) {
  return schema.$defs[ref.$ref.replace('#/$defs/', '')];
}
function checkKeys(what, value, def) {
  if (!value || typeof value !== 'object' || Array.isArray(value)) return;
  for (const key of Object.keys(value)) {
    assert.ok(def.properties && key in def.properties, `${what}: "${key}" is not in the schema`);
  }
}
const conn = {
  onNotification(method, handler) {
    assert.ok(method in schema.notifications, `notification ${method} is not in the schema`);
    return raw.onNotification(method, (p) => { checkKeys(method, p, definition(schema.notifications[method].params)); handler(p); });
  },
  async sendRequest(method, ...args) {
    const entry = schema.methods[method];
    assert.ok(entry, `method ${method} is not in the schema`);
    if (args.length) checkKeys(`${method} params`, args[0], definition(entry.params));
    const result = await raw.sendRequest(method, ...args);
    checkKeys(`${method} result`, result, definition(entry.result));
    return result;
  },
  listen() { raw.listen(); },
  dispose() { raw.dispose(); },
};

// exec/output, collected per exec and stream; waiters re-check on each chunk.
const output = new Map();
const waiters = new Set();
conn.onNotification('exec/output', (p) => {
  const key = `${p.exec_id}/${p.stream}`;
  output.set(key, Buffer.concat([output.get(key) || Buffer.alloc(0), Buffer.from(p.data, 'base64')]));
  for (const w of waiters) w();
});
const text = (execID, stream) => (output.get(`${execID}/${stream}`) || Buffer.alloc(0)).toString('utf8');

function waitForOutput(execID, stream, wanted) {
  return new Promise((resolve) => {
    const check = () => {
      if (text(execID, stream).includes(wanted)) {
        waiters.delete(check);
        resolve();
      }
    };
    waiters.add(check);
    check();
  });
}

conn.listen();

function step(name) {
  console.log(`ok ... ${name}`);
}

async function expectError(promise, code, kind) {
  try {
    const result = await promise;
    assert.fail(`expected error ${code} (${kind}), got result ${JSON.stringify(result)}`);
  } catch (err) {
    if (err instanceof assert.AssertionError) throw err;
    assert.ok(err instanceof rpc.ResponseError, `expected a ResponseError, got ${err}`);
    assert.equal(err.code, code, `error code (message: ${err.message})`);
    assert.equal(err.data && err.data.kind, kind, 'error data.kind');
    return err;
  }
}

async function session() {
  const init = await conn.sendRequest('initialize', {
    protocol_version: 1,
    install_id: 'vscode-ide-proof',
    credentials: { api_token: SECRET },
  });
  assert.equal(init.protocol_version, 1);
  assert.equal(init.provider.name, 'local');
  assert.equal(init.capabilities.stdin, true);
  assert.equal(init.owner_tag, 'resident-install-id');
  assert.deepEqual(init.error_kinds, ['invalid_request', 'not_found', 'unauthorized', 'quota', 'timeout', 'cancelled', 'conflict', 'transient', 'internal']);
  step('initialize');

  const created = await conn.sendRequest('sandbox/create', { spec: {}, tags: { ide: 'vscode-jsonrpc' } });
  assert.match(created.sandbox_id, /^lcl-[0-9a-f]{16}$/);
  const id = created.sandbox_id;
  step(`sandbox/create ${id}`);

  // Streamed output and stdin: the first line must arrive while the process
  // still waits for stdin, and only then is stdin sent.
  const script = `echo ready; while read line; do echo "got $line"; echo "err $line" >&2; done; echo "token=${SECRET}"`;
  const exec = conn.sendRequest('sandbox/exec', { sandbox_id: id, argv: ['sh', '-c', script], exec_id: 'ide-1', stdin: true });
  await waitForOutput('ide-1', 'stdout', 'ready\n');
  assert.deepEqual(await conn.sendRequest('exec/stdin', { exec_id: 'ide-1', data: Buffer.from('one\ntwo\n').toString('base64') }), {});
  assert.deepEqual(await conn.sendRequest('exec/stdin', { exec_id: 'ide-1', eof: true }), {});
  const result = await exec;
  assert.equal(result.exit_code, 0);
  assert.equal(result.timed_out, false);
  assert.equal(text('ide-1', 'stdout'), 'ready\ngot one\ngot two\ntoken=[REDACTED]\n');
  assert.equal(text('ide-1', 'stderr'), 'err one\nerr two\n');
  assert.equal(result.stdout_bytes, `ready\ngot one\ngot two\ntoken=${SECRET}\n`.length);
  step('sandbox/exec with streamed output and stdin (the credential arrived scrubbed)');

  // Cancel through vscode-jsonrpc's own CancellationToken: it sends
  // $/cancelRequest, and the resident still answers the request, with -32800.
  const source = new rpc.CancellationTokenSource();
  const started = Date.now();
  const long = conn.sendRequest('sandbox/exec', { sandbox_id: id, argv: ['sh', '-c', 'echo sleeping; sleep 30'], exec_id: 'ide-2' }, source.token);
  await waitForOutput('ide-2', 'stdout', 'sleeping\n');
  source.cancel();
  await expectError(long, -32800, 'cancelled');
  assert.ok(Date.now() - started < 20_000, 'the cancelled exec did not stop promptly');
  step('$/cancelRequest on a running exec');

  await expectError(conn.sendRequest('sandbox/exec', { sandbox_id: 'lcl-0000000000000000', argv: ['true'], exec_id: 'ide-3' }), -32001, 'not_found');
  step('not_found for a missing sandbox');

  const owned = await conn.sendRequest('sandbox/list_owned');
  assert.equal(owned.sandboxes.length, 1);
  assert.equal(owned.sandboxes[0].sandbox_id, id);
  assert.deepEqual(owned.sandboxes[0].tags, { ide: 'vscode-jsonrpc', 'resident-install-id': 'vscode-ide-proof' });
  step('sandbox/list_owned');

  assert.deepEqual(await conn.sendRequest('sandbox/terminate', { sandbox_id: id }), { existed: true });
  assert.deepEqual(await conn.sendRequest('sandbox/terminate', { sandbox_id: id }), { existed: false });
  step('sandbox/terminate (twice: idempotent)');

  assert.deepEqual(await conn.sendRequest('shutdown'), {});
  const exit = await exited;
  assert.deepEqual(exit, { code: 0, signal: null }, 'the resident exits 0 after shutdown');
  step('shutdown');
}

const timer = setTimeout(() => fail(new Error(`no result within ${LIMIT_MS} ms`)), LIMIT_MS);

function fail(err) {
  console.error(`FAIL: ${err && err.stack ? err.stack : err}`);
  console.error(`resident log tail:\n${logs}`);
  child.kill('SIGKILL');
  fs.rmSync(stateDir, { recursive: true, force: true });
  process.exit(1);
}

session().then(() => {
  clearTimeout(timer);
  conn.dispose();
  fs.rmSync(stateDir, { recursive: true, force: true });
  console.log('PASS');
}, fail);
