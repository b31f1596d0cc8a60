// Activation: spawns the resident, registers the views, file systems and
// commands, and turns every end of the resident into something the user
// sees, with the action that fixes it.
import * as vscode from 'vscode';
import { Resident, ResidentState, describe } from './resident';
import { launchSettings, residentctlEquivalent } from './settings';
import { Credentials } from './credentials';
import { SandboxFileItem, SandboxView } from './sandboxView';
import { VolumeView } from './volumeView';
import { registerFileSystems } from './fileSystems';
import { openTerminal } from './terminal';
import { TerminalRegistry } from './terminalRegistry';
import { download } from './downloads';
import { createSandbox, importFile, sandboxDirOf, terminateSandbox } from './sandboxCommands';
import { Capability } from './wire';
import { sandboxUri } from './uris';

let resident: Resident | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const log = vscode.window.createOutputChannel('Resident');
  const credentials = new Credentials(context.secrets, context.globalState);
  const current = new Resident(log);
  resident = current;
  const sandboxes = new SandboxView(current);
  const volumes = new VolumeView(current);
  const terminals = new TerminalRegistry(context.workspaceState, current, log);
  context.subscriptions.push(log, current, sandboxes, volumes, terminals, ...registerFileSystems(current));

  const start = async (): Promise<void> => {
    const settings = launchSettings(context);
    log.appendLine(`install id ${settings.installId}, tag prefix ${settings.tagPrefix || 'resident'}, provider ${settings.provider}` +
      `${settings.stateDir ? `, state dir ${settings.stateDir}` : ''}; the same sandboxes: ${residentctlEquivalent(settings)}`);
    await current.start(settings, await credentials.get(settings.provider));
  };
  const restart = async (): Promise<void> => {
    await current.stop();
    await start();
  };

  context.subscriptions.push(current.onDidChangeState((state) => {
    void vscode.commands.executeCommand('setContext', 'resident.liveUpdates', current.has(Capability.watch));
    if (state.kind === 'ready' && current.has(Capability.watch)) {
      // The feed lasts as long as the session; its changes refresh the view.
      current.request('sandbox/watch').catch((err) => log.appendLine(`sandbox/watch failed: ${describe(err)}`));
    }
    if (state.kind === 'ready' && current.has(Capability.detach)) {
      void terminals.reattach((sandboxId, attach) => openTerminal(current, terminals, sandboxId, attach));
    }
    sandboxes.refresh();
    volumes.refresh();
    void announce(state);
  }));
  context.subscriptions.push(current.notifications.onWatchEvent((change) => {
    if (change.event === 'created' || change.event === 'state' || change.event === 'terminated') sandboxes.refresh();
  }));

  const announce = async (state: ResidentState): Promise<void> => {
    if (state.kind === 'failed') {
      const pick = await vscode.window.showErrorMessage(`Resident did not start: ${state.message}`, 'Retry', 'Set Credentials', 'Show Log');
      if (pick === 'Retry') await restart();
      if (pick === 'Set Credentials') await vscode.commands.executeCommand('resident.signIn');
      if (pick === 'Show Log') log.show();
    } else if (state.kind === 'exited') {
      const actions = state.credentialsExpired ? ['Sign In Again', 'Restart', 'Show Log'] : ['Restart', 'Show Log'];
      const pick = await vscode.window.showErrorMessage(`Resident: ${state.message}.`, ...actions);
      if (pick === 'Sign In Again') await vscode.commands.executeCommand('resident.signInAgain');
      if (pick === 'Restart') await restart();
      if (pick === 'Show Log') log.show();
    }
  };

  // Download acts on the file selected last, in whichever view.
  let lastSelectedView: 'sandboxes' | 'volumes' = 'volumes';
  context.subscriptions.push(sandboxes.view.onDidChangeSelection(() => { lastSelectedView = 'sandboxes'; }),
    volumes.view.onDidChangeSelection(() => { lastSelectedView = 'volumes'; }));

  const command = (name: string, run: (...args: unknown[]) => unknown): void => {
    context.subscriptions.push(vscode.commands.registerCommand(name, async (...args: unknown[]) => {
      try {
        await run(...args);
      } catch (err) {
        void vscode.window.showErrorMessage(`Resident: ${describe(err)}`);
      }
    }));
  };
  const pickSandbox = (arg: unknown) => {
    const sandbox = sandboxes.target(arg);
    if (!sandbox) void vscode.window.showWarningMessage('Resident: select a sandbox in the Sandboxes view first.');
    return sandbox;
  };

  command('resident.refresh', () => { sandboxes.refresh(); volumes.refresh(); });
  command('resident.restart', restart);
  command('resident.showLog', () => log.show());
  command('resident.signIn', async () => {
    if (await credentials.ask(launchSettings(context).provider)) await restart();
  });
  // After an expiry: fresh values for the credentials kept, then a new session.
  command('resident.signInAgain', async () => {
    if (await credentials.renew(launchSettings(context).provider)) await restart();
  });
  command('resident.signOut', async () => {
    await credentials.forget(launchSettings(context).provider);
    await restart();
  });
  command('resident.createSandbox', async () => {
    const id = await createSandbox(current, context.globalState, log);
    if (id) sandboxes.refresh();
  });
  command('resident.terminate', async (arg) => {
    const sandbox = pickSandbox(arg);
    if (sandbox && await terminateSandbox(current, sandbox, log)) sandboxes.refresh();
  });
  command('resident.openTerminal', (arg) => {
    const sandbox = pickSandbox(arg);
    if (sandbox) openTerminal(current, terminals, sandbox.sandbox_id);
  });
  command('resident.openFolder', (arg) => {
    const sandbox = pickSandbox(arg);
    if (!sandbox) return;
    if (!current.has(Capability.sandboxFiles)) {
      void vscode.window.showWarningMessage(`Resident: this resident cannot list a sandbox's files (no "${Capability.sandboxFiles}" capability); ` +
        'browsing needs a newer resident. Import works.');
      return;
    }
    const uri = sandboxUri(sandbox.sandbox_id, '/');
    const folders = vscode.workspace.workspaceFolders ?? [];
    if (!folders.some((f) => f.uri.toString() === uri.toString())) {
      vscode.workspace.updateWorkspaceFolders(folders.length, 0, { uri, name: `sandbox ${sandbox.sandbox_id.slice(0, 12)}` });
    }
    void vscode.commands.executeCommand('workbench.view.explorer');
  });
  command('resident.importFile', async (arg) => {
    const fromExplorer = sandboxDirOf(arg instanceof SandboxFileItem && arg.isDir ? arg.uri : arg);
    const sandboxId = fromExplorer?.sandboxId ?? pickSandbox(arg)?.sandbox_id;
    if (sandboxId) await importFile(current, sandboxId, fromExplorer?.dir, log);
  });
  command('resident.download', async (arg) => {
    const source = arg instanceof vscode.Uri ? arg
      : lastSelectedView === 'sandboxes' ? sandboxes.fileTarget(arg) ?? volumes.target(arg) : volumes.target(arg) ?? sandboxes.fileTarget(arg);
    if (!source) {
      void vscode.window.showWarningMessage('Resident: select a file in the Volumes or Sandboxes view first.');
      return;
    }
    await download(current, log, source);
  });
  command('resident.moreEntries', (arg) => {
    const parent = volumes.moreTarget(arg);
    if (parent) volumes.showMore(parent);
  });

  // What the settings change applies at the next start (or sign-in): say so,
  // rather than leave the user guessing whether it took.
  context.subscriptions.push(vscode.workspace.onDidChangeConfiguration((e) => {
    if (!e.affectsConfiguration('resident')) return;
    const lifetime = vscode.workspace.getConfiguration('resident').get<number>('credentialLifetimeSeconds', 0);
    log.appendLine(`settings changed (credential lifetime ${lifetime > 0 ? `${lifetime} s` : 'none'}): ` +
      'Restart the Resident applies them; a lifetime counts from the next sign-in');
  }));

  await start();
}

export async function deactivate(): Promise<void> {
  // Closing stdin is enough (the resident exits on EOF); shutdown first
  // lets it answer what is in flight.
  await resident?.stop();
}
