// The URIs of the two file systems. The first path segment names the volume
// or the sandbox (kept out of the authority, which editors may lower-case);
// the rest is the path inside it.
import * as vscode from 'vscode';

export const STORE_SCHEME = 'resident-store';
export const SANDBOX_SCHEME = 'resident-sandbox';

export interface Location {
  /** The volume name, or the sandbox id. */
  root: string;
  /** For a volume: relative, "" for its root. For a sandbox: absolute, "/" for its root. */
  path: string;
}

export function storeUri(volume: string, relPath: string): vscode.Uri {
  return vscode.Uri.from({ scheme: STORE_SCHEME, path: '/' + [volume, relPath].filter(Boolean).join('/') });
}

export function sandboxUri(sandboxId: string, absPath: string): vscode.Uri {
  return vscode.Uri.from({ scheme: SANDBOX_SCHEME, path: `/${sandboxId}${absPath.startsWith('/') ? '' : '/'}${absPath}` });
}

export function locate(uri: vscode.Uri): Location {
  const segments = uri.path.split('/').filter(Boolean);
  const root = segments.shift() ?? '';
  const rest = segments.join('/');
  return { root, path: uri.scheme === SANDBOX_SCHEME ? '/' + rest : rest };
}

export function baseName(uri: vscode.Uri): string {
  const segments = uri.path.split('/').filter(Boolean);
  return segments[segments.length - 1] ?? '';
}
