// Streamed reads of one file, from a volume (store/read_file) or from a
// running sandbox (sandbox/read_file): the chunks go to a sink as they
// arrive, and the answer's sha256 is checked against the bytes received, so
// a transfer is never silently short.
import * as crypto from 'node:crypto';
import * as vscode from 'vscode';
import { Resident, ResidentError } from './resident';
import { Capability, ReadFileResult } from './wire';
import { Location, SANDBOX_SCHEME, locate } from './uris';

export interface ReadOutcome extends ReadFileResult {}

export async function streamFile(resident: Resident, uri: vscode.Uri, sink: (chunk: Buffer) => void,
  token?: vscode.CancellationToken): Promise<ReadOutcome> {
  const where = locate(uri);
  const streamId = resident.notifications.nextId('read');
  const hash = crypto.createHash('sha256');
  let received = 0;
  const route = resident.notifications.routeStream(streamId, (chunk) => {
    hash.update(chunk);
    received += chunk.length;
    sink(chunk);
  });
  try {
    const [method, params] = readRequest(resident, uri.scheme, where, streamId);
    const result = await resident.request<ReadFileResult>(method, params, token);
    const digest = hash.digest('hex');
    if (result.size !== received || result.sha256 !== digest) {
      throw new ResidentError(`the transfer of ${uri.path} is damaged: got ${received} bytes (sha256 ${digest}), ` +
        `the resident sent ${result.size} (sha256 ${result.sha256})`, 'transient', 0);
    }
    return result;
  } finally {
    route.dispose();
  }
}

export async function readWhole(resident: Resident, uri: vscode.Uri): Promise<Uint8Array> {
  const chunks: Buffer[] = [];
  await streamFile(resident, uri, (c) => chunks.push(c));
  return Buffer.concat(chunks);
}

function readRequest(resident: Resident, scheme: string, where: Location, streamId: string): [string, object] {
  if (scheme === SANDBOX_SCHEME) {
    requireCapability(resident, Capability.sandboxFiles, 'sandbox/read_file');
    return ['sandbox/read_file', { sandbox_id: where.root, path: where.path, stream_id: streamId }];
  }
  requireCapability(resident, Capability.store, 'store/read_file');
  return ['store/read_file', { root: where.root, path: where.path, stream_id: streamId }];
}

/** Refuses, visibly, an operation the resident did not announce. */
export function requireCapability(resident: Resident, capability: string, operation: string): void {
  if (!resident.has(capability)) {
    throw new ResidentError(`this resident (${resident.describeState()}) does not announce "${capability}", ` +
      `so ${operation} is not available; a newer resident has it`, 'unsupported', 0);
  }
}
