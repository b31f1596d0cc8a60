// resident.openTerminal: an integrated terminal on a shell in a sandbox (a
// Pseudoterminal over one exec). On a resident with the tty capability the
// shell runs on a pseudo-terminal: keys go through raw, resize reaches it
// (exec/resize), Ctrl-C is SIGINT from its own terminal. Without tty the
// shell reads a plain pipe, and the terminal says so in its first line: it
// edits lines locally (LineDiscipline), and Ctrl-C can only end the shell.
import { TextDecoder } from 'node:util';
import * as vscode from 'vscode';
import { Resident, describe } from './resident';
import { Capability, ExecResult, toBase64 } from './wire';
import { LineDiscipline, toTerminalLines } from './lineDiscipline';

const SHELL = ['sh', '-c', 'if command -v bash >/dev/null 2>&1; then exec bash -i; else exec sh -i; fi'];

export function openTerminal(resident: Resident, sandboxId: string): vscode.Terminal {
  const pty = new SandboxPty(resident, sandboxId);
  const terminal = vscode.window.createTerminal({ name: `Resident ${sandboxId.slice(0, 12)}`, pty, iconPath: new vscode.ThemeIcon('vm') });
  terminal.show();
  return terminal;
}

class SandboxPty implements vscode.Pseudoterminal {
  private readonly written = new vscode.EventEmitter<string>();
  private readonly closed = new vscode.EventEmitter<number | void>();
  readonly onDidWrite = this.written.event;
  readonly onDidClose = this.closed.event;
  private readonly execId: string;
  private readonly tty: boolean;
  private state: 'starting' | 'running' | 'ended' = 'starting';
  private stdin: Promise<unknown> = Promise.resolve();
  private readonly lines: LineDiscipline;
  private readonly decoders = { stdout: new TextDecoder('utf-8'), stderr: new TextDecoder('utf-8') };

  constructor(private readonly resident: Resident, private readonly sandboxId: string) {
    this.execId = resident.notifications.nextId('term');
    this.tty = resident.has(Capability.tty);
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
    const route = this.resident.notifications.routeExec(this.execId, (stream, bytes) => this.output(stream, bytes),
      (err) => this.ended(`\r\n[${err.message}]\r\n`));
    const params: Record<string, unknown> = { sandbox_id: this.sandboxId, argv: SHELL, exec_id: this.execId, stdin: true, env: { TERM: 'xterm-256color' } };
    if (this.tty) params.tty = { rows: dims?.rows ?? 24, cols: dims?.columns ?? 80 };
    this.state = 'running';
    this.resident.request<ExecResult>('sandbox/exec', params).then((result) => {
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

  close(): void {
    if (this.state === 'running') this.resident.request('exec/kill', { exec_id: this.execId }).catch(() => undefined);
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
