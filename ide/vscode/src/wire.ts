// The parts of resident's wire protocol (docs/protocol.md) this extension
// speaks: method names, and the params and results it reads. Bytes travel as
// standard padded base64; lists are never null.

export const PROTOCOL_VERSION = 1;

export interface Capabilities {
  store?: boolean;
  write_file?: boolean;
  stdin?: boolean;
  isolation?: boolean;
  image_pull?: boolean;
  [name: string]: boolean | undefined;
}

export interface Limits {
  max_file_bytes: number;
  max_list_dir_entries: number;
  default_list_dir_entries: number;
  [name: string]: number;
}

export interface InitializeResult {
  resident_version: string;
  protocol_version: number;
  provider: { name: string; version: string };
  capabilities: Capabilities;
  limits: Limits;
  error_kinds: string[];
  owner_tag: string;
}

export interface Sandbox {
  sandbox_id: string;
  tags: Record<string, string>;
  created_at: string;
  state: string;
  image?: string;
}

export interface DirEntry {
  name: string;
  type: 'file' | 'dir' | 'symlink' | 'other';
  size: number;
  mtime: string;
}

export interface ListDirResult {
  entries: DirEntry[];
  truncated: boolean;
}

export interface ReadFileResult {
  size: number;
  sha256: string;
  redacted: boolean;
}

export interface ExecResult {
  exit_code: number;
  timed_out: boolean;
  killed: boolean;
  signal?: string;
  oom_killed: boolean;
}

export interface Volume {
  name: string;
  created_at: string;
}

/** sandbox/changed (after sandbox/watch). */
export interface SandboxChange {
  event: 'created' | 'state' | 'terminated' | 'exec_started' | 'exec_ended';
  sandbox_id: string;
  state?: string;
  exec_id?: string;
  exit_code?: number;
}

export interface PullProgress {
  image: string;
  status: string;
  layer?: string;
  phase?: string;
  current?: number;
  total?: number;
}

export interface SpecVolume {
  name: string;
  path: string;
  read_only?: boolean;
}

export interface SandboxSpec {
  image?: string;
  network?: string;
  read_only_root?: boolean;
  lifetime_s?: number;
  require_isolation?: boolean;
  volumes?: SpecVolume[];
}

/** The operations a resident may lack; each is announced as a capability. */
export const Capability = {
  store: 'store',
  writeFile: 'write_file',
  stdin: 'stdin',
  imagePull: 'image_pull',
  // Issue 14 (files and terminals) and issue 12 (detached execs).
  sandboxFiles: 'sandbox_files', // sandbox/read_file and sandbox/list_dir
  upload: 'upload', // sandbox/write_file with a stream_id, fed by upload/data
  tty: 'tty', // sandbox/exec tty, exec/resize
  watch: 'watch', // sandbox/watch, then sandbox/changed
  detach: 'detach',
} as const;

export function toBase64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}

export function fromBase64(data: string): Buffer {
  return Buffer.from(data, 'base64');
}
