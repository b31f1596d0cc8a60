// End-to-end test of the packaged extension in a real editor: code-server
// serves VS Code with the .vsix installed, Chromium drives it like a user,
// and the extension's resident runs on the provider named by
// RESIDENT_PROVIDER (local or docker). residentctl, a second host on the same
// install id, plants a sandbox and a volume file holding a canary secret.
//
//   VSIX=… RESIDENTCTL=… RESIDENT_PROVIDER=local|docker [IMAGE=…] [DOCKER_HOST=…] \
//   RESIDENT_IDE_ARTIFACTS=dir node --test e2e.test.mjs
//
// Screenshots of every step land in $RESIDENT_IDE_ARTIFACTS/<provider>/.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startCodeServer, stopProcess, killGroup, openBrowser, Workbench, waitFor } from './editor.mjs';

const provider = process.env.RESIDENT_PROVIDER || 'local';
const vsix = must('VSIX');
const residentctl = must('RESIDENTCTL');
const image = process.env.IMAGE || '';
const artifacts = path.join(process.env.RESIDENT_IDE_ARTIFACTS || path.join(import.meta.dirname, 'artifacts'), provider);
const CANARY = `canary-${Date.now().toString(36)}-e2e-secret`;
const VOLUME = `vsc-e2e-${Date.now().toString(36)}`;
const RENEWED = `renewed-${crypto.randomBytes(6).toString('hex')}-e2e-secret`; // entered at "Sign In Again"
// Long enough for a loaded machine to start the resident inside it (if not,
// initialize is refused as expired: the same notification follows).
const LIFETIME_S = 20;

function must(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is required`);
  return v;
}

test(`the resident extension in code-server, on ${provider}`, async (t) => {
  fs.rmSync(artifacts, { recursive: true, force: true });
  fs.mkdirSync(artifacts, { recursive: true });
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), `resident-vscode-${provider}-`));
  const stateDir = path.join(dir, 'state');
  const downloads = path.join(dir, 'downloads');
  const installId = `vscode-e2e-${Date.now().toString(36)}`;
  const ctlArgs = ['--provider', provider, '--install-id', installId, ...(provider === 'local' ? ['--state-dir', stateDir] : [])];
  const ctl = (...args) => execFileSync(residentctl, [...args.slice(0, 1), ...ctlArgs, ...args.slice(1)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  const settings = {
    'resident.provider': provider,
    'resident.installId': installId,
    'resident.downloadDirectory': downloads,
    ...(provider === 'local' ? { 'resident.stateDir': stateDir } : {}),
    ...(process.env.DOCKER_HOST ? { 'resident.dockerHost': process.env.DOCKER_HOST } : {}),
    ...(image ? { 'resident.defaultImage': image } : {}),
    'terminal.integrated.gpuAcceleration': 'off', // the DOM renderer: terminal text is in the page
    'workbench.startupEditor': 'none',
    'workbench.tips.enabled': false,
    'telemetry.telemetryLevel': 'off',
    'security.workspace.trust.enabled': false,
    'files.simpleDialog.enable': true,
    'remote.autoForwardPorts': false, // other programs' ports on this machine are not ours to offer
  };
  console.log(`screenshots: ${artifacts}`);
  const editor = await startCodeServer({ dir, vsix, settings });
  const { browser, page } = await openBrowser(editor.url, dir);
  const wb = new Workbench(page, artifacts);
  const kept = [];
  // What the resident announced, from the Output channel's first lines.
  const announced = (name) => findFiles(editor.userData, (f) => /Resident\.log$/.test(f))
    .some((f) => new RegExp(`^capabilities: .*\\b${name}\\b`, 'm').test(fs.readFileSync(f, 'utf8')));
  // Everything the Output channel has written, over the sessions of the editor.
  const outputLog = () => findFiles(editor.userData, (f) => /Resident\.log$/.test(f)).map((f) => fs.readFileSync(f, 'utf8')).join('\n');
  const ctlExec = (id, ...argv) => execFileSync(residentctl, ['exec', id, ...ctlArgs, '--', ...argv], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  // A user setting, set in the Settings editor; the extension's Output
  // channel says when it has seen it (what: the text it logs).
  const setSetting = async (key, value, what) => {
    const seen = outputLog().split(what).length;
    await wb.setSetting(key, value);
    await waitFor(() => outputLog().split(what).length > seen, `the extension saw ${key}=${value}`);
    await wb.command('View: Close All Editors');
  };

  // What a failed step leaves for whoever reads only the CI log: the page
  // (a screenshot), the Output channel, every notification, the page's text,
  // the editor's own logs, all under artifacts/, and their paths and the
  // Output channel's last lines printed here.
  const diagnose = async (name, err) => {
    const saved = [];
    const save = (file, text) => {
      fs.writeFileSync(path.join(artifacts, file), text);
      saved.push(path.join(artifacts, file));
    };
    const shot = await wb.screenshot('FAILED').catch((e) => `no screenshot: ${e.message}`);
    const output = outputLog();
    save('FAILED-output-channel.txt', output);
    save('FAILED-page-text.txt', await page.evaluate(() => document.body.innerText).catch((e) => `no page text: ${e.message}`));
    save('FAILED-tabs.txt', `${(await wb.tabs().catch(() => [])).join('\n')}\n`);
    // The toasts shown, then the notification center's whole list (toasts
    // that hid themselves are only there).
    const toasts = await wb.notifications().catch(() => []);
    const center = await Promise.race([wb.command('Notifications: Show Notifications').then(() => wb.notifications()),
      new Promise((resolve) => setTimeout(() => resolve(['(the notification center did not open)']), 20_000))]).catch((e) => [`(no center: ${e.message})`]);
    const notifications = [...new Set([...toasts, ...center])];
    save('FAILED-notifications.txt', `${notifications.join('\n')}\n`);
    const shotCenter = await wb.screenshot('FAILED-notifications').catch(() => undefined);
    const logs = path.join(artifacts, 'logs');
    for (const file of [...findFiles(path.join(editor.userData, 'logs'), (f) => f.endsWith('.log')), path.join(dir, 'code-server.log')]) {
      const to = path.join(logs, path.relative(dir, file));
      fs.mkdirSync(path.dirname(to), { recursive: true });
      fs.copyFileSync(file, to);
    }
    console.log([`FAILED step "${name}": ${err?.message ?? err}`, `screenshots: ${shot} ${shotCenter ?? ''}`,
      ...saved.map((f) => `saved: ${f}`), `the editor's logs: ${logs}`,
      `notifications (${notifications.length}):`, ...notifications.map((n) => `  ${n}`),
      'the Output channel, last 40 lines:', ...output.trimEnd().split('\n').slice(-40).map((l) => `  ${l}`)].join('\n'));
  };

  // Steps run in order; after one fails the rest are skipped, and what
  // explains the failure is saved (diagnose).
  let failed = false;
  const step = (name, body) => t.test(name, { skip: failed && 'an earlier step failed' }, async (st) => {
    try {
      await body(st);
    } catch (err) {
      failed = true;
      await diagnose(name, err).catch((e) => console.log(`diagnostics of "${name}" failed: ${e.stack}`));
      throw err;
    }
  });
  t.after(async () => {
    await wb.screenshot('final').catch(() => undefined);
    await browser.close().catch(() => undefined);
    await stopProcess(editor.child);
    killGroup(editor.child);
    // Every sandbox of this run's install id is the test's: also one a
    // failed step made but never recorded (the create step, say).
    let owned = [];
    try { owned = JSON.parse(ctl('ls', '--json')).map((s) => s.sandbox_id); } catch { /* the provider is gone */ }
    for (const id of new Set([...kept, ...owned])) {
      try { ctl('rm', id); } catch { /* already gone */ }
    }
  });

  await step('the Resident views open and the resident is ready', async () => {
    await wb.selector('the activity bar', '.activitybar');
    await wb.command('Resident: Set Provider Credentials');
    await wb.answer('name', 'api_token');
    await wb.answer('api_token', CANARY); // a password box: the canary is not echoed
    await wb.command('View: Show Resident');
    await wb.expandPane('Sandboxes');
    await wb.waitText('.pane-body', 'No sandboxes yet');
    await wb.screenshot('views-ready');
  });

  let plantedId;
  await step('a sandbox created by another host (residentctl) appears in resident.sandboxes', async () => {
    const volumeFlag = provider === 'local' ? `${VOLUME}:/data` : `${VOLUME}:/data`;
    const out = execFileSync(residentctl, ['run', ...ctlArgs, ...(image ? ['--image', image] : []), '-v', volumeFlag, '--keep', '--',
      'sh', '-c', `mkdir -p /data/docs /home/e2e && printf 'hello from the volume\\ntoken=%s\\n' '${CANARY}' > /data/docs/notes.txt && ` +
      `printf 'hello from the sandbox\\ntoken=%s\\n' '${CANARY}' > /home/e2e/hello.txt`],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
    void out;
    plantedId = JSON.parse(ctl('ls', '--json')).map((s) => s.sandbox_id)[0];
    assert.ok(plantedId, 'residentctl kept a sandbox');
    kept.push(plantedId);
    const saysOff = await page.evaluate(() => document.body.textContent.includes('Live updates are off'));
    assert.equal(saysOff, !announced('watch'), 'the view says live updates are off exactly when the resident has no watch');
    if (saysOff) await wb.paneAction('Sandboxes', 'Refresh'); // the visible fallback; with watch the row must come by itself
    await wb.waitRow('Sandboxes', plantedId.slice(0, 16));
    await wb.screenshot('planted-sandbox-listed');
  });

  let createdId;
  await step('Resident: Create Sandbox makes one and lists it', async () => {
    const before = new Set(JSON.parse(ctl('ls', '--json')).map((s) => s.sandbox_id));
    await wb.command('Resident: Create Sandbox');
    await wb.answer('image', image); // empty on local: it records no image
    await wb.answer('options');
    await waitFor(() => JSON.parse(ctl('ls', '--json')).some((s) => !before.has(s.sandbox_id)), 'the created sandbox is owned');
    createdId = JSON.parse(ctl('ls', '--json')).map((s) => s.sandbox_id).find((id) => !before.has(id));
    kept.push(createdId);
    await wb.waitRow('Sandboxes', createdId.slice(0, 16));
    await wb.screenshot('created-sandbox-listed');
  });

  await step('a terminal in the planted sandbox shows a command\'s output, scrubbed', async () => {
    await wb.clickRow('Sandboxes', plantedId.slice(0, 16));
    await wb.command('Resident: Open Terminal');
    await wb.selector('a terminal', '.terminal-wrapper .xterm-rows', { visible: true });
    // A prompt ("# ", "$ "); the shell's own stderr notices can come after it.
    await wb.until('a shell prompt in the terminal', () => /[$#][ \u00a0]/.test(document.querySelector('.xterm-rows').textContent));
    // What the resident lacks, the terminal says (not silently a worse terminal).
    const rows = await wb.text('.xterm-rows');
    assert.equal(rows.includes('has no tty capability'), !announced('tty'), 'the no-tty notice matches the capability');
    assert.equal(rows.includes('cannot detach execs'), !announced('detach'), 'the no-detach notice matches the capability');
    await page.keyboard.type('echo "answer=$((6*7))"; cat /data/docs/notes.txt\n');
    await wb.waitText('.xterm-rows', 'answer=42');
    await wb.waitText('.xterm-rows', 'token=[REDACTED]');
    await wb.screenshot('terminal-output');
  });

  // The shell's output below is computed ($((…))), so the typed command,
  // which the tty echoes, never holds the text a check waits for.
  await step('a window reload re-attaches the terminal with its scroll-back, to the same shell (detach)', async (t) => {
    if (!announced('detach')) {
      t.skip('this resident does not announce detach: its terminal says it ends with the window');
      return;
    }
    await wb.focusTerminal();
    await page.keyboard.type('E2E_MARK=$((40000+1234)); echo "set=$E2E_MARK"\n');
    await wb.waitText('.xterm-rows', 'set=41234');
    await wb.screenshot('terminal-before-reload');
    await page.reload({ waitUntil: 'domcontentloaded' });
    await wb.selector('the reloaded workbench', '.monaco-workbench');
    // The new window's extension finds the shell in its workspace state and
    // follows it again from offset 0: what it printed before the reload is back.
    await wb.waitText('.xterm-rows', 're-attached to the shell');
    await wb.waitText('.xterm-rows', 'answer=42');
    await wb.waitText('.xterm-rows', 'set=41234');
    await waitFor(() => outputLog().includes('re-attaching terminal'), 'the Output channel says it re-attached');
    // A variable set before the reload: the same shell, not a new one.
    await wb.focusTerminal();
    await page.keyboard.type('echo "mark=$E2E_MARK"\n');
    await wb.waitText('.xterm-rows', 'mark=41234');
    await wb.screenshot('terminal-reattached-after-reload');
  });

  await step('Ctrl-C in the browser reaches the shell\'s process as SIGINT, and the prompt is back (tty)', async (t) => {
    if (!announced('tty')) {
      t.skip('this resident does not announce tty: Ctrl-C can only end the shell, which the terminal says');
      return;
    }
    await wb.focusTerminal();
    // A process that says what it got: a trap on INT prints and exits 7.
    await page.keyboard.type('sh -c \'trap "echo caught=\\$((60+2)); exit 7" INT; echo armed=$((4+5)); sleep 1000\'\n');
    await wb.waitText('.xterm-rows', 'armed=9');
    await wb.screenshot('terminal-sleeping');
    await page.keyboard.down('Control');
    await page.keyboard.press('KeyC');
    await page.keyboard.up('Control');
    await wb.waitText('.xterm-rows', 'caught=62');
    await page.keyboard.type('echo "rc=$?"\n');
    await wb.waitText('.xterm-rows', 'rc=7');
    await wb.waitTerminalAfter('rc=7', /[$#] /); // the shell's prompt, after the trap's exit status
    await wb.screenshot('terminal-after-ctrl-c');
  });

  await step('a shell that ended while no window followed it comes back with its exit code (detach)', async (t) => {
    if (!announced('detach')) {
      t.skip('this resident does not announce detach');
      return;
    }
    await wb.focusTerminal();
    await page.keyboard.type('echo "waiting=$((3+4))"; while [ ! -e /home/e2e/go ]; do sleep 0.2; done; echo "ended=$((2+3))"; exit 5\n');
    await wb.waitText('.xterm-rows', 'waiting=7'); // the shell has the whole line: it runs the loop
    await page.goto('about:blank'); // the window goes; the shell stays
    ctlExec(plantedId, 'touch', '/home/e2e/go');
    await waitFor(() => {
      const execs = JSON.parse(ctl('execs', plantedId, '--json'));
      return execs.length > 0 && execs.every((e) => !e.running);
    }, 'the detached shell has ended (residentctl execs)');
    await page.goto(editor.url, { waitUntil: 'domcontentloaded' });
    await wb.selector('the workbench, loaded again', '.monaco-workbench');
    // (The notice above the replay can scroll out of the rows the DOM renders: the last line says it too.)
    await wb.waitText('.xterm-rows', 'ended=5');
    await wb.waitText('.xterm-rows', 'process exited with code 5 while no window followed it');
    await wb.screenshot('terminal-ended-exit-code');
  });

  let fileText;
  await step('a volume file opens in an editor tab', async () => {
    await wb.command('View: Show Resident');
    await wb.expandPane('Volumes');
    await wb.paneAction('Volumes', 'Refresh');
    await wb.openRow('Volumes', 'notes.txt', [VOLUME, 'docs']);
    await wb.waitText('.editor-group-container .view-lines', 'hello from the volume');
    fileText = await wb.text('.editor-group-container .view-lines');
    assert.match(fileText, /token=\[REDACTED\]/);
    await wb.screenshot('volume-file-in-editor');
  });

  let downloaded;
  await step('Download saves the file with the bytes the resident sent', async () => {
    await wb.command('View: Show Resident');
    await wb.clickRow('Volumes', 'notes.txt');
    await wb.command('Resident: Download');
    await wb.answer('Download');
    const target = path.join(downloads, 'notes.txt');
    await waitFor(() => fs.existsSync(target), `the download at ${target}`);
    downloaded = fs.readFileSync(target);
    assert.equal(downloaded.toString('utf8'), 'hello from the volume\ntoken=[REDACTED]\n');
    await wb.screenshot('downloaded');
  });

  await step('a running sandbox\'s files: browse, open in a tab, download (sandbox_files)', async (t) => {
    if (!announced('sandbox_files')) {
      t.skip('this resident does not announce sandbox_files');
      return;
    }
    await wb.command('View: Show Resident');
    await wb.openRow('Sandboxes', 'hello.txt', [plantedId.slice(0, 16), 'home', 'e2e']);
    await wb.waitText('.editor-group-container .view-lines', 'hello from the sandbox');
    assert.match(await wb.text('.editor-group-container .view-lines'), /token=\[REDACTED\]/);
    await wb.screenshot('sandbox-file-in-editor');
    await wb.command('Resident: Download'); // acts on the selection: hello.txt in the Sandboxes view
    await wb.answer('Download');
    const target = path.join(downloads, 'hello.txt');
    await waitFor(() => fs.existsSync(target), `the download at ${target}`);
    const bytes = fs.readFileSync(target);
    assert.equal(bytes.toString('utf8'), 'hello from the sandbox\ntoken=[REDACTED]\n');
    downloaded = Buffer.concat([downloaded, bytes]);
    await wb.screenshot('sandbox-file-downloaded');
  });

  await step('Import uploads a local file into the sandbox, streamed when it is over max_file_bytes (upload)', async (t) => {
    const big = announced('upload');
    const local = path.join(dir, big ? 'big.bin' : 'small.bin');
    const content = crypto.randomBytes(big ? 9 * 1024 * 1024 + 17 : 64 * 1024); // 8 MiB is one write's limit
    fs.writeFileSync(local, content);
    if (!big) t.diagnostic('this resident does not announce upload: importing a file under max_file_bytes');
    await wb.command('View: Show Resident');
    await wb.clickRow('Sandboxes', plantedId.slice(0, 16));
    await wb.command('Resident: Import File into Sandbox');
    await wb.pickFile('Import a file into the sandbox', dir, path.basename(local)); // the open dialog
    await wb.answer('Path in the sandbox', '/home/e2e/imported.bin');
    await wb.waitText('.notification-list-item-message', 'Imported');
    const sum = execFileSync(residentctl, ['exec', plantedId, ...ctlArgs, '--', 'sha256sum', '/home/e2e/imported.bin'], { encoding: 'utf8' });
    assert.equal(sum.split(/\s+/)[0], crypto.createHash('sha256').update(content).digest('hex'));
    await wb.screenshot('imported');
  });

  await step('Terminate removes the created sandbox from the view', async () => {
    await wb.command('View: Show Resident');
    await wb.clickRow('Sandboxes', createdId.slice(0, 16));
    await wb.command('Resident: Terminate Sandbox');
    const button = await wb.until('the Terminate button of the confirmation dialog', () => [...document.querySelectorAll('.monaco-dialog-box .monaco-button')]
      .find((b) => b.textContent.trim() === 'Terminate'));
    await wb.screenshot('terminate-confirm');
    await button.asElement().click();
    await wb.waitRow('Sandboxes', createdId.slice(0, 16), false);
    assert.ok(!JSON.parse(ctl('ls', '--json')).some((s) => s.sandbox_id === createdId), 'residentctl no longer lists it');
    await wb.screenshot('terminated');
  });

  await step('the canary appears nowhere: DOM, Output channel, downloaded file, settings', async () => {
    await wb.command('Resident: Show Log');
    await wb.waitText('.panel .view-lines', 'terminated sandbox'); // the channel's last line
    await wb.screenshot('output-channel');
    const dom = await page.evaluate(() => document.documentElement.outerHTML + document.body.innerText);
    assert.ok(!dom.includes(CANARY), 'the canary is in the page DOM');
    assert.ok(dom.includes('[REDACTED]'), 'the masked secret shows as [REDACTED] (the check above looked at real content)');
    const outputLogs = findFiles(editor.userData, (f) => /Resident\.log$/.test(f));
    assert.ok(outputLogs.length > 0, `the Output channel's log file under ${editor.userData}`);
    for (const file of outputLogs) {
      const text = fs.readFileSync(file, 'utf8');
      assert.match(text, /capabilities:/, `${file} is the Resident channel`);
      assert.ok(text.includes(`residentctl --provider ${provider} --install-id ${installId}`), 'the channel names the identity, as residentctl takes it');
      assert.ok(!text.includes(CANARY), `the canary is in ${file}`);
    }
    assert.ok(!downloaded.includes(CANARY), 'the canary is in the downloaded file');
    const settingsText = fs.readFileSync(path.join(editor.userData, 'User', 'settings.json'), 'utf8');
    assert.ok(!settingsText.includes(CANARY), 'the canary is in settings.json');
  });

  // With detach, a shell's terminal stays open through the crash (the shell
  // goes on in the sandbox) and follows it again after Restart, from where
  // it was: what it printed meanwhile comes, nothing twice.
  await step('a resident that dies is shown with Restart, and Restart brings the views and the open terminals back', async () => {
    const detach = announced('detach');
    if (detach) {
      await wb.command('Terminal: Kill All Terminals'); // the ended shells' terminals: one terminal below
      await wb.command('View: Show Resident');
      await wb.clickRow('Sandboxes', plantedId.slice(0, 16));
      await wb.command('Resident: Open Terminal');
      await wb.selector('a terminal', '.terminal-wrapper.active .xterm-rows', { visible: true });
      await wb.until('a shell prompt in the terminal', () => /[$#][ \u00a0]/.test(document.querySelector('.terminal-wrapper.active .xterm-rows')?.textContent ?? ''));
      await wb.focusTerminal();
      await page.keyboard.type('E2E_CRASH=$((50+5)); echo "armed=$E2E_CRASH"; while [ ! -e /home/e2e/go-crash ]; do sleep 0.2; done; echo "while-down=$((7*8))"\n');
      await wb.waitText('.xterm-rows', 'armed=55');
    }
    const [pid] = residentPids(editor.extensions);
    assert.ok(pid, 'a resident runs from the installed extension');
    process.kill(Number(pid), 'SIGKILL');
    await wb.notificationButton('was killed by SIGKILL', 'Restart');
    await wb.waitText('.pane-body', 'The resident is not running');
    if (detach) await wb.waitText('.xterm-rows', 'Restart re-attaches this terminal');
    await wb.screenshot('resident-died');
    if (detach) ctlExec(plantedId, 'touch', '/home/e2e/go-crash'); // the shell prints while no resident follows it
    await wb.clickNotificationButton('was killed by SIGKILL', 'Restart');
    await wb.waitRow('Sandboxes', plantedId.slice(0, 16));
    await waitFor(() => residentPids(editor.extensions).some((p) => p !== pid), 'a new resident runs');
    if (detach) {
      await wb.waitText('.xterm-rows', 're-attached to the shell after the resident restarted');
      await wb.waitText('.xterm-rows', 'while-down=56');
      await waitFor(() => /re-attaching terminal .* after a restart, from offset [1-9]/.test(outputLog()), 'the Output channel says it re-attached after the restart');
      await wb.focusTerminal();
      await page.keyboard.type('echo "still=$E2E_CRASH"\n');
      await wb.waitText('.xterm-rows', 'still=55'); // the same shell
      const rows = await wb.text('.terminal-wrapper.active .xterm-rows');
      assert.equal(rows.split('armed=55').length - 1, 1, `what the shell printed before the crash shows once after the re-attach:\n${rows}`);
    }
    await wb.screenshot('resident-restarted');
  });

  await step('credentials that expire: Sign In Again asks for the secret, stores it and re-initializes', async () => {
    // The credentials get a lifetime (a setting): the resident is told
    // (credentials_expire_at) and ends the session when it passes (§3.5).
    await setSetting('resident.credentialLifetimeSeconds', LIFETIME_S, `credential lifetime ${LIFETIME_S} s`);
    await wb.command('Resident: Set Provider Credentials');
    await wb.answer('name', 'api_token');
    await wb.answer('api_token', CANARY);
    await waitFor(() => outputLog().includes('the credentials expire at'), 'the resident is started with credentials_expire_at');
    // The next credentials do not expire (the lifetime counts from each
    // sign-in): the session after Sign In Again must stay up.
    await setSetting('resident.credentialLifetimeSeconds', 0, 'credential lifetime none');
    await wb.command('View: Show Resident');
    await wb.notificationButton('credentials expired', 'Sign In Again');
    await wb.waitText('.pane-body', 'The resident is not running');
    await wb.waitRow('Sandboxes', 'Sign in again'); // the view offers what fixes it, not a Restart that would expire again
    await wb.screenshot('credentials-expired');
    ctlExec(plantedId, 'sh', '-c', `printf 'renewed=%s\\n' '${RENEWED}' > /home/e2e/renewed.txt`);
    await wb.clickNotificationButton('credentials expired', 'Sign In Again');
    await wb.answer('Sign in again', RENEWED); // a password box, the key already known
    await wb.waitRow('Sandboxes', plantedId.slice(0, 16));
    await waitFor(() => residentPids(editor.extensions).length > 0, 'a resident runs again');
    await wb.screenshot('signed-in-again');
    // The renewed secret went to the resident, which scrubs it: a file
    // holding it (written while the session was down, so the views list it
    // when they come back) opens masked.
    await wb.command('View: Show Resident');
    await wb.openRow('Sandboxes', 'renewed.txt', [plantedId.slice(0, 16), 'home', 'e2e']);
    await wb.waitText('.editor-group-container .view-lines', 'renewed=[REDACTED]');
    await wb.screenshot('renewed-secret-masked');
    const dom = await page.evaluate(() => document.documentElement.outerHTML + document.body.innerText);
    assert.ok(!dom.includes(RENEWED), 'the renewed secret is in the page DOM');
    assert.ok(!outputLog().includes(RENEWED), 'the renewed secret is in the Output channel');
    const settingsText = fs.readFileSync(path.join(editor.userData, 'User', 'settings.json'), 'utf8');
    assert.ok(!settingsText.includes(RENEWED) && !settingsText.includes(CANARY), 'a secret is in settings.json');
  });

  await step('the resident exits when the editor goes (stdin EOF)', async () => {
    const residents = () => residentPids(editor.extensions);
    assert.ok(residents().length > 0, 'a resident runs from the installed extension');
    await browser.close();
    await stopProcess(editor.child);
    await waitFor(() => residents().length === 0, 'no resident of the extension is left');
  });
});

function findFiles(root, match) {
  const out = [];
  for (const entry of fs.readdirSync(root, { withFileTypes: true, recursive: true })) {
    const full = path.join(entry.parentPath ?? entry.path, entry.name);
    if (entry.isFile() && match(full)) out.push(full);
  }
  return out;
}

// Processes whose executable lies under dir (the resident shipped in the
// installed extension).
function residentPids(dir) {
  const pids = [];
  for (const pid of fs.readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (fs.readlinkSync(`/proc/${pid}/exe`).startsWith(dir)) pids.push(pid);
    } catch { /* gone, or not ours to read */ }
  }
  return pids;
}
