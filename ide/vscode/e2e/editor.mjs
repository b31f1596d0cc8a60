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

/**
 * page.waitForFunction whose timeout says what it waited for (what), and
 * how long: a failure in CI names its condition, not "90000ms exceeded".
 */
export async function until(page, what, fn, options = {}, ...args) {
  try {
    return await page.waitForFunction(fn, options, ...args);
  } catch (err) {
    if (err?.name !== 'TimeoutError') throw err;
    throw new Error(`timed out after ${Math.round((options.timeout ?? STEP_MS) / 1000)} s waiting for: ${what}`, { cause: err });
  }
}

/** page.waitForSelector, named as until is. */
export async function untilSelector(page, what, selector, options = {}) {
  try {
    return await page.waitForSelector(selector, options);
  } catch (err) {
    if (err?.name !== 'TimeoutError') throw err;
    throw new Error(`timed out after ${Math.round((options.timeout ?? STEP_MS) / 1000)} s waiting for: ${what} (${selector})`, { cause: err });
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
  await untilSelector(page, 'the workbench', '.monaco-workbench');
  return { browser, page };
}

// In the page: the row of view pane p whose text includes t is the tree's
// selection (what a command from the palette acts on).
function rowIsSelected(p, t) {
  const header = [...document.querySelectorAll('.pane-header')].find((h) => h.textContent.includes(p));
  const row = header && [...header.parentElement.querySelectorAll('.pane-body .monaco-list-row')].find((r) => r.textContent.includes(t));
  return !!row && row.getAttribute('aria-selected') === 'true';
}

// In the page: the active editor tab is the one named name.
function activeTabIs(name) {
  return [...document.querySelectorAll('.editor-group-container .tab.active')].some((t) => t.textContent.includes(name));
}

/** Helpers over one workbench page. */
export class Workbench {
  constructor(page, shots) {
    this.page = page;
    this.shots = shots;
    this.n = 0;
  }

  /** until, on this page. */
  until(what, fn, options, ...args) {
    return until(this.page, what, fn, options, ...args);
  }

  /** untilSelector, on this page. */
  selector(what, selector, options) {
    return untilSelector(this.page, what, selector, options);
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
      await this.until(`the command palette's ">" (for "${title}")`, (i) => i.value === '>', {}, input);
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
      // A notification arriving (say, an expiry) can close the palette
      // between finding the row and clicking it: then open it again.
      const clicked = row && await row.asElement().click().then(() => true, (err) => {
        if (!/detached|not clickable/i.test(String(err))) throw err;
        return false;
      });
      if (clicked) return;
      if (Date.now() > deadline) throw new Error(`the command palette never listed "${title}"`);
      if (row) continue; // the palette closed by itself: no Escape, which would also hide the notifications
      await this.page.keyboard.press('Escape');
    }
  }

  /** Waits for a quick input whose text includes title, replaces its value and accepts it. */
  async answer(title, value) {
    await this.until(`a quick input "${title}"`, (t) => {
      const w = document.querySelector('.quick-input-widget');
      return w && w.style.display !== 'none' && w.textContent.includes(t);
    }, {}, title);
    const input = await this.selector(`the input box of "${title}"`, '.quick-input-widget .quick-input-box input', { visible: true });
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
    await this.until(`the rows of the quick pick "${title}"`, () => {
      const w = document.querySelector('.quick-input-widget');
      const list = w && w.querySelector('.quick-input-list');
      return !list || list.style.display === 'none' || list.querySelectorAll('.monaco-list-row').length > 0;
    });
    // Gone: by the input's own title where title is in it, since the
    // widget's text can keep the last prompt into the next input; else by
    // the widget's text.
    const byTitle = await this.page.evaluate((t) =>
      !!document.querySelector('.quick-input-widget .quick-input-title')?.textContent.includes(t), title);
    await this.page.keyboard.press('Enter');
    const gone = (timeout) => this.page.waitForFunction((t, heading) => {
      const w = document.querySelector('.quick-input-widget');
      if (!w || w.style.display === 'none') return true;
      return heading ? !w.querySelector('.quick-input-title')?.textContent.includes(t) : !w.textContent.includes(t);
    }, { timeout }, title, byTitle).then(() => true, () => false);
    // A multi-select pick (the create options) has been seen to drop that
    // Enter on a loaded machine. Its OK button accepts it too; it is clicked
    // in the page, in the same task as the check that the input's own title
    // (not the widget's text, which can keep the last prompt) is still this
    // one, so it cannot land on the next input.
    const deadline = Date.now() + STEP_MS;
    while (!(await gone(5000))) {
      if (Date.now() > deadline) throw new Error(`the input "${title}" never accepted its answer`);
      await this.page.evaluate((t) => {
        const w = document.querySelector('.quick-input-widget');
        const heading = w && w.style.display !== 'none' && w.querySelector('.quick-input-title');
        if (!heading || !heading.textContent.includes(t)) return;
        const ok = [...w.querySelectorAll('.quick-input-action .monaco-button')].find((b) => b.textContent.trim() === 'OK' && b.offsetParent !== null);
        ok?.click();
      }, title);
    }
  }

  /** In the editor's own file dialog (title): go to dir, then click the file name, as a user would. */
  async pickFile(title, dir, name) {
    await this.until(`the file dialog "${title}"`, (t) => {
      const w = document.querySelector('.quick-input-widget');
      return w && w.style.display !== 'none' && w.textContent.includes(t);
    }, {}, title);
    const input = await this.selector(`the path box of "${title}"`, '.quick-input-widget .quick-input-box input', { visible: true });
    await input.evaluate((i, v) => {
      i.value = v;
      i.dispatchEvent(new Event('input', { bubbles: true }));
    }, dir.endsWith('/') ? dir : `${dir}/`);
    // The dialog's list re-renders as the folder's listing arrives: a click
    // that meets it is lost (or the row found is detached). Click until the
    // dialog has taken the file and closed.
    const deadline = Date.now() + STEP_MS;
    for (;;) {
      const row = await this.until(`${name} in the file dialog's list of ${dir}`, (n) => [...document.querySelectorAll('.quick-input-widget .quick-input-list .monaco-list-row')]
        .find((r) => r.textContent.includes(n)), {}, name);
      await row.asElement().click().catch((err) => {
        if (!/detached|not clickable/i.test(String(err))) throw err;
      });
      const closed = await this.page.waitForFunction((t) => {
        const w = document.querySelector('.quick-input-widget');
        return !w || w.style.display === 'none' || !w.textContent.includes(t);
      }, { timeout: 5000 }, title).then(() => true, () => false);
      if (closed) return;
      if (Date.now() > deadline) throw new Error(`timed out waiting for: the file dialog "${title}" to close after clicking ${name}`);
    }
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
    const what = present ? `a row "${text}" in the view "${pane}"` : `the row "${text}" to leave the view "${pane}"`;
    await this.until(what, (p, t, want) => {
      const header = [...document.querySelectorAll('.pane-header')].find((h) => h.textContent.includes(p));
      const body = header && header.parentElement.querySelector('.pane-body');
      const has = !!body && [...body.querySelectorAll('.monaco-list-row')].some((r) => r.textContent.includes(t));
      return has === want;
    }, { timeout }, pane, text, present);
  }

  /**
   * Clicks the tree row whose text includes text, as a user would, and makes
   * sure the click took. A tree re-renders its rows whenever its data
   * changes (a watch event, a refresh, a window that just loaded, a
   * directory's listing arriving), and a click that meets a re-render is
   * lost without any error: the row under the pointer at the press is gone
   * at the release (the click lands on the list, which clears the
   * selection), another row has moved to where it was, or a hover covers it.
   * So: press only where the row itself is under the pointer now, then wait
   * until the tree has selected that row; else click again.
   */
  async clickRow(pane, text) {
    const deadline = Date.now() + STEP_MS;
    for (let clicks = 0; ;) {
      await this.waitRow(pane, text);
      const took = await this.clickRowOnce(pane, text);
      if (took) return;
      if (took === false) clicks += 1;
      if (Date.now() > deadline) {
        throw new Error(`the row "${text}" in the view "${pane}" never took a click (${clicks} clicks, none selected it); ` +
          `rows: ${JSON.stringify(await this.rows(pane))}`);
      }
      await this.page.mouse.move(700, 450); // off the tree: a hover over the row goes
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /**
   * One click on the row, only where the row itself is under the pointer:
   * true when the tree selected it, false when it did not, undefined when
   * there was no row to click (gone, moved under something else).
   */
  async clickRowOnce(pane, text) {
    const point = await this.page.evaluate((p, t) => {
      const header = [...document.querySelectorAll('.pane-header')].find((h) => h.textContent.includes(p));
      const row = header && [...header.parentElement.querySelectorAll('.pane-body .monaco-list-row')].find((r) => r.textContent.includes(t));
      if (!row) return undefined;
      const box = row.getBoundingClientRect();
      const x = box.left + box.width / 2;
      const y = box.top + box.height / 2;
      return document.elementFromPoint(x, y)?.closest('.monaco-list-row') === row ? { x, y } : undefined;
    }, pane, text);
    if (!point) return undefined;
    await this.page.mouse.click(point.x, point.y);
    return this.page.waitForFunction(rowIsSelected, { timeout: 10_000 }, pane, text).then(() => true, () => false);
  }

  /**
   * Opens the file of a tree row (one whose item opens it on a click) in an
   * editor tab, the row found below parents (the rows above it, outermost
   * first, expanded as needed): clicks it as clickRow does until the tab
   * named name is the active one. A refresh that lands meanwhile can
   * collapse a parent again: each attempt walks the path anew. The open
   * reads the file through the resident, which can be slow: a click that
   * took is repeated (it opens the same tab) rather than given up on. A
   * notification about the file (the extension shows a read that failed so)
   * fails at once, with its text.
   */
  async openRow(pane, name, parents = []) {
    const deadline = Date.now() + STEP_MS;
    for (let clicks = 0; ;) {
      const path = [...parents, name];
      for (let i = 0; i + 1 < path.length; i += 1) {
        const open = await this.rowExpanded(pane, path[i]) && (await this.rows(pane)).some((r) => r.includes(path[i + 1]));
        if (!open) await this.expandRow(pane, path[i], path[i + 1]);
      }
      const took = await this.clickRowOnce(pane, name);
      if (took !== undefined) clicks += 1;
      if (took && await this.page.waitForFunction(activeTabIs, { timeout: 10_000 }, name).then(() => true, () => false)) return;
      // (VS Code says "Actual command not found" when an item's command went with a refresh: treeCommands.ts.)
      const errors = (await this.notifications()).filter((n) => n.includes(name) || /command not found/i.test(n));
      if (errors.length) throw new Error(`opening ${name} from the view "${pane}" failed: ${errors.join(' | ')}`);
      const editor = await this.text('.editor-group-container .editor-container');
      if (/could not be opened|unable to open/i.test(editor)) throw new Error(`opening ${name} from the view "${pane}" failed: the editor says ${editor.trim()}`);
      if (Date.now() > deadline) {
        throw new Error(`timed out waiting for: an editor tab "${name}" after ${clicks} clicks on its row in the view "${pane}"; ` +
          `tabs: ${JSON.stringify(await this.tabs())}; rows: ${JSON.stringify(await this.rows(pane))}`);
      }
      await this.page.mouse.move(700, 450);
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  /** The editor tabs' labels, the active one marked with a "*". */
  async tabs() {
    return this.page.evaluate(() => [...document.querySelectorAll('.editor-group-container .tab')]
      .map((t) => `${t.classList.contains('active') ? '*' : ''}${t.getAttribute('aria-label') || t.textContent.trim()}`));
  }

  /** Every notification's text: the toasts shown and, when the center is open, the rest. */
  async notifications() {
    return this.page.evaluate(() => [...new Set([...document.querySelectorAll('.notification-list-item')]
      .map((n) => n.getAttribute('aria-label') || n.textContent.trim()))]);
  }

  /** Clicks a tree row until child (a row below it) shows: a refresh that lands after the click collapses it again. */
  async expandRow(pane, text, child) {
    const deadline = Date.now() + STEP_MS;
    for (;;) {
      await this.clickRow(pane, text);
      const shown = await this.waitRow(pane, child, true, 3000).then(() => true, () => false);
      if (shown) return;
      if (Date.now() > deadline) throw new Error(`timed out waiting for: the row "${text}" in the view "${pane}" to show "${child}"`);
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
    const header = await this.until(`the view pane "${pane}"`, (p) =>
      [...document.querySelectorAll('.pane-header')].find((h) => h.textContent.includes(p)), {}, pane);
    if (await header.evaluate((h) => h.getAttribute('aria-expanded') !== 'true')) await header.asElement().click();
  }

  /** Clicks a title action (by its aria-label) of a view pane. */
  async paneAction(pane, label) {
    await this.expandPane(pane);
    // The view re-renders its title actions when its state changes (a
    // window that just loaded, a context key): a handle found just before
    // can be detached at the click. Retry, as clickRow does.
    const deadline = Date.now() + STEP_MS;
    for (;;) {
      try {
        const header = await this.until(`the view pane "${pane}"`, (p) =>
          [...document.querySelectorAll('.pane-header')].find((h) => h.textContent.includes(p)), {}, pane);
        await header.asElement().hover(); // a pane shows its title actions while hovered
        const action = await this.until(`the title action "${label}" of the view "${pane}"`, (p, l) => {
          const header = [...document.querySelectorAll('.pane-header')].find((h) => h.textContent.includes(p));
          return header && [...header.querySelectorAll('.action-label')].find((a) => (a.getAttribute('aria-label') || '').startsWith(l));
        }, {}, pane, label);
        await action.asElement().click();
        return;
      } catch (err) {
        if (Date.now() > deadline || !/detached|not clickable/i.test(String(err))) throw err;
        await new Promise((r) => setTimeout(r, 200));
      }
    }
  }

  /**
   * Gives the keyboard to the terminal whose tab names name, as a click on
   * its tab and into it does (the editor may have opened a shell of its own
   * beside it, say after a reload), and waits until it has it.
   */
  async focusTerminal(name = 'Resident') {
    const deadline = Date.now() + STEP_MS;
    for (;;) {
      const tab = await this.page.evaluateHandle((n) => [...document.querySelectorAll('.terminal-tabs-entry')]
        .filter((e) => e.offsetParent !== null).find((e) => e.textContent.includes(n)), name);
      if (tab.asElement()) await tab.asElement().click().catch(() => undefined);
      await this.page.click('.terminal-wrapper.active .xterm-screen').catch(() => undefined);
      const focused = await this.page.waitForFunction(() => {
        const a = document.activeElement;
        return a?.classList.contains('xterm-helper-textarea') && a.closest('.terminal-wrapper.active') !== null;
      }, { timeout: 3000 }).then(() => true, () => false);
      const ours = await this.page.evaluate((n) => {
        const tabs = [...document.querySelectorAll('.terminal-tabs-entry')].filter((e) => e.offsetParent !== null);
        if (tabs.length === 0) return true; // one terminal: the tab list is hidden
        const selected = tabs.find((e) => e.closest('.monaco-list-row')?.classList.contains('selected'));
        return !selected || selected.textContent.includes(n);
      }, name);
      if (focused && ours) return;
      if (Date.now() > deadline) throw new Error(`the terminal "${name}" never took the keyboard`);
    }
  }

  /** The terminal's visible text after the last occurrence of marker (rows joined, U+00A0 as spaces). */
  async terminalAfter(marker) {
    const rows = await this.text('.terminal-wrapper.active .xterm-rows');
    const at = rows.lastIndexOf(marker);
    return at < 0 ? undefined : rows.slice(at + marker.length);
  }

  /** Waits until something matching re shows after the last marker in the terminal (a prompt after a command's output). */
  async waitTerminalAfter(marker, re) {
    await this.until(`${re} after the last "${marker}" in the terminal`, (m, src) => {
      const rows = [...document.querySelectorAll('.terminal-wrapper.active .xterm-rows')].map((e) => e.textContent.replace(/\u00a0/g, ' ')).join('\n');
      const at = rows.lastIndexOf(m);
      return at >= 0 && new RegExp(src).test(rows.slice(at + m.length));
    }, {}, marker, re.source);
  }

  /** Sets a user setting in the Settings editor, as a user would: search for its key, type the value, leave the box. */
  async setSetting(key, value) {
    await this.command('Preferences: Open Settings (UI)');
    const search = await this.selector('the Settings editor\'s search box', '.settings-editor .suggest-input-container', { visible: true });
    await search.click();
    await this.page.keyboard.type(key);
    const box = await this.selector(`the setting ${key} in the Settings editor`, `.settings-editor [data-key="${key}"] input`, { visible: true });
    await box.click({ clickCount: 3 });
    await this.page.keyboard.down('Control');
    await this.page.keyboard.press('KeyA');
    await this.page.keyboard.up('Control');
    await this.page.keyboard.press('Backspace');
    await box.type(String(value));
    // The box re-renders when the settings change: keys that meet it are
    // lost (a Ctrl-A that did not select left "20" + "0" = "200"). Set the
    // text as the box would hold it typed alone, as answer() does.
    await box.evaluate((i, v) => {
      if (i.value !== v) {
        i.value = v;
        i.dispatchEvent(new Event('input', { bubbles: true }));
      }
    }, String(value));
    await this.page.keyboard.press('Tab');
  }

  /** Waits for a notification whose message includes text and returns its button labelled label. */
  async notificationButton(text, label) {
    return this.until(`a notification "${text}" with a button "${label}"`, (t, l) => {
      const toast = [...document.querySelectorAll('.notification-list-item')].find((n) => n.textContent.includes(t));
      return toast && [...toast.querySelectorAll('.monaco-button')].find((b) => b.textContent.trim() === l);
    }, {}, text, label);
  }

  /**
   * Clicks the button label of the notification that says text until that
   * notification is gone (its action ran and closed it): a notification
   * arriving beside it moves the toasts, and a click that meets the move is
   * lost, or lands on a button found just before and now detached.
   */
  async clickNotificationButton(text, label) {
    const deadline = Date.now() + STEP_MS;
    for (;;) {
      const button = await this.notificationButton(text, label);
      await button.asElement().click().catch((err) => {
        if (!/detached|not clickable/i.test(String(err))) throw err;
      });
      const gone = await this.page.waitForFunction((t) => ![...document.querySelectorAll('.notification-list-item')]
        .some((n) => n.textContent.includes(t)), { timeout: 5000 }, text).then(() => true, () => false);
      if (gone) return;
      if (Date.now() > deadline) throw new Error(`timed out waiting for: the notification "${text}" to close after a click on "${label}"`);
    }
  }

  // Editors and terminals render spaces as U+00A0: compare as plain text.
  async waitText(selector, text) {
    await this.until(`"${text}" in ${selector}`, (s, t) => [...document.querySelectorAll(s)]
      .some((e) => e.textContent.replace(/\u00a0/g, ' ').includes(t)), {}, selector, text);
  }

  async text(selector) {
    return this.page.evaluate((s) => [...document.querySelectorAll(s)].map((e) => e.textContent.replace(/\u00a0/g, ' ')).join('\n'), selector);
  }
}
