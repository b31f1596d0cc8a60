// Provider credentials live in the editor's SecretStorage only: never in
// settings, never in a log line. They are handed to the resident in
// initialize, where every value becomes a secret it scrubs from all output.
import * as vscode from 'vscode';

const KEY = 'resident.credentials';

// The credential each provider reads (docs/protocol.md §11.1); any other key
// is accepted too, and is still scrubbed.
const KNOWN_KEYS: Record<string, string> = { docker: 'docker_auth_config' };

export class Credentials {
  constructor(private readonly secrets: vscode.SecretStorage) {}

  async get(provider: string): Promise<Record<string, string>> {
    const stored = await this.secrets.get(`${KEY}.${provider}`);
    if (!stored) return {};
    try {
      return JSON.parse(stored) as Record<string, string>;
    } catch {
      return {};
    }
  }

  /** Asks for one credential and stores it; false when the user gave up. */
  async ask(provider: string): Promise<boolean> {
    const name = await vscode.window.showInputBox({
      title: `Resident credentials for ${provider} (1/2): name`,
      prompt: 'The credential\'s key in initialize.credentials',
      value: KNOWN_KEYS[provider] ?? 'api_token',
      ignoreFocusOut: true,
      validateInput: (v) => (/^[A-Za-z0-9_.-]+$/.test(v) ? undefined : 'letters, digits, _ . - only'),
    });
    if (!name) return false;
    const value = await vscode.window.showInputBox({
      title: `Resident credentials for ${provider} (2/2): ${name}`,
      prompt: 'Kept in the editor\'s secret storage and masked in everything the resident sends',
      password: true,
      ignoreFocusOut: true,
    });
    if (!value) return false;
    const all = await this.get(provider);
    all[name] = value;
    await this.secrets.store(`${KEY}.${provider}`, JSON.stringify(all));
    return true;
  }

  async forget(provider: string): Promise<void> {
    await this.secrets.delete(`${KEY}.${provider}`);
  }
}
