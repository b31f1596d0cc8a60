// The detached shells this window's terminals follow, kept in the
// workspace's state so that the next session (a window reload, an editor
// restart) re-attaches them, and so does the next resident of this window
// (Restart after a crash) for the terminals still open here. A terminal the
// user closes ends its shell; one that goes with the window stays listed.
import * as vscode from 'vscode';
import { Resident, describe } from './resident';
import type { Reattach } from './terminal';

const KEY = 'resident.detachedTerminals';

interface Entry {
  sandboxId: string;
  execId: string;
}

/** What the registry needs of an open terminal's shell. */
export interface FollowedShell {
  /** The resident died while following it; the shell goes on in the sandbox. */
  readonly lost: boolean;
  /** Where following it again resumes (exec/attach's offset). */
  readonly offset: number;
  /** Follows it again, on the new resident (running: whether it still runs). */
  resume(running: boolean): void;
  /** It cannot be followed again: the terminal says why and ends. */
  abandon(reason: string): void;
}

interface Open extends Entry {
  shell: FollowedShell;
}

export class TerminalRegistry implements vscode.Disposable {
  private readonly terminals = new Map<vscode.Terminal, Open>();
  private readonly subscription: vscode.Disposable;

  constructor(private readonly state: vscode.Memento, private readonly resident: Resident, private readonly log: vscode.OutputChannel) {
    this.subscription = vscode.window.onDidCloseTerminal((terminal) => this.closed(terminal));
  }

  track(terminal: vscode.Terminal, sandboxId: string, execId: string, detached: boolean, shell: FollowedShell): void {
    if (!detached) return;
    this.terminals.set(terminal, { sandboxId, execId, shell });
    const entries = this.entries().filter((e) => e.execId !== execId);
    void this.state.update(KEY, [...entries, { sandboxId, execId }]);
  }

  forget(execId: string): void {
    void this.state.update(KEY, this.entries().filter((e) => e.execId !== execId));
  }

  /**
   * The detached shells of earlier sessions: each gets its terminal back,
   * with its scroll-back; one that ended meanwhile too, to show how it ended.
   * A terminal still open in this window whose shell was lost with the last
   * resident (a crash, then Restart) follows it again in place, from where
   * it was. One its sandbox no longer lists is forgotten.
   */
  async reattach(open: (sandboxId: string, attach: Reattach) => void): Promise<void> {
    for (const entry of this.entries()) {
      const here = [...this.terminals.values()].find((e) => e.execId === entry.execId);
      if (here && !here.shell.lost) continue; // this resident follows it already
      try {
        const { execs } = await this.resident.request<{ execs: { exec_id: string; running: boolean; exit_code?: number }[] }>('sandbox/list_execs', { sandbox_id: entry.sandboxId });
        const exec = execs.find((e) => e.exec_id === entry.execId);
        const ended = exec && !exec.running ? ` (it ended with exit code ${exec.exit_code ?? 'unknown'})` : '';
        if (exec && here) {
          this.log.appendLine(`re-attaching terminal ${entry.execId} in ${entry.sandboxId} after a restart, from offset ${here.shell.offset}${ended}`);
          here.shell.resume(exec.running);
          continue;
        }
        if (exec) {
          this.log.appendLine(`re-attaching terminal ${entry.execId} in ${entry.sandboxId}${ended}`);
          open(entry.sandboxId, { execId: entry.execId, running: exec.running });
          continue;
        }
        this.log.appendLine(`terminal ${entry.execId} in ${entry.sandboxId} is gone: not re-attached`);
        here?.shell.abandon('the shell is gone from its sandbox');
      } catch (err) {
        this.log.appendLine(`cannot re-attach ${entry.execId}: ${describe(err)}`);
        here?.shell.abandon(`cannot re-attach the shell: ${describe(err)}`);
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
