// Provider credentials live in the editor's SecretStorage only: never in
// settings, never in a log line. They are handed to the resident in
// initialize, where every value becomes a secret it scrubs from all output.
// Credentials with a lifetime (resident.credentialLifetimeSeconds) get their
// expiry fixed when they are entered; it is no secret and is kept in the
// global state, and sent as credentials_expire_at.
import * as vscode from 'vscode';
import { expireAtParam, expiryFor } from './expiry';

const KEY = 'resident.credentials';
const EXPIRY_KEY = 'resident.credentialsExpireAt';

// The credential each provider reads (docs/protocol.md §11.1); any other key
// is accepted too, and is still scrubbed.
const KNOWN_KEYS: Record<string, string> = { docker: 'docker_auth_config' };

export interface StoredCredentials {
  values: Record<string, string>;
  /** credentials_expire_at, when they have a lifetime. */
  expireAt?: string;
}

export class Credentials {
  constructor(private readonly secrets: vscode.SecretStorage, private readonly state: vscode.Memento) {}

  async get(provider: string): Promise<StoredCredentials> {
    const values = await this.values(provider);
    if (Object.keys(values).length === 0) return { values };
    return { values, expireAt: expireAtParam(this.state.get(`${EXPIRY_KEY}.${provider}`)) };
  }

  /** Asks for one credential (name, then the value in a password box) and stores it; false when the user gave up. */
  async ask(provider: string): Promise<boolean> {
    const name = await vscode.window.showInputBox({
      title: `Resident credentials for ${provider} (1/2): name`,
      prompt: 'The credential\'s key in initialize.credentials',
      value: KNOWN_KEYS[provider] ?? 'api_token',
      ignoreFocusOut: true,
      validateInput: (v) => (/^[A-Za-z0-9_.-]+$/.test(v) ? undefined : 'letters, digits, _ . - only'),
    });
    if (!name) return false;
    const value = await this.askValue(`Resident credentials for ${provider} (2/2): ${name}`);
    if (!value) return false;
    const all = await this.values(provider);
    all[name] = value;
    await this.store(provider, all);
    return true;
  }

  /**
   * "Sign In Again" after an expiry: a fresh value for each credential kept
   * (their names are known, so only the password boxes), or the full
   * question when none is kept. False when the user gave up.
   */
  async renew(provider: string): Promise<boolean> {
    const names = Object.keys(await this.values(provider));
    if (names.length === 0) return this.ask(provider);
    const fresh: Record<string, string> = {};
    for (const [i, name] of names.entries()) {
      const value = await this.askValue(`Sign in again to ${provider}${names.length > 1 ? ` (${i + 1}/${names.length})` : ''}: ${name}`);
      if (!value) return false;
      fresh[name] = value;
    }
    await this.store(provider, fresh);
    return true;
  }

  async forget(provider: string): Promise<void> {
    await this.secrets.delete(`${KEY}.${provider}`);
    await this.state.update(`${EXPIRY_KEY}.${provider}`, undefined);
  }

  private askValue(title: string): Thenable<string | undefined> {
    return vscode.window.showInputBox({
      title,
      prompt: 'Kept in the editor\'s secret storage and masked in everything the resident sends',
      password: true,
      ignoreFocusOut: true,
    });
  }

  // The lifetime counts from now: the moment the user entered them.
  private async store(provider: string, values: Record<string, string>): Promise<void> {
    await this.secrets.store(`${KEY}.${provider}`, JSON.stringify(values));
    const lifetime = vscode.workspace.getConfiguration('resident').get<number>('credentialLifetimeSeconds', 0);
    await this.state.update(`${EXPIRY_KEY}.${provider}`, expiryFor(lifetime, new Date()));
  }

  private async values(provider: string): Promise<Record<string, string>> {
    const stored = await this.secrets.get(`${KEY}.${provider}`);
    if (!stored) return {};
    try {
      return JSON.parse(stored) as Record<string, string>;
    } catch {
      return {};
    }
  }
}
