// The settings that start a resident, read in one place. The install id and
// the tag prefix decide which sandboxes and volumes are this editor's, so
// they are shown in the Output channel: residentctl and other hosts that pass
// the same values work on the same sandboxes.
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as crypto from 'node:crypto';
import * as vscode from 'vscode';

const INSTALL_ID_KEY = 'resident.installId';

export interface LaunchSettings {
  binary: string;
  provider: string;
  dockerHost: string;
  stateDir: string;
  installId: string;
  tagPrefix: string;
  logLevel: string;
  allowVolumes: string[];
}

export function launchSettings(context: vscode.ExtensionContext): LaunchSettings {
  const cfg = vscode.workspace.getConfiguration('resident');
  return {
    binary: residentBinary(context, cfg.get<string>('path', '')),
    provider: cfg.get<string>('provider', 'local') || 'local',
    dockerHost: cfg.get<string>('dockerHost', ''),
    stateDir: cfg.get<string>('stateDir', ''),
    installId: cfg.get<string>('installId', '') || stableInstallId(context),
    tagPrefix: cfg.get<string>('tagPrefix', ''),
    logLevel: cfg.get<string>('logLevel', 'info') || 'info',
    allowVolumes: cfg.get<string[]>('allowVolumes', []),
  };
}

/** The resident's argv after the binary, from the settings. */
export function residentArgs(s: LaunchSettings): string[] {
  const args = ['--provider', s.provider, '--log-level', s.logLevel];
  if (s.stateDir) args.push('--state-dir', s.stateDir);
  for (const v of s.allowVolumes) args.push('--allow-volume', v);
  return args;
}

/** The residentctl command line that sees the same sandboxes. */
export function residentctlEquivalent(s: LaunchSettings): string {
  const parts = ['residentctl', '--provider', s.provider, '--install-id', s.installId];
  if (s.stateDir) parts.push('--state-dir', s.stateDir);
  return parts.join(' ') + ' ls';
}

// resident.path, else the binary shipped in the extension, else "resident"
// on PATH (spawn resolves it).
function residentBinary(context: vscode.ExtensionContext, configured: string): string {
  if (configured) return configured;
  const shipped = path.join(context.extensionPath, 'bin', 'resident');
  if (!fs.existsSync(shipped)) return 'resident';
  // A .vsix unpacker may drop the mode bits: the binary must stay runnable.
  if ((fs.statSync(shipped).mode & 0o111) === 0) fs.chmodSync(shipped, 0o755);
  return shipped;
}

// Made once per editor profile and kept, so sandboxes made in one session
// are still this editor's in the next.
function stableInstallId(context: vscode.ExtensionContext): string {
  let id = context.globalState.get<string>(INSTALL_ID_KEY);
  if (!id) {
    id = `vscode-${crypto.randomBytes(6).toString('hex')}`;
    void context.globalState.update(INSTALL_ID_KEY, id);
  }
  return id;
}
