// The detached shells this window's terminals follow, kept in the
// workspace's state so that the next session (a window reload, an editor
// restart) re-attaches them. A terminal the user closes ends its shell; one
// that goes with the window stays listed.
import * as vscode from 'vscode';
import { Resident, describe } from './resident';

const KEY = 'resident.detachedTerminals';

interface Entry {
  sandboxId: string;
  execId: string;
}

export class TerminalRegistry implements vscode.Disposable {
  private readonly terminals = new Map<vscode.Terminal, Entry>();
  private readonly subscription: vscode.Disposable;

  constructor(private readonly state: vscode.Memento, private readonly resident: Resident, private readonly log: vscode.OutputChannel) {
    this.subscription = vscode.window.onDidCloseTerminal((terminal) => this.closed(terminal));
  }

  track(terminal: vscode.Terminal, sandboxId: string, execId: string, detached: boolean): void {
    if (!detached) return;
    this.terminals.set(terminal, { sandboxId, execId });
    const entries = this.entries().filter((e) => e.execId !== execId);
    void this.state.update(KEY, [...entries, { sandboxId, execId }]);
  }

  forget(execId: string): void {
    void this.state.update(KEY, this.entries().filter((e) => e.execId !== execId));
  }

  /** The detached shells of earlier sessions that still run: each gets its terminal back. */
  async reattach(open: (sandboxId: string, execId: string) => void): Promise<void> {
    for (const entry of this.entries()) {
      if ([...this.terminals.values()].some((e) => e.execId === entry.execId)) continue;
      try {
        const { execs } = await this.resident.request<{ execs: { exec_id: string; running: boolean }[] }>('sandbox/list_execs', { sandbox_id: entry.sandboxId });
        if (execs.some((e) => e.exec_id === entry.execId && e.running)) {
          this.log.appendLine(`re-attaching terminal ${entry.execId} in ${entry.sandboxId}`);
          open(entry.sandboxId, entry.execId);
          continue;
        }
      } catch (err) {
        this.log.appendLine(`cannot re-attach ${entry.execId}: ${describe(err)}`);
      }
      this.forget(entry.execId);
    }
  }

  private closed(terminal: vscode.Terminal): void {
    const entry = this.terminals.get(terminal);
    if (!entry) return;
    this.terminals.delete(terminal);
    if (terminal.exitStatus?.reason === vscode.TerminalExitReason.Shutdown) return; // the window went: keep it
    this.forget(entry.execId);
    this.resident.request('exec/kill', { exec_id: entry.execId, sandbox_id: entry.sandboxId }).catch(() => undefined);
  }

  private entries(): Entry[] {
    return this.state.get<Entry[]>(KEY, []);
  }

  dispose(): void {
    this.subscription.dispose();
  }
}
