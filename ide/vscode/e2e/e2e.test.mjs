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

  // Steps run in order; after one fails the rest are skipped, and the page
  // at the moment of the failure is saved.
  let failed = false;
  const step = (name, body) => t.test(name, { skip: failed && 'an earlier step failed' }, async (st) => {
    try {
      await body(st);
    } catch (err) {
      failed = true;
      await wb.screenshot('FAILED').catch(() => undefined);
      throw err;
    }
  });
  t.after(async () => {
    await wb.screenshot('final').catch(() => undefined);
    await browser.close().catch(() => undefined);
    await stopProcess(editor.child);
    killGroup(editor.child);
    for (const id of kept) {
      try { ctl('rm', id); } catch { /* already gone */ }
    }
  });

  await step('the Resident views open and the resident is ready', async () => {
    await page.waitForSelector('.activitybar');
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
    await page.waitForSelector('.terminal-wrapper .xterm-rows', { visible: true });
    // A prompt ("# ", "$ "); the shell's own stderr notices can come after it.
    await page.waitForFunction(() => /[$#][ \u00a0]/.test(document.querySelector('.xterm-rows').textContent));
    // What the resident lacks, the terminal says (not silently a worse terminal).
    const rows = await wb.text('.xterm-rows');
    assert.equal(rows.includes('has no tty capability'), !announced('tty'), 'the no-tty notice matches the capability');
    assert.equal(rows.includes('cannot detach execs'), !announced('detach'), 'the no-detach notice matches the capability');
    await page.keyboard.type('echo "answer=$((6*7))"; cat /data/docs/notes.txt\n');
    await wb.waitText('.xterm-rows', 'answer=42');
    await wb.waitText('.xterm-rows', 'token=[REDACTED]');
    await wb.screenshot('terminal-output');
  });

  let fileText;
  await step('a volume file opens in an editor tab', async () => {
    await wb.command('View: Show Resident');
    await wb.expandPane('Volumes');
    await wb.paneAction('Volumes', 'Refresh');
    await wb.expandRow('Volumes', VOLUME, 'docs');
    await wb.expandRow('Volumes', 'docs', 'notes.txt');
    await wb.clickRow('Volumes', 'notes.txt');
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
    if (!(await wb.rowExpanded('Sandboxes', plantedId.slice(0, 16)))) await wb.expandRow('Sandboxes', plantedId.slice(0, 16), 'home');
    await wb.expandRow('Sandboxes', 'home', 'e2e');
    await wb.expandRow('Sandboxes', 'e2e', 'hello.txt');
    await wb.clickRow('Sandboxes', 'hello.txt');
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
    const button = await page.waitForFunction(() => [...document.querySelectorAll('.monaco-dialog-box .monaco-button')]
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

  await step('a resident that dies is shown with Restart, and Restart brings the views back', async () => {
    const [pid] = residentPids(editor.extensions);
    assert.ok(pid, 'a resident runs from the installed extension');
    process.kill(Number(pid), 'SIGKILL');
    const restart = await page.waitForFunction(() => {
      const toast = [...document.querySelectorAll('.notification-list-item')].find((n) => n.textContent.includes('was killed by SIGKILL'));
      return toast && [...toast.querySelectorAll('.monaco-button')].find((b) => b.textContent.trim() === 'Restart');
    });
    await wb.waitText('.pane-body', 'The resident is not running');
    await wb.screenshot('resident-died');
    await restart.asElement().click();
    await wb.waitRow('Sandboxes', plantedId.slice(0, 16));
    await waitFor(() => residentPids(editor.extensions).some((p) => p !== pid), 'a new resident runs');
    await wb.screenshot('resident-restarted');
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
