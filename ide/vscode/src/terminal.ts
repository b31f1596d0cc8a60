// resident.openTerminal: an integrated terminal on a shell in a sandbox (a
// Pseudoterminal over one exec). On a resident with the tty capability the
// shell runs on a pseudo-terminal: keys go through raw, resize reaches it
// (exec/resize), Ctrl-C is SIGINT from its own terminal. Without tty the
// shell reads a plain pipe, and the terminal says so in its first line: it
// edits lines locally (LineDiscipline), and Ctrl-C can only end the shell.
// With detach the shell is a detached exec: a window reload or an editor
// restart re-attaches it (exec/attach replays its scroll-back) instead of
// killing it; closing the terminal by hand ends it. A resident that dies
// under an open terminal leaves its detached shell running: the terminal
// says so and, once Restart has brought a new resident, follows the shell
// again from the offset it had shown (nothing twice, nothing skipped).
// Without detach the terminal says that the shell ends with the window.
import { TextDecoder } from 'node:util';
import * as vscode from 'vscode';
import { Resident, describe } from './resident';
import { Capability, ExecResult, toBase64 } from './wire';
import { LineDiscipline, toTerminalLines } from './lineDiscipline';
import { FollowedShell, TerminalRegistry } from './terminalRegistry';
import { isTerminalReport } from './terminalReports';

const SHELL = ['sh', '-c', 'if command -v bash >/dev/null 2>&1; then exec bash -i; else exec sh -i; fi'];

/** A detached shell a past session started (a window reload, an editor restart), to follow again. */
export interface Reattach {
  execId: string;
  /** false: it ended while no window followed it; the terminal shows its scroll-back and its exit code. */
  running: boolean;
}

/** Opens a terminal on a new shell, or (attach) on a detached one a past session started. */
export function openTerminal(resident: Resident, registry: TerminalRegistry, sandboxId: string, attach?: Reattach): vscode.Terminal {
  const pty = new SandboxPty(resident, registry, sandboxId, attach);
  const terminal = vscode.window.createTerminal({ name: `Resident ${sandboxId.slice(0, 12)}`, pty, iconPath: new vscode.ThemeIcon('vm') });
  registry.track(terminal, sandboxId, pty.execId, pty.detached, pty);
  terminal.show();
  return terminal;
}

class SandboxPty implements vscode.Pseudoterminal, FollowedShell {
  private readonly written = new vscode.EventEmitter<string>();
  private readonly closed = new vscode.EventEmitter<number | void>();
  readonly onDidWrite = this.written.event;
  readonly onDidClose = this.closed.event;
  readonly execId: string;
  readonly detached: boolean;
  private readonly tty: boolean;
  private readonly following = new vscode.CancellationTokenSource();
  // lost: the resident died while following a detached shell, which goes on.
  private state: 'starting' | 'running' | 'lost' | 'ended' = 'starting';
  private shown = 0; // the offset after the last output shown (detached execs)
  private dims?: vscode.TerminalDimensions;
  private unfollowedEnd: boolean; // the shell ended while nothing followed it
  private stdin: Promise<unknown> = Promise.resolve();
  private readonly lines: LineDiscipline;
  private readonly decoders = { stdout: new TextDecoder('utf-8'), stderr: new TextDecoder('utf-8') };

  constructor(private readonly resident: Resident, private readonly registry: TerminalRegistry,
    private readonly sandboxId: string, private readonly attach?: Reattach) {
    this.execId = attach?.execId ?? resident.notifications.nextId('term');
    this.tty = resident.has(Capability.tty);
    this.detached = resident.has(Capability.detach);
    this.unfollowedEnd = !!attach && !attach.running;
    this.lines = new LineDiscipline({
      echo: (text) => this.written.fire(text),
      sendLine: (line) => this.send(line),
      endOfInput: () => this.sendEof(),
      interrupt: () => this.interrupt(),
    });
  }

  open(dims: vscode.TerminalDimensions | undefined): void {
    if (!this.resident.has(Capability.stdin)) {
      this.written.fire(`This resident (${this.resident.describeState()}) has no stdin capability: no terminal can be opened.\r\n`);
      this.state = 'ended';
      return;
    }
    if (!this.tty) {
      this.written.fire('\x1b[33m[resident: this resident has no tty capability, so the shell reads a plain pipe: ' +
        'lines are edited here and sent on Enter, programs see no terminal, and Ctrl-C ends the shell]\x1b[0m\r\n');
    }
    if (!this.detached) {
      this.written.fire('\x1b[2m[resident: this resident cannot detach execs, so this shell ends when the window reloads or closes]\x1b[0m\r\n');
    }
    this.dims = dims;
    if (this.attach) {
      this.written.fire(this.attach.running
        ? '\x1b[2m[resident: re-attached to the shell this terminal had before the window reloaded; its scroll-back follows]\x1b[0m\r\n'
        : '\x1b[2m[resident: the shell this terminal had ended while no window followed it; its scroll-back and exit code follow]\x1b[0m\r\n');
      // Offset 0: this terminal is new and empty, so replay what the ring
      // still holds, the terminal's scroll-back (an ended exec answers at once).
      this.follow(() => this.resident.request<ExecResult>('exec/attach',
        { exec_id: this.execId, sandbox_id: this.sandboxId, offset: 0 }, this.following.token));
      if (dims) this.setDimensions(dims);
    } else {
      const params: Record<string, unknown> = { sandbox_id: this.sandboxId, argv: SHELL, exec_id: this.execId, stdin: true, env: { TERM: 'xterm-256color' } };
      if (this.tty) params.tty = { rows: dims?.rows ?? 24, cols: dims?.columns ?? 80 };
      if (this.detached) params.detach = true;
      this.follow(() => this.resident.request<ExecResult>('sandbox/exec', params, this.following.token));
    }
  }

  get lost(): boolean {
    return this.state === 'lost';
  }

  get offset(): number {
    return this.shown;
  }

  /**
   * A new resident (Restart) follows the shell this terminal lost with the
   * old one, from the offset it had shown: what the shell printed meanwhile
   * comes, nothing twice. running: what sandbox/list_execs says of it now.
   */
  resume(running: boolean): void {
    if (this.state !== 'lost') return;
    this.unfollowedEnd = !running;
    this.written.fire(running
      ? '\x1b[2m[resident: re-attached to the shell after the resident restarted]\x1b[0m\r\n'
      : '\x1b[2m[resident: the shell ended while no resident followed it; its last output and exit code follow]\x1b[0m\r\n');
    this.follow(() => this.resident.request<ExecResult>('exec/attach',
      { exec_id: this.execId, sandbox_id: this.sandboxId, offset: this.shown }, this.following.token));
    if (this.dims) this.setDimensions(this.dims);
  }

  /** The lost shell cannot be followed again (its sandbox no longer lists it). */
  abandon(reason: string): void {
    if (this.state !== 'lost') return;
    this.state = 'running'; // so that ended() writes
    this.ended(`\r\n[${reason}; press any key to close]\r\n`);
  }

  // Follows the exec that send starts or attaches: its output into the
  // terminal, its answer as the exit line. The resident dying meanwhile
  // loses a detached shell (it goes on) and ends any other.
  private follow(send: () => Promise<ExecResult>): void {
    const route = this.resident.notifications.routeExec(this.execId, (stream, bytes, offset) => this.output(stream, bytes, offset),
      (err) => this.disconnected(err));
    this.state = 'running';
    send().then((result) => {
      this.registry.forget(this.execId);
      const how = result.signal ? ` (${result.signal})` : result.timed_out ? ' (timed out)' : '';
      const lost = (result as { output_lost?: number }).output_lost;
      if (lost) this.written.fire(`\r\n\x1b[2m[resident: ${lost} bytes of the oldest output were no longer kept]\x1b[0m`);
      const unwatched = this.unfollowedEnd ? ' while no window followed it' : '';
      this.ended(`\r\n\x1b[2m[process exited with code ${result.exit_code}${how}${unwatched}; press any key to close]\x1b[0m\r\n`);
    }, (err) => {
      if (this.state === 'lost') return; // the resident went: Restart resumes it
      this.ended(`\r\n[the shell ended: ${describe(err)}; press any key to close]\r\n`);
    }).finally(() => route.dispose());
  }

  private disconnected(err: Error): void {
    if (this.state !== 'running') return;
    if (!this.detached) {
      this.ended(`\r\n[${err.message}]\r\n`);
      return;
    }
    this.state = 'lost';
    this.written.fire(`\r\n\x1b[2m[resident: ${err.message}; the shell goes on in the sandbox, and Restart re-attaches this terminal]\x1b[0m\r\n`);
  }

  handleInput(data: string): void {
    if (this.state === 'ended') {
      // A key closes it; the terminal's own answers to the queries in the
      // scroll-back it just replayed do not (terminalReports.ts).
      if (!isTerminalReport(data)) this.closed.fire();
      return;
    }
    if (this.state === 'lost') return; // no resident to take it until Restart
    if (this.tty) this.send(data);
    else this.lines.input(data);
  }

  setDimensions(dims: vscode.TerminalDimensions): void {
    this.dims = dims;
    if (!this.tty || this.state !== 'running') return;
    this.resident.request('exec/resize', { exec_id: this.execId, rows: dims.rows, cols: dims.columns }).catch(() => undefined);
  }

  // A detached shell is only unfollowed here ($/cancelRequest detaches it):
  // the registry kills it when the user closed the terminal, and keeps it
  // for the next session when the window went.
  close(): void {
    if (this.state === 'running') {
      if (this.detached) this.following.cancel();
      else this.resident.request('exec/kill', { exec_id: this.execId }).catch(() => undefined);
    }
    this.state = 'ended';
  }

  private output(stream: 'stdout' | 'stderr', bytes: Buffer, offset?: number): void {
    if (offset !== undefined) this.shown = offset;
    const text = this.decoders[stream].decode(bytes, { stream: true });
    this.written.fire(this.tty ? text : toTerminalLines(text));
  }

  // Stdin requests are chained: each waits for the one before (backpressure,
  // and the order the user typed).
  private send(text: string): void {
    const data = toBase64(Buffer.from(text, 'utf8'));
    this.stdin = this.stdin.then(() => this.state === 'running'
      ? this.resident.request('exec/stdin', { exec_id: this.execId, data }) : undefined).catch(() => undefined);
  }

  private sendEof(): void {
    this.stdin = this.stdin.then(() => this.resident.request('exec/stdin', { exec_id: this.execId, eof: true })).catch(() => undefined);
  }

  private interrupt(): void {
    this.written.fire('\x1b[33m[no tty: Ctrl-C ends the shell]\x1b[0m\r\n');
    this.resident.request('exec/kill', { exec_id: this.execId }).catch(() => undefined);
  }

  private ended(message: string): void {
    if (this.state === 'ended') return;
    this.state = 'ended';
    this.written.fire(message);
  }
}
