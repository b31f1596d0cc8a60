// Writes into a running sandbox. A file up to max_file_bytes goes in one
// sandbox/write_file; a larger one is streamed (write_file with a stream_id,
// then upload/data chunks, each awaited: the resident's answers are the
// backpressure) where the resident announces streamed uploads, and is
// refused with the reason where it does not. A local file is read chunk by
// chunk, never whole.
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { Resident, ResidentError } from './resident';
import { Capability, toBase64 } from './wire';
import { requireCapability } from './reads';

const CHUNK_BYTES = 256 * 1024; // far under max_frame_bytes once base64'd (protocol §10.3)

export async function uploadBytes(resident: Resident, sandboxId: string, path: string, content: Uint8Array): Promise<void> {
  requireCapability(resident, Capability.writeFile, 'sandbox/write_file');
  if (content.byteLength <= maxFileBytes(resident)) {
    await resident.request('sandbox/write_file', { sandbox_id: sandboxId, path, data: toBase64(content) });
    return;
  }
  await streamUpload(resident, sandboxId, path, content.byteLength, chunksOf(content));
}

/** Uploads a local file; progress gets each chunk's size. */
export async function uploadLocalFile(resident: Resident, sandboxId: string, path: string, localPath: string,
  progress: (bytes: number) => void, token: vscode.CancellationToken): Promise<number> {
  requireCapability(resident, Capability.writeFile, 'sandbox/write_file');
  const size = (await fs.promises.stat(localPath)).size;
  if (size <= maxFileBytes(resident)) {
    const content = await fs.promises.readFile(localPath); // at most max_file_bytes
    await resident.request('sandbox/write_file', { sandbox_id: sandboxId, path, data: toBase64(content) }, token);
    progress(size);
    return size;
  }
  const reader = fs.createReadStream(localPath, { highWaterMark: CHUNK_BYTES });
  try {
    await streamUpload(resident, sandboxId, path, size, reader as AsyncIterable<Buffer>, progress, token);
  } finally {
    reader.destroy();
  }
  return size;
}

async function streamUpload(resident: Resident, sandboxId: string, path: string, size: number,
  chunks: AsyncIterable<Uint8Array> | Iterable<Uint8Array>, progress?: (bytes: number) => void,
  token?: vscode.CancellationToken): Promise<void> {
  if (!resident.has(Capability.upload)) {
    throw new ResidentError(`${path}: ${size} bytes is over this resident's ${maxFileBytes(resident)} byte limit for one ` +
      `write, and it does not announce "${Capability.upload}" (streamed uploads)`, 'quota', 0);
  }
  const streamId = resident.notifications.nextId('upload');
  const done = resident.request('sandbox/write_file', { sandbox_id: sandboxId, path, stream_id: streamId }, token);
  const failed = done.then(() => undefined, (err) => err as Error);
  for await (const chunk of chunks) {
    await resident.request('upload/data', { stream_id: streamId, data: toBase64(chunk) }, token);
    progress?.(chunk.byteLength);
  }
  await resident.request('upload/data', { stream_id: streamId, eof: true }, token);
  const err = await failed;
  if (err) throw err;
}

function* chunksOf(content: Uint8Array): Iterable<Uint8Array> {
  for (let at = 0; at < content.byteLength; at += CHUNK_BYTES) yield content.subarray(at, at + CHUNK_BYTES);
}

function maxFileBytes(resident: Resident): number {
  return resident.limits?.max_file_bytes ?? 8 * 1024 * 1024;
}
