// "Download": saves a volume or sandbox file to the local disk, streamed to
// a .part file beside the target and renamed into place once the bytes
// match the resident's sha256, with a cancellable progress notification.
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { Resident, describe } from './resident';
import { streamFile } from './reads';
import { baseName } from './uris';
import { humanBytes } from './volumeView';

export async function download(resident: Resident, log: vscode.OutputChannel, source: vscode.Uri): Promise<void> {
  const folder = vscode.workspace.getConfiguration('resident').get<string>('downloadDirectory', '') || path.join(os.homedir(), 'Downloads');
  await fs.promises.mkdir(folder, { recursive: true }).catch(() => undefined); // the dialog proposes it
  const target = await vscode.window.showSaveDialog({
    defaultUri: vscode.Uri.file(path.join(folder, baseName(source))),
    saveLabel: 'Download',
    title: `Download ${source.path}`,
  });
  if (!target) return;
  let size = 0;
  try {
    size = (await vscode.workspace.fs.stat(source)).size;
  } catch {
    // the size only drives the progress bar
  }
  const part = `${target.fsPath}.part`;
  await fs.promises.mkdir(path.dirname(part), { recursive: true });
  await vscode.window.withProgress({
    location: vscode.ProgressLocation.Notification,
    title: `Downloading ${baseName(source)}`,
    cancellable: true,
  }, async (progress, token) => {
    const out = fs.createWriteStream(part);
    const closed = new Promise<void>((resolve, reject) => { out.on('finish', resolve); out.on('error', reject); });
    let received = 0;
    let reported = 0;
    try {
      const result = await streamFile(resident, source, (chunk) => {
        out.write(chunk);
        received += chunk.length;
        const pct = size ? (received / size) * 100 : 0;
        progress.report({ message: `${humanBytes(received)}${size ? ` of ${humanBytes(size)}` : ''}`, increment: pct - reported });
        reported = pct;
      }, token);
      out.end();
      await closed;
      await fs.promises.rename(part, target.fsPath);
      log.appendLine(`downloaded ${source.toString()} to ${target.fsPath}: ${result.size} bytes, sha256 ${result.sha256}` +
        (result.redacted ? ', secrets masked' : ''));
      const note = result.redacted ? ' Secrets in it were masked as [REDACTED].' : '';
      void vscode.window.showInformationMessage(`Downloaded ${baseName(source)} (${humanBytes(result.size)}).${note}`);
    } catch (err) {
      out.destroy();
      await fs.promises.rm(part, { force: true });
      const message = token.isCancellationRequested ? 'cancelled' : describe(err);
      log.appendLine(`download of ${source.toString()} failed: ${message}`);
      void vscode.window.showErrorMessage(`Download of ${baseName(source)} failed: ${message}`);
    }
  });
}
