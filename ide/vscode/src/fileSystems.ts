// The two file systems that let volume and sandbox files open in ordinary
// editor tabs: resident-store (volumes, read-only) and resident-sandbox
// (a running sandbox's files, read-write). Errors keep their meaning: a
// missing file is FileNotFound, a missing capability is Unavailable.
import * as vscode from 'vscode';
import { Resident, ResidentError } from './resident';
import { Capability, DirEntry, ListDirResult } from './wire';
import { SANDBOX_SCHEME, locate } from './uris';
import { readWhole, requireCapability } from './reads';
import { uploadBytes } from './uploads';

const FILE_TYPES: Record<DirEntry['type'], vscode.FileType> = {
  file: vscode.FileType.File,
  dir: vscode.FileType.Directory,
  symlink: vscode.FileType.SymbolicLink,
  other: vscode.FileType.Unknown,
};

abstract class ResidentFileSystem implements vscode.FileSystemProvider {
  private readonly changed = new vscode.EventEmitter<vscode.FileChangeEvent[]>();
  readonly onDidChangeFile = this.changed.event;

  constructor(protected readonly resident: Resident) {}

  protected abstract list(uri: vscode.Uri): Promise<ListDirResult>;

  watch(): vscode.Disposable {
    return new vscode.Disposable(() => undefined);
  }

  async stat(uri: vscode.Uri): Promise<vscode.FileStat> {
    const where = locate(uri);
    const isRoot = where.path === '' || where.path === '/';
    if (isRoot) return { type: vscode.FileType.Directory, ctime: 0, mtime: 0, size: 0 };
    const parent = uri.with({ path: uri.path.replace(/\/[^/]*\/?$/, '') || '/' });
    const name = uri.path.replace(/\/$/, '').split('/').pop()!;
    const listing = await this.wrap(uri, () => this.list(parent));
    const entry = listing.entries.find((e) => e.name === name);
    if (!entry) throw vscode.FileSystemError.FileNotFound(uri);
    const mtime = Date.parse(entry.mtime) || 0;
    return { type: FILE_TYPES[entry.type] ?? vscode.FileType.Unknown, ctime: mtime, mtime, size: entry.size };
  }

  async readDirectory(uri: vscode.Uri): Promise<[string, vscode.FileType][]> {
    const listing = await this.wrap(uri, () => this.list(uri));
    return listing.entries.map((e) => [e.name, FILE_TYPES[e.type] ?? vscode.FileType.Unknown]);
  }

  readFile(uri: vscode.Uri): Promise<Uint8Array> {
    return this.wrap(uri, () => readWhole(this.resident, uri));
  }

  abstract writeFile(uri: vscode.Uri, content: Uint8Array, options: { create: boolean; overwrite: boolean }): Promise<void>;

  createDirectory(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(`${uri.path}: creating directories is not supported here`);
  }

  delete(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(`${uri.path}: deleting is not supported here`);
  }

  rename(uri: vscode.Uri): void {
    throw vscode.FileSystemError.NoPermissions(`${uri.path}: renaming is not supported here`);
  }

  protected fire(events: vscode.FileChangeEvent[]): void {
    this.changed.fire(events);
  }

  protected limit(): number {
    return this.resident.limits?.max_list_dir_entries ?? 10000;
  }

  /** Maps a resident's error answer to the FileSystemError that means the same. */
  protected async wrap<T>(uri: vscode.Uri, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      if (!(err instanceof ResidentError)) throw err;
      if (err.kind === 'not_found') throw vscode.FileSystemError.FileNotFound(uri);
      if (err.kind === 'unsupported' || err.kind === 'unavailable') throw vscode.FileSystemError.Unavailable(err.message);
      switch (err.reason) {
        case 'no_such_file': throw vscode.FileSystemError.FileNotFound(uri);
        case 'is_directory': throw vscode.FileSystemError.FileIsADirectory(uri);
        case 'not_directory': throw vscode.FileSystemError.FileNotADirectory(uri);
        case 'permission_denied': throw vscode.FileSystemError.NoPermissions(err.message);
        case 'exists': throw vscode.FileSystemError.FileExists(uri);
      }
      throw vscode.FileSystemError.Unavailable(`${err.message} (${err.kind})`);
    }
  }
}

/** Volumes, read-only: resident-store:/VOLUME/PATH. */
export class StoreFileSystem extends ResidentFileSystem {
  protected list(uri: vscode.Uri): Promise<ListDirResult> {
    const where = locate(uri);
    return this.resident.request<ListDirResult>('store/list_dir', { root: where.root, path: where.path, limit: this.limit() });
  }

  writeFile(uri: vscode.Uri): Promise<void> {
    throw vscode.FileSystemError.NoPermissions(`${uri.path}: volumes are read-only here`);
  }
}

/** A running sandbox's files: resident-sandbox:/SANDBOX_ID/ABSOLUTE/PATH. */
export class SandboxFileSystem extends ResidentFileSystem {
  protected list(uri: vscode.Uri): Promise<ListDirResult> {
    requireCapability(this.resident, Capability.sandboxFiles, 'sandbox/list_dir');
    const where = locate(uri);
    return this.resident.request<ListDirResult>('sandbox/list_dir', { sandbox_id: where.root, path: where.path, limit: this.limit() });
  }

  async writeFile(uri: vscode.Uri, content: Uint8Array): Promise<void> {
    const where = locate(uri);
    await this.wrap(uri, () => uploadBytes(this.resident, where.root, where.path, content));
    this.fire([{ type: vscode.FileChangeType.Changed, uri }]);
  }
}

export function registerFileSystems(resident: Resident): vscode.Disposable[] {
  return [
    vscode.workspace.registerFileSystemProvider('resident-store', new StoreFileSystem(resident), { isReadonly: true, isCaseSensitive: true }),
    vscode.workspace.registerFileSystemProvider(SANDBOX_SCHEME, new SandboxFileSystem(resident), { isCaseSensitive: true }),
  ];
}
