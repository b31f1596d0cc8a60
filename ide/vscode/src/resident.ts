// One resident child process and the JSON-RPC session with it. The
// extension spawns it on activation and again on "Restart"; its stdin is the
// pipe the editor holds, so when the editor goes the resident reads EOF and
// exits. Every way the process can end is reported as a state the views and
// the user see: never a silent dead view.
import { spawn, ChildProcess } from 'node:child_process';
import * as vscode from 'vscode';
import * as rpc from 'vscode-jsonrpc/node';
import { Capabilities, InitializeResult, Limits, PROTOCOL_VERSION } from './wire';
import { LaunchSettings, residentArgs } from './settings';
import { Notifications } from './notifications';
import { StoredCredentials } from './credentials';
import { isExpiredAnswer } from './expiry';

export type ResidentState =
  | { kind: 'starting' }
  | { kind: 'ready'; init: InitializeResult }
  | { kind: 'failed'; message: string } // initialize was refused; the process is stopped
  | { kind: 'exited'; message: string; credentialsExpired: boolean };

/** An error answer of the resident, with its kind (docs/protocol.md §6). */
export class ResidentError extends Error {
  /** kind: the closed set of §6 (or "unavailable"/"unsupported" for what never reached it); reason: data.reason, where one applies. */
  constructor(message: string, readonly kind: string, readonly code: number, readonly reason?: string) {
    super(message);
  }
}

export class Resident implements vscode.Disposable {
  private child?: ChildProcess;
  private conn?: rpc.MessageConnection;
  private stateValue: ResidentState = { kind: 'starting' };
  private expiredMessage?: string;
  private answeredExpired = false; // initialize was refused as expired: the exit that follows is already shown
  private stopping = false;
  private readonly changed = new vscode.EventEmitter<ResidentState>();
  readonly onDidChangeState = this.changed.event;
  readonly notifications = new Notifications();

  constructor(private readonly log: vscode.OutputChannel) {}

  get state(): ResidentState {
    return this.stateValue;
  }

  /** The announced capabilities; an absent one is false. */
  has(capability: string): boolean {
    return this.stateValue.kind === 'ready' && this.stateValue.init.capabilities[capability] === true;
  }

  get capabilities(): Capabilities {
    return this.stateValue.kind === 'ready' ? this.stateValue.init.capabilities : {};
  }

  get limits(): Limits | undefined {
    return this.stateValue.kind === 'ready' ? this.stateValue.init.limits : undefined;
  }

  /** Spawns the resident and initializes it. Credentials never reach a log (their expiry does: it is no secret). */
  async start(settings: LaunchSettings, credentials: StoredCredentials): Promise<void> {
    this.stopping = false;
    this.expiredMessage = undefined;
    this.answeredExpired = false;
    this.setState({ kind: 'starting' });
    const env = { ...process.env };
    if (settings.dockerHost) env.DOCKER_HOST = settings.dockerHost;
    const args = residentArgs(settings);
    this.log.appendLine(`starting ${settings.binary} ${args.join(' ')}`);
    const child = spawn(settings.binary, args, { stdio: ['pipe', 'pipe', 'pipe'], env });
    this.child = child;
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (text: string) => this.log.append(text)); // scrubbed by the resident
    const spawned = new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
    child.on('exit', (code, signal) => this.exited(child, code, signal));
    try {
      await spawned;
    } catch (err) {
      this.setState({ kind: 'exited', message: `cannot start ${settings.binary}: ${(err as Error).message}`, credentialsExpired: false });
      return;
    }
    const conn = rpc.createMessageConnection(new rpc.StreamMessageReader(child.stdout!), new rpc.StreamMessageWriter(child.stdin!));
    this.conn = conn;
    this.notifications.attach(conn);
    conn.onNotification('resident/credentials_expired', (p: { message: string }) => {
      this.expiredMessage = p.message;
    });
    conn.onError(([err]) => this.log.appendLine(`connection error: ${err.message}`));
    conn.listen();
    const params: Record<string, unknown> = { protocol_version: PROTOCOL_VERSION, install_id: settings.installId, credentials: credentials.values };
    if (settings.tagPrefix) params.tag_prefix = settings.tagPrefix;
    if (credentials.expireAt) {
      params.credentials_expire_at = credentials.expireAt;
      this.log.appendLine(`the credentials expire at ${credentials.expireAt}`);
    }
    try {
      const init = await conn.sendRequest<InitializeResult>('initialize', params);
      this.log.appendLine(`resident ${init.resident_version}, provider ${init.provider.name} ${init.provider.version}; ` +
        `sandboxes owned under ${init.owner_tag}=${settings.installId}`);
      this.log.appendLine(`capabilities: ${Object.entries(init.capabilities).filter(([, on]) => on).map(([name]) => name).join(', ')}`);
      this.setState({ kind: 'ready', init });
    } catch (err) {
      const message = describe(err);
      this.log.appendLine(`initialize failed: ${message}`);
      if (err instanceof rpc.ResponseError && isExpiredAnswer(err.data?.kind, err.code)) {
        // Expired before the session began (§3.5): the resident exits 3 by
        // itself; the user needs to sign in again, not to retry.
        this.answeredExpired = true;
        this.setState({ kind: 'exited', message: `the resident's credentials expired (${this.expiredMessage ?? err.message})`, credentialsExpired: true });
      } else {
        this.setState({ kind: 'failed', message });
      }
      this.stopChild();
    }
  }

  /** Sends a request; an error answer becomes a ResidentError with its kind. */
  async request<R>(method: string, params?: object, token?: vscode.CancellationToken): Promise<R> {
    if (this.stateValue.kind !== 'ready' || !this.conn) {
      throw new ResidentError(`the resident is not running (${this.describeState()})`, 'unavailable', 0);
    }
    try {
      return await (token ? this.conn.sendRequest<R>(method, params ?? {}, token) : this.conn.sendRequest<R>(method, params ?? {}));
    } catch (err) {
      if (err instanceof rpc.ResponseError) {
        const kind = (err.data && typeof err.data.kind === 'string') ? err.data.kind : 'internal';
        const reason = (err.data && typeof err.data.reason === 'string') ? err.data.reason : undefined;
        throw new ResidentError(err.message, kind, err.code, reason);
      }
      throw err;
    }
  }

  describeState(): string {
    switch (this.stateValue.kind) {
      case 'starting': return 'starting';
      case 'ready': return `${this.stateValue.init.provider.name}, ready`;
      case 'failed': return `initialize failed: ${this.stateValue.message}`;
      case 'exited': return this.stateValue.message;
    }
  }

  /** Shutdown for a restart: ask politely, then close stdin (EOF), which ends it too. */
  async stop(): Promise<void> {
    this.stopping = true;
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return; // already gone (a kill sets only signalCode)
    const gone = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    if (this.conn && this.stateValue.kind === 'ready') {
      await Promise.race([this.conn.sendRequest('shutdown').catch(() => undefined), gone]);
    }
    this.stopChild();
    await gone;
  }

  dispose(): void {
    this.stopping = true;
    this.stopChild();
    this.changed.dispose();
  }

  private stopChild(): void {
    this.conn?.dispose();
    this.conn = undefined;
    this.child?.stdin?.end(); // EOF: the resident cleans up and exits 0
  }

  private exited(child: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
    if (child !== this.child) return;
    this.conn?.dispose();
    this.conn = undefined;
    this.notifications.failAll(new ResidentError('the resident exited', 'unavailable', 0));
    if (this.stopping || this.stateValue.kind === 'failed' || this.answeredExpired) return;
    const credentialsExpired = code === 3 || this.expiredMessage !== undefined;
    const how = signal ? `was killed by ${signal}` : `exited with code ${code}`;
    const message = credentialsExpired
      ? `the resident's credentials expired (${this.expiredMessage ?? how})`
      : `the resident ${how}`;
    this.log.appendLine(message);
    this.setState({ kind: 'exited', message, credentialsExpired });
  }

  private setState(state: ResidentState): void {
    this.stateValue = state;
    this.changed.fire(state);
  }
}

export function describe(err: unknown): string {
  if (err instanceof ResidentError) return `${err.message} (${err.kind})`;
  if (err instanceof rpc.ResponseError) return `${err.message} (${err.data?.kind ?? err.code})`;
  return err instanceof Error ? err.message : String(err);
}
