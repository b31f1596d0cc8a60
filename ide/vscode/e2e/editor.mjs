// A fresh code-server bound to 127.0.0.1 with no auth, its own user data
// and extensions directories, and Debian's Chromium driving it through
// puppeteer-core. Everything waits for a condition in the page; nothing
// sleeps and hopes.
import { spawn, execFileSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import puppeteer from 'puppeteer-core';

const here = path.dirname(fileURLToPath(import.meta.url));
const entry = path.join(here, 'node_modules', 'code-server', 'out', 'node', 'entry.js');
export const STEP_MS = Number(process.env.E2E_STEP_MS) || 90_000; // a hang fails with the step's name; not a performance bound

export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

/** Installs the .vsix into a fresh extensions dir and serves code-server. */
export async function startCodeServer({ dir, vsix, settings }) {
  const userData = path.join(dir, 'user-data');
  const extensions = path.join(dir, 'extensions');
  fs.mkdirSync(path.join(userData, 'User'), { recursive: true });
  fs.writeFileSync(path.join(userData, 'User', 'settings.json'), JSON.stringify(settings, null, 2));
  const port = await freePort();
  const config = path.join(dir, 'config.yaml');
  fs.writeFileSync(config, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
  const base = ['--config', config, '--user-data-dir', userData, '--extensions-dir', extensions];
  execFileSync(process.execPath, [entry, ...base, '--install-extension', vsix], { stdio: ['ignore', 'pipe', 'inherit'] });
  const log = fs.openSync(path.join(dir, 'code-server.log'), 'a');
  const child = spawn(process.execPath, [entry, ...base, '--disable-telemetry', '--disable-update-check',
    '--disable-workspace-trust', '--disable-getting-started-override'], { stdio: ['ignore', log, log], detached: true });
  await waitFor(async () => {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/healthz`);
      return res.ok;
    } catch {
      return false;
    }
  }, 'code-server answers /healthz');
  return { url: `http://127.0.0.1:${port}/`, userData, extensions, child };
}

/** Stops code-server (SIGTERM to it alone), then kills what is left of its process group. */
export async function stopProcess(child) {
  if (child.exitCode === null && child.signalCode === null) {
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGTERM');
    await gone;
  }
}

export function killGroup(child) {
  try {
    process.kill(-child.pid, 'SIGKILL');
  } catch {
    // the group is gone
  }
}

export async function waitFor(check, what, timeout = STEP_MS) {
  const deadline = Date.now() + timeout;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for: ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

export async function openBrowser(url, dir) {
  const browser = await puppeteer.launch({
    executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
    headless: true,
    userDataDir: path.join(dir, 'chromium'),
    args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage', '--window-size=1400,900'],
    defaultViewport: { width: 1400, height: 900 },
  });
  const page = await browser.newPage();
  page.setDefaultTimeout(STEP_MS);
  await page.goto(url, { waitUntil: 'domcontentloaded' });
  await page.waitForSelector('.monaco-workbench');
  return { browser, page };
}

/** Helpers over one workbench page. */
export class Workbench {
  constructor(page, shots) {
    this.page = page;
    this.shots = shots;
    this.n = 0;
  }

  async screenshot(name) {
    this.n += 1;
    const file = path.join(this.shots, `${String(this.n).padStart(2, '0')}-${name}.png`);
    await this.page.screenshot({ path: file });
    return file;
  }

  /** Runs a command from the palette by its title, as a user would. */
  async command(title) {
    // The palette lists what is registered when it opens: until the
    // extension host has loaded, a command is missing. Reopen until it shows.
    const deadline = Date.now() + STEP_MS;
    for (;;) {
      // (No Escape first: in a focused tree it clears the selection a command acts on.)
      await this.page.keyboard.press('F1');
      const input = await this.page.waitForSelector('.quick-input-widget .quick-input-box input', { visible: true, timeout: 5000 })
        .catch(() => undefined);
      if (!input) {
        if (Date.now() > deadline) throw new Error(`F1 never opened the command palette (for "${title}")`);
        await this.page.mouse.click(700, 890); // the status bar: takes focus from whatever kept the key
        continue;
      }
      await this.page.waitForFunction((i) => i.value === '>', {}, input);
      await input.type(title);
      // Keys typed while the workbench is still busy starting can be lost:
      // then set the text as the input would have it.
      await input.evaluate((i, t) => {
        if (i.value !== `>${t}`) {
          i.value = `>${t}`;
          i.dispatchEvent(new Event('input', { bubbles: true }));
        }
      }, title);
      const row = await this.page.waitForFunction((t) => [...document.querySelectorAll('.quick-input-widget .monaco-list-row')]
        .find((r) => (r.getAttribute('aria-label') || '').toLowerCase().startsWith(t.toLowerCase())),
      { timeout: 5000 }, title).catch(() => undefined);
      if (row) {
        await row.asElement().click();
        return;
      }
      if (Date.now() > deadline) throw new Error(`the command palette never listed "${title}"`);
      await this.page.keyboard.press('Escape');
    }
  }

  /** Waits for a quick input whose text includes title, replaces its value and accepts it. */
  async answer(title, value) {
    await this.page.waitForFunction((t) => {
      const w = document.querySelector('.quick-input-widget');
      return w && w.style.display !== 'none' && w.textContent.includes(t);
    }, {}, title);
    const input = await this.page.waitForSelector('.quick-input-widget .quick-input-box input', { visible: true });
    if (value !== undefined) {
      await input.click({ clickCount: 3 });
      await this.page.keyboard.down('Control');
      await this.page.keyboard.press('KeyA');
      await this.page.keyboard.up('Control');
      await this.page.keyboard.press('Backspace');
      await input.type(value);
      // The file dialog refills an emptied box with its folder as it goes:
      // then set the text as the box would hold it typed alone.
      await input.evaluate((i, v) => {
        if (i.value !== v) {
          i.value = v;
          i.dispatchEvent(new Event('input', { bubbles: true }));
        }
      }, value);
    }
    // A quick pick takes Enter once its rows are there (an Enter before is
    // dropped). One Enter only: a second one, on a loaded machine, would
    // land on the next input and accept it unseen.
    await this.page.waitForFunction(() => {
      const w = document.querySelector('.quick-input-widget');
      const list = w && w.querySelector('.quick-input-list');
      return !list || list.style.display === 'none' || list.querySelectorAll('.monaco-list-row').length > 0;
    });
    await this.page.keyboard.press('Enter');
    await this.page.waitForFunction((t) => {
      const w = document.querySelector('.quick-input-widget');
      return !w || w.style.display === 'none' || !w.textContent.includes(t);
    }, {}, title);
  }

  /** In the editor's own file dialog (title): go to dir, then click the file name, as a user would. */
  async pickFile(title, dir, name) {
    await this.page.waitForFunction((t) => {
      const w = document.querySelector('.quick-input-widget');
      return w && w.style.display !== 'none' && w.textContent.includes(t);
    }, {}, title);
    const input = await this.page.waitForSelector('.quick-input-widget .quick-input-box input', { visible: true });
    await input.evaluate((i, v) => {
      i.value = v;
      i.dispatchEvent(new Event('input', { bubbles: true }));
    }, dir.endsWith('/') ? dir : `${dir}/`);
    const row = await this.page.waitForFunction((n) => [...document.querySelectorAll('.quick-input-widget .quick-input-list .monaco-list-row')]
      .find((r) => r.textContent.includes(n)), {}, name);
    await row.asElement().click();
    await this.page.waitForFunction((t) => {
      const w = document.querySelector('.quick-input-widget');
      return !w || w.style.display === 'none' || !w.textContent.includes(t);
    }, {}, title);
  }

  /** The tree rows of a view pane, by the pane's title. */
  async rows(pane) {
    return this.page.evaluate((p) => {
      const header = [...document.querySelectorAll('.pane-header')].find((h) => h.textContent.includes(p));
      const body = header && header.parentElement.querySelector('.pane-body');
      return body ? [...body.querySelectorAll('.monaco-list-row')].map((r) => r.textContent) : [];
    }, pane);
  }

  async waitRow(pane, text, present = true, timeout = STEP_MS) {
    await this.page.waitForFunction((p, t, want) => {
      const header = [...document.querySelectorAll('.pane-header')].find((h) => h.textContent.includes(p));
      const body = header && header.parentElement.querySelector('.pane-body');
      const has = !!body && [...body.querySelectorAll('.monaco-list-row')].some((r) => r.textContent.includes(t));
      return has === want;
    }, { timeout }, pane, text, present);
  }

  async clickRow(pane, text) {
    // A tree re-renders its rows when its data changes (a watch event, a
    // refresh): a row found just before can be gone at the click. Retry.
    const deadline = Date.now() + STEP_MS;
    for (;;) {
      await this.waitRow(pane, text);
      const row = await this.page.evaluateHandle((p, t) => {
        const header = [...document.querySelectorAll('.pane-header')].find((h) => h.textContent.includes(p));
        return [...header.parentElement.querySelectorAll('.pane-body .monaco-list-row')].find((r) => r.textContent.includes(t));
      }, pane, text);
      try {
        await row.asElement().click();
        return;
      } catch (err) {
        if (Date.now() > deadline) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  /** Clicks a tree row until child (a row below it) shows: a refresh that lands after the click collapses it again. */
  async expandRow(pane, text, child) {
    const deadline = Date.now() + STEP_MS;
    for (;;) {
      await this.clickRow(pane, text);
      const shown = await this.waitRow(pane, child, true, 3000).then(() => true, () => false);
      if (shown) return;
      if (Date.now() > deadline) throw new Error(`${text} never showed ${child}`);
      // The click toggled it; if it is expanded but still loading, clicking again would collapse it.
      if (await this.rowExpanded(pane, text)) await this.waitRow(pane, child);
    }
  }

  async rowExpanded(pane, text) {
    return this.page.evaluate((p, t) => {
      const header = [...document.querySelectorAll('.pane-header')].find((h) => h.textContent.includes(p));
      const row = header && [...header.parentElement.querySelectorAll('.pane-body .monaco-list-row')].find((r) => r.textContent.includes(t));
      return !!row && row.getAttribute('aria-expanded') === 'true';
    }, pane, text);
  }

  /** Expands a view pane (by title) if it is collapsed. */
  async expandPane(pane) {
    const header = await this.page.waitForFunction((p) =>
      [...document.querySelectorAll('.pane-header')].find((h) => h.textContent.includes(p)), {}, pane);
    if (await header.evaluate((h) => h.getAttribute('aria-expanded') !== 'true')) await header.asElement().click();
  }

  /** Clicks a title action (by its aria-label) of a view pane. */
  async paneAction(pane, label) {
    await this.expandPane(pane);
    const header = await this.page.waitForFunction((p) =>
      [...document.querySelectorAll('.pane-header')].find((h) => h.textContent.includes(p)), {}, pane);
    await header.asElement().hover(); // a pane shows its title actions while hovered
    const action = await this.page.waitForFunction((p, l) => {
      const header = [...document.querySelectorAll('.pane-header')].find((h) => h.textContent.includes(p));
      return header && [...header.querySelectorAll('.action-label')].find((a) => (a.getAttribute('aria-label') || '').startsWith(l));
    }, {}, pane, label);
    await action.asElement().click();
  }

  // Editors and terminals render spaces as U+00A0: compare as plain text.
  async waitText(selector, text) {
    await this.page.waitForFunction((s, t) => [...document.querySelectorAll(s)]
      .some((e) => e.textContent.replace(/\u00a0/g, ' ').includes(t)), {}, selector, text);
  }

  async text(selector) {
    return this.page.evaluate((s) => [...document.querySelectorAll(s)].map((e) => e.textContent.replace(/\u00a0/g, ' ')).join('\n'), selector);
  }
}
