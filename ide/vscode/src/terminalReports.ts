// What a terminal sends by itself, not a key the user pressed: its answers
// to the queries in the output it shows (cursor position, device
// attributes, colours, modes) and focus reports. A replayed scroll-back
// holds such queries (busybox's shell asks for the cursor position at each
// prompt), and the editor's terminal answers them as it draws them, as
// input. "Press any key to close" must not take an answer for a key: the
// terminal of a shell that ended would close as soon as it showed how.
// Pure logic, unit-tested without an editor.

const REPORT = new RegExp('^(?:' + [
  '\\x1b\\[\\??\\d+(?:;\\d+)*R', // cursor position (CPR, DECXCPR)
  '\\x1b\\[[?>=]?[\\d;]*c', // device attributes (DA1, DA2, DA3)
  '\\x1b\\[[IO]', // focus in, focus out
  '\\x1b\\[\\??[\\d;]*\\$y', // mode report (DECRPM)
  '\\x1b\\[\\d+(?:;\\d+)*t', // window size or state report
  '\\x1b\\][^\\x07\\x1b]*(?:\\x07|\\x1b\\\\)', // OSC answer (a colour query's)
  '\\x1bP[^\\x1b]*\\x1b\\\\', // DCS answer (DECRQSS, XTGETTCAP)
].join('|') + ')+$');

/** data is only answers and reports the terminal made, no key the user pressed. */
export function isTerminalReport(data: string): boolean {
  return data.length > 0 && REPORT.test(data);
}
