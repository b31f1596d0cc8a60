// The resident.sandboxes view: the sandboxes this install owns, with their
// image, state and tags. It follows sandbox/watch where the resident has it;
// without it the view says so and offers a Refresh button.
import * as vscode from 'vscode';
import { Resident, describe } from './resident';
import { Capability, Sandbox } from './wire';
import { SANDBOX_SCHEME, sandboxUri } from './uris';
import { openOnClick } from './treeCommands';

export class SandboxItem extends vscode.TreeItem {
  constructor(readonly sandbox: Sandbox, browsable: boolean) {
    super(sandbox.sandbox_id.slice(0, 16), browsable ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    this.id = sandbox.sandbox_id;
    this.description = [sandbox.image, sandbox.state].filter(Boolean).join(' · ');
    const tags = Object.entries(sandbox.tags).map(([k, v]) => `${k}=${v}`).join('\n');
    this.tooltip = new vscode.MarkdownString(`**${sandbox.sandbox_id}**\n\n` +
      `image: ${sandbox.image ?? '(none)'}  \nstate: ${sandbox.state}  \ncreated: ${sandbox.created_at}\n\n` +
      '```\n' + tags + '\n```');
    this.contextValue = `sandbox.${sandbox.state}`;
    this.iconPath = new vscode.ThemeIcon(sandbox.state === 'running' ? 'vm-running' : 'vm-outline');
  }
}

/** A file or directory of a running sandbox (resident-sandbox:), listed through the file system provider. */
export class SandboxFileItem extends vscode.TreeItem {
  constructor(readonly uri: vscode.Uri, name: string, readonly isDir: boolean) {
    super(name, isDir ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    this.resourceUri = uri;
    this.id = uri.toString();
    this.contextValue = isDir ? 'sandbox.dir' : 'sandbox.file';
    if (!isDir) this.command = openOnClick(uri);
  }
}

class NoticeItem extends vscode.TreeItem {
  constructor(label: string, command?: vscode.Command) {
    super(label, vscode.TreeItemCollapsibleState.None);
    this.command = command;
    this.iconPath = new vscode.ThemeIcon(command ? 'debug-restart' : 'info');
  }
}

export class SandboxView implements vscode.TreeDataProvider<vscode.TreeItem>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<void>();
  readonly onDidChangeTreeData = this.changed.event;
  readonly view: vscode.TreeView<vscode.TreeItem>;
  private sandboxes: Sandbox[] = [];

  constructor(private readonly resident: Resident) {
    this.view = vscode.window.createTreeView('resident.sandboxes', { treeDataProvider: this, showCollapseAll: false });
  }

  refresh(): void {
    this.changed.fire();
  }

  /** The sandboxes the view shows now. */
  get current(): readonly Sandbox[] {
    return this.sandboxes;
  }

  /** The sandbox a command acts on: its argument, else the view's selection. */
  target(arg: unknown): Sandbox | undefined {
    if (arg instanceof SandboxItem) return arg.sandbox;
    if (typeof arg === 'string') return this.sandboxes.find((s) => s.sandbox_id === arg);
    const selected = this.view.selection.find((item) => item instanceof SandboxItem) as SandboxItem | undefined;
    return selected?.sandbox;
  }

  getTreeItem(item: vscode.TreeItem): vscode.TreeItem {
    return item;
  }

  /** The sandbox file a command acts on: its argument, else the view's selection. */
  fileTarget(arg: unknown): vscode.Uri | undefined {
    if (arg instanceof vscode.Uri && arg.scheme === SANDBOX_SCHEME) return arg;
    if (arg instanceof SandboxFileItem) return arg.uri;
    const selected = this.view.selection.find((item) => item instanceof SandboxFileItem) as SandboxFileItem | undefined;
    return selected?.uri;
  }

  async getChildren(parent?: vscode.TreeItem): Promise<vscode.TreeItem[]> {
    if (parent instanceof SandboxItem) return this.files(sandboxUri(parent.sandbox.sandbox_id, '/'));
    if (parent instanceof SandboxFileItem) return this.files(parent.uri);
    if (parent) return [];
    const state = this.resident.state;
    if (state.kind === 'starting') {
      this.view.message = 'Starting the resident…';
      return [];
    }
    if (state.kind !== 'ready') {
      this.view.message = `The resident is not running: ${this.resident.describeState()}`;
      // Expired credentials need new ones: a restart would only expire again.
      if (state.kind === 'exited' && state.credentialsExpired) {
        return [new NoticeItem('Sign in again', { command: 'resident.signInAgain', title: 'Sign In Again' })];
      }
      return [new NoticeItem('Restart the resident', { command: 'resident.restart', title: 'Restart' })];
    }
    try {
      const result = await this.resident.request<{ sandboxes: Sandbox[] }>('sandbox/list_owned');
      this.sandboxes = result.sandboxes;
    } catch (err) {
      this.view.message = `Cannot list sandboxes: ${describe(err)}`;
      return [];
    }
    const live = this.resident.has(Capability.watch);
    const parts = [];
    if (this.sandboxes.length === 0) parts.push('No sandboxes yet: create one with +.');
    if (!live) parts.push('Live updates are off (this resident has no sandbox/watch): use Refresh.');
    this.view.message = parts.length ? parts.join(' ') : undefined;
    const browsable = this.resident.has(Capability.sandboxFiles);
    return this.sandboxes.map((s) => new SandboxItem(s, browsable && s.state === 'running'));
  }

  // A directory of a sandbox, directories first, through resident-sandbox:.
  private async files(dir: vscode.Uri): Promise<vscode.TreeItem[]> {
    try {
      const entries = await vscode.workspace.fs.readDirectory(dir);
      entries.sort(([a, ta], [b, tb]) => (tb & vscode.FileType.Directory) - (ta & vscode.FileType.Directory) || a.localeCompare(b));
      return entries.map(([name, type]) => new SandboxFileItem(vscode.Uri.joinPath(dir, name), name, (type & vscode.FileType.Directory) !== 0));
    } catch (err) {
      void vscode.window.showErrorMessage(`Resident: cannot list ${dir.path}: ${describe(err)}`);
      return [];
    }
  }

  dispose(): void {
    this.view.dispose();
    this.changed.dispose();
  }
}
