// resident.openTerminal: an integrated terminal on a shell in a sandbox (a
// Pseudoterminal over one exec). On a resident with the tty capability the
// shell runs on a pseudo-terminal: keys go through raw, resize reaches it
// (exec/resize), Ctrl-C is SIGINT from its own terminal. Without tty the
// shell reads a plain pipe, and the terminal says so in its first line: it
// edits lines locally (LineDiscipline), and Ctrl-C can only end the shell.
// With detach the shell is a detached exec: a window reload or an editor
// restart re-attaches it (exec/attach replays its scroll-back) instead of
// killing it; closing the terminal by hand ends it. Without detach the
// terminal says that the shell ends with the window.
import { TextDecoder } from 'node:util';
import * as vscode from 'vscode';
import { Resident, describe } from './resident';
import { Capability, ExecResult, toBase64 } from './wire';
import { LineDiscipline, toTerminalLines } from './lineDiscipline';
import { TerminalRegistry } from './terminalRegistry';

const SHELL = ['sh', '-c', 'if command -v bash >/dev/null 2>&1; then exec bash -i; else exec sh -i; fi'];

/** Opens a terminal on a new shell, or (attach) on a detached one a past session started. */
export function openTerminal(resident: Resident, registry: TerminalRegistry, sandboxId: string, attach?: string): vscode.Terminal {
  const pty = new SandboxPty(resident, registry, sandboxId, attach);
  const terminal = vscode.window.createTerminal({ name: `Resident ${sandboxId.slice(0, 12)}`, pty, iconPath: new vscode.ThemeIcon('vm') });
  registry.track(terminal, sandboxId, pty.execId, pty.detached);
  terminal.show();
  return terminal;
}

class SandboxPty implements vscode.Pseudoterminal {
  private readonly written = new vscode.EventEmitter<string>();
  private readonly closed = new vscode.EventEmitter<number | void>();
  readonly onDidWrite = this.written.event;
  readonly onDidClose = this.closed.event;
  readonly execId: string;
  readonly detached: boolean;
  private readonly tty: boolean;
  private readonly following = new vscode.CancellationTokenSource();
  private state: 'starting' | 'running' | 'ended' = 'starting';
  private stdin: Promise<unknown> = Promise.resolve();
  private readonly lines: LineDiscipline;
  private readonly decoders = { stdout: new TextDecoder('utf-8'), stderr: new TextDecoder('utf-8') };

  constructor(private readonly resident: Resident, private readonly registry: TerminalRegistry,
    private readonly sandboxId: string, private readonly attach?: string) {
    this.execId = attach ?? resident.notifications.nextId('term');
    this.tty = resident.has(Capability.tty);
    this.detached = resident.has(Capability.detach);
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
    const route = this.resident.notifications.routeExec(this.execId, (stream, bytes) => this.output(stream, bytes),
      (err) => this.ended(`\r\n[${err.message}]\r\n`));
    this.state = 'running';
    let following: Promise<ExecResult>;
    if (this.attach) {
      // Offset 0: replay what the ring still holds, the terminal's scroll-back.
      following = this.resident.request<ExecResult & { output_lost?: number }>('exec/attach',
        { exec_id: this.execId, sandbox_id: this.sandboxId, offset: 0 }, this.following.token);
      if (dims) this.setDimensions(dims);
    } else {
      const params: Record<string, unknown> = { sandbox_id: this.sandboxId, argv: SHELL, exec_id: this.execId, stdin: true, env: { TERM: 'xterm-256color' } };
      if (this.tty) params.tty = { rows: dims?.rows ?? 24, cols: dims?.columns ?? 80 };
      if (this.detached) params.detach = true;
      following = this.resident.request<ExecResult>('sandbox/exec', params, this.following.token);
    }
    following.then((result) => {
      this.registry.forget(this.execId);
      const how = result.signal ? ` (${result.signal})` : result.timed_out ? ' (timed out)' : '';
      this.ended(`\r\n\x1b[2m[process exited with code ${result.exit_code}${how}; press any key to close]\x1b[0m\r\n`);
    }, (err) => this.ended(`\r\n[the shell ended: ${describe(err)}; press any key to close]\r\n`)).finally(() => route.dispose());
  }

  handleInput(data: string): void {
    if (this.state === 'ended') {
      this.closed.fire();
      return;
    }
    if (this.tty) this.send(data);
    else this.lines.input(data);
  }

  setDimensions(dims: vscode.TerminalDimensions): void {
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

  private output(stream: 'stdout' | 'stderr', bytes: Buffer): void {
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
