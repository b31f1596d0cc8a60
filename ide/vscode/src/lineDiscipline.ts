// The line editing a terminal needs when the resident has no tty: the
// command reads a plain pipe, so nothing echoes what the user types or
// erases a character. This does it locally, the way a cooked terminal
// would: printable input is echoed and kept until Enter, which sends the
// line; Backspace erases; Ctrl-D sends end of input; Ctrl-C is reported to
// the caller (there is no terminal to turn it into SIGINT). Pure logic, so
// it is unit-tested without an editor.

export interface LineActions {
  echo(text: string): void;
  sendLine(line: string): void;
  endOfInput(): void;
  interrupt(): void;
}

export class LineDiscipline {
  private line = '';

  constructor(private readonly actions: LineActions) {}

  input(data: string): void {
    for (const ch of data.replace(/\x1b\[[0-9;]*[A-Za-z~]/g, '')) { // arrow keys and the like: no history here
      this.key(ch);
    }
  }

  private key(ch: string): void {
    switch (ch) {
      case '\r':
      case '\n':
        this.actions.echo('\r\n');
        this.actions.sendLine(this.line + '\n');
        this.line = '';
        return;
      case '\x7f':
      case '\b':
        if (this.line.length > 0) {
          this.line = [...this.line].slice(0, -1).join('');
          this.actions.echo('\b \b');
        }
        return;
      case '\x03':
        this.actions.echo('^C\r\n');
        this.line = '';
        this.actions.interrupt();
        return;
      case '\x04':
        if (this.line.length > 0) {
          this.actions.sendLine(this.line);
          this.line = '';
        }
        this.actions.endOfInput();
        return;
      default:
        if (ch < ' ' && ch !== '\t') return; // other control keys do nothing in a cooked line
        this.line += ch;
        this.actions.echo(ch);
    }
  }
}

/** Output of a command without a tty ends lines with \n alone; a terminal needs \r\n. */
export function toTerminalLines(text: string): string {
  return text.replace(/\r?\n/g, '\r\n');
}
