// The commands tree items run on a click. VS Code keeps an extension
// command's arguments in the extension host, under an id the item carries,
// and drops them when the view refreshes: a click on a row the window still
// shows from before the refresh (the refresh's answer not rendered yet, which
// on a loaded machine lasts seconds) then fails with "Actual command not
// found, wanted to execute resident.…" and opens nothing. So an item's
// command either is an API command, whose arguments travel with the item
// itself (vscode.open), or takes no arguments and acts on the view's
// selection, which the click has just set.
import * as vscode from 'vscode';

/** Opens uri in an editor tab (not a preview) on a click on the item. */
export function openOnClick(uri: vscode.Uri): vscode.Command {
  return { command: 'vscode.open', title: 'Open', arguments: [uri, { preview: false }] };
}
