// Commands on sandboxes: create (image and options from a quick pick, pull
// progress shown, cancellable), terminate (confirmed), and import a local
// file into one.
import * as path from 'node:path';
import * as vscode from 'vscode';
import { Resident, describe } from './resident';
import { Capability, Sandbox, SandboxSpec } from './wire';
import { uploadLocalFile } from './uploads';
import { humanBytes } from './volumeView';
import { SANDBOX_SCHEME, locate } from './uris';

const LAST_IMAGE_KEY = 'resident.lastImage';

interface OptionItem extends vscode.QuickPickItem {
  apply: (spec: SandboxSpec) => void;
}

export async function createSandbox(resident: Resident, state: vscode.Memento, log: vscode.OutputChannel): Promise<string | undefined> {
  const cfg = vscode.workspace.getConfiguration('resident');
  const image = await vscode.window.showInputBox({
    title: 'Create sandbox (1/2): image',
    prompt: resident.has(Capability.imagePull) ? 'The image to run; a missing one is pulled.' : 'The image to run (the local provider records it and runs on the host\'s system).',
    value: state.get<string>(LAST_IMAGE_KEY) || cfg.get<string>('defaultImage', '') || '',
    ignoreFocusOut: true,
  });
  if (image === undefined) return undefined;
  const options: OptionItem[] = [
    { label: 'No network', description: 'spec.network = "none"', apply: (s) => { s.network = 'none'; } },
    { label: 'Read-only root', description: 'spec.read_only_root', apply: (s) => { s.read_only_root = true; } },
    { label: 'Stop after one hour', description: 'spec.lifetime_s = 3600', apply: (s) => { s.lifetime_s = 3600; } },
    { label: 'Require isolation', description: 'refuse unless the provider isolates', apply: (s) => { s.require_isolation = true; } },
  ];
  const picked = await vscode.window.showQuickPick(options, {
    title: 'Create sandbox (2/2): options (Enter for none)',
    canPickMany: true,
    ignoreFocusOut: true,
  });
  if (picked === undefined) return undefined;
  const spec: SandboxSpec = {};
  if (image) spec.image = image;
  for (const option of picked) option.apply(spec);
  await state.update(LAST_IMAGE_KEY, image);
  return vscode.window.withProgress({
    location: vscode.ProgressLocation.Notification,
    title: `Creating a sandbox${image ? ` of ${image}` : ''}`,
    cancellable: true,
  }, async (progress, token) => {
    const pulls = resident.notifications.onPullProgress((p) => {
      if (p.image === image) progress.report({ message: `pulling: ${p.layer ? `${p.layer} ` : ''}${p.phase ?? p.status}` });
    });
    try {
      const { sandbox_id } = await resident.request<{ sandbox_id: string }>('sandbox/create', { spec, tags: { 'created-by': 'vscode' } }, token);
      log.appendLine(`created sandbox ${sandbox_id}${image ? ` of ${image}` : ''}`);
      return sandbox_id;
    } catch (err) {
      const message = token.isCancellationRequested ? 'cancelled' : describe(err);
      void vscode.window.showErrorMessage(`Resident: the sandbox was not created: ${message}`);
      return undefined;
    } finally {
      pulls.dispose();
    }
  });
}

export async function terminateSandbox(resident: Resident, sandbox: Sandbox, log: vscode.OutputChannel): Promise<boolean> {
  const answer = await vscode.window.showWarningMessage(
    `Terminate sandbox ${sandbox.sandbox_id.slice(0, 16)}? Its processes stop and its files are removed.`,
    { modal: true }, 'Terminate');
  if (answer !== 'Terminate') return false;
  try {
    const { existed } = await resident.request<{ existed: boolean }>('sandbox/terminate', { sandbox_id: sandbox.sandbox_id });
    log.appendLine(`terminated sandbox ${sandbox.sandbox_id}${existed ? '' : ' (it was already gone)'}`);
    return true;
  } catch (err) {
    void vscode.window.showErrorMessage(`Resident: terminate failed: ${describe(err)}`);
    return false;
  }
}

/** Import: a local file into a sandbox, at a path the user confirms. */
export async function importFile(resident: Resident, sandboxId: string, targetDir: string | undefined, log: vscode.OutputChannel): Promise<void> {
  const picked = await vscode.window.showOpenDialog({ canSelectMany: false, openLabel: 'Import', title: 'Import a file into the sandbox' });
  if (!picked?.length) return;
  const local = picked[0].fsPath;
  const destination = await vscode.window.showInputBox({
    title: `Destination of ${path.basename(local)} in ${sandboxId.slice(0, 16)}`,
    prompt: 'Path in the sandbox (relative: in its work directory)',
    value: targetDir ? path.posix.join(targetDir, path.basename(local)) : path.basename(local),
  });
  if (!destination) return;
  await vscode.window.withProgress({ location: vscode.ProgressLocation.Notification, title: `Importing ${path.basename(local)}`, cancellable: true },
    async (progress, token) => {
      let sent = 0;
      try {
        const size = await uploadLocalFile(resident, sandboxId, destination, local, (n) => {
          sent += n;
          progress.report({ message: humanBytes(sent) });
        }, token);
        log.appendLine(`imported ${local} into ${sandboxId}:${destination} (${size} bytes)`);
        void vscode.window.showInformationMessage(`Imported ${path.basename(local)} (${humanBytes(size)}).`);
      } catch (err) {
        void vscode.window.showErrorMessage(`Import failed: ${token.isCancellationRequested ? 'cancelled' : describe(err)}`);
      }
    });
}

/** The directory an explorer context gives Import, or undefined. */
export function sandboxDirOf(arg: unknown): { sandboxId: string; dir: string } | undefined {
  if (arg instanceof vscode.Uri && arg.scheme === SANDBOX_SCHEME) {
    const where = locate(arg);
    return { sandboxId: where.root, dir: where.path };
  }
  return undefined;
}
