// The resident.volumes view: the provider's volumes this install may see,
// expandable into directories and files (store/list_dir). A directory with
// more entries than one listing returns ends in a "more…" entry that lists
// it again with a larger limit, up to the announced max_list_dir_entries.
import * as vscode from 'vscode';
import { Resident, describe } from './resident';
import { Capability, DirEntry, ListDirResult, Volume } from './wire';
import { storeUri } from './uris';
import { openOnClick } from './treeCommands';

export class StoreItem extends vscode.TreeItem {
  constructor(readonly volume: string, readonly relPath: string, readonly entry: DirEntry | undefined) {
    const isDir = !entry || entry.type === 'dir';
    super(entry ? entry.name : volume, isDir ? vscode.TreeItemCollapsibleState.Collapsed : vscode.TreeItemCollapsibleState.None);
    this.resourceUri = storeUri(volume, relPath);
    this.id = this.resourceUri.toString();
    this.contextValue = !entry ? 'store.volume' : entry.type === 'file' ? 'store.file' : `store.${entry.type}`;
    if (!entry) this.iconPath = new vscode.ThemeIcon('database');
    if (entry?.type === 'file') {
      this.description = humanBytes(entry.size);
      this.command = openOnClick(this.resourceUri);
    }
    if (entry?.type === 'symlink') this.description = 'symlink (not followed)';
  }
}

/** "more…": its command takes no arguments (see treeCommands.ts); it lists the selected MoreItem's directory again. */
class MoreItem extends vscode.TreeItem {
  constructor(readonly parent: StoreItem, shown: number) {
    super(`more… (${shown} shown)`, vscode.TreeItemCollapsibleState.None);
    this.id = `${parent.id}#more`;
    this.command = { command: 'resident.moreEntries', title: 'Show more' };
    this.iconPath = new vscode.ThemeIcon('ellipsis');
  }
}

export class VolumeView implements vscode.TreeDataProvider<vscode.TreeItem>, vscode.Disposable {
  private readonly changed = new vscode.EventEmitter<vscode.TreeItem | void>();
  readonly onDidChangeTreeData = this.changed.event;
  readonly view: vscode.TreeView<vscode.TreeItem>;
  private readonly limits = new Map<string, number>(); // directory id → listing limit

  constructor(private readonly resident: Resident) {
    this.view = vscode.window.createTreeView('resident.volumes', { treeDataProvider: this });
  }

  refresh(): void {
    this.changed.fire();
  }

  /** "more…": list the directory again with a limit that grows tenfold, to the announced maximum. */
  showMore(parent: StoreItem): void {
    const max = this.resident.limits?.max_list_dir_entries ?? 10000;
    this.limits.set(parent.id!, Math.min(max, this.limitFor(parent) * 10));
    this.changed.fire(parent);
  }

  /** The directory "more…" acts on: its argument, else the parent of the selected "more…" row. */
  moreTarget(arg: unknown): StoreItem | undefined {
    if (arg instanceof StoreItem) return arg;
    return (this.view.selection.find((item) => item instanceof MoreItem) as MoreItem | undefined)?.parent;
  }

  /** The file a command acts on: its argument, else the view's selection. */
  target(arg: unknown): vscode.Uri | undefined {
    if (arg instanceof vscode.Uri) return arg;
    if (arg instanceof StoreItem) return arg.resourceUri;
    const selected = this.view.selection.find((item) => item instanceof StoreItem) as StoreItem | undefined;
    return selected?.resourceUri;
  }

  getTreeItem(item: vscode.TreeItem): vscode.TreeItem {
    return item;
  }

  async getChildren(parent?: vscode.TreeItem): Promise<vscode.TreeItem[]> {
    if (this.resident.state.kind !== 'ready') {
      this.view.message = `The resident is not running: ${this.resident.describeState()}`;
      return [];
    }
    if (!this.resident.has(Capability.store)) {
      this.view.message = 'This provider has no persistent store.';
      return [];
    }
    try {
      if (!parent) {
        const { volumes } = await this.resident.request<{ volumes: Volume[] }>('store/list_volumes');
        this.view.message = volumes.length ? undefined : 'No volumes: a sandbox created with a volume makes one.';
        return volumes.map((v) => new StoreItem(v.name, '', undefined));
      }
      if (!(parent instanceof StoreItem)) return [];
      const limit = this.limitFor(parent);
      const listing = await this.resident.request<ListDirResult>('store/list_dir', { root: parent.volume, path: parent.relPath, limit });
      const items: vscode.TreeItem[] = sortEntries(listing.entries).map((e) =>
        new StoreItem(parent.volume, [parent.relPath, e.name].filter(Boolean).join('/'), e));
      const max = this.resident.limits?.max_list_dir_entries ?? 10000;
      if (listing.truncated && limit < max) items.push(new MoreItem(parent, listing.entries.length));
      if (listing.truncated && limit >= max) items.push(new vscode.TreeItem(`(more entries than the resident lists: ${max})`));
      return items;
    } catch (err) {
      void vscode.window.showErrorMessage(`Resident: cannot list ${parent?.label ?? 'volumes'}: ${describe(err)}`);
      return [];
    }
  }

  private limitFor(item: StoreItem): number {
    return this.limits.get(item.id!) ?? this.resident.limits?.default_list_dir_entries ?? 1000;
  }

  dispose(): void {
    this.view.dispose();
    this.changed.dispose();
  }
}

export function sortEntries(entries: DirEntry[]): DirEntry[] {
  return [...entries].sort((a, b) => (a.type === 'dir' ? 0 : 1) - (b.type === 'dir' ? 0 : 1) || a.name.localeCompare(b.name));
}

export function humanBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  const units = ['KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let i = -1;
  do { v /= 1024; i++; } while (v >= 1024 && i < units.length - 1);
  return `${v.toFixed(1)} ${units[i]}`;
}
