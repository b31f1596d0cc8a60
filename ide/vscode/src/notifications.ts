// Routes the resident's notifications to whoever waits for them: exec output
// by exec_id, file data by stream_id, pull progress by image, sandbox
// changes (sandbox/watch) to the views. Handlers run
// synchronously in the order the connection delivers messages, so every
// chunk of an exec or a read is handled before its answer (protocol §10.3).
import * as vscode from 'vscode';
import * as rpc from 'vscode-jsonrpc/node';
import { PullProgress, SandboxChange, fromBase64 } from './wire';

/** offset: where exec/attach resumes after this chunk (detached execs only, §5.1). */
export type OutputSink = (stream: 'stdout' | 'stderr', bytes: Buffer, offset?: number) => void;
export type DataSink = (bytes: Buffer) => void;


export class Notifications {
  private readonly execs = new Map<string, OutputSink>();
  private readonly streams = new Map<string, DataSink>();
  private readonly pull = new vscode.EventEmitter<PullProgress>();
  private readonly watchEvent = new vscode.EventEmitter<SandboxChange>();
  private readonly closers = new Set<(err: Error) => void>();
  readonly onPullProgress = this.pull.event;
  readonly onWatchEvent = this.watchEvent.event;
  private counter = 0;

  attach(conn: rpc.MessageConnection): void {
    conn.onNotification('exec/output', (p: { exec_id: string; stream: 'stdout' | 'stderr'; data: string; offset?: number }) => {
      this.execs.get(p.exec_id)?.(p.stream, fromBase64(p.data), p.offset);
    });
    // store/read_file and sandbox/read_file both stream as store/data.
    conn.onNotification('store/data', (p: { stream_id: string; data: string }) => {
      this.streams.get(p.stream_id)?.(fromBase64(p.data));
    });
    conn.onNotification('sandbox/pull_progress', (p: PullProgress) => this.pull.fire(p));
    conn.onNotification('sandbox/changed', (p: SandboxChange) => this.watchEvent.fire(p));
  }

  /** A fresh id for an exec or a stream of this session. */
  nextId(kind: string): string {
    this.counter += 1;
    return `vscode-${kind}-${Date.now().toString(36)}-${this.counter}`;
  }

  /** Routes an exec's output to sink until the returned disposable. Register before sending the exec. */
  routeExec(execId: string, sink: OutputSink, onClosed?: (err: Error) => void): vscode.Disposable {
    this.execs.set(execId, sink);
    if (onClosed) this.closers.add(onClosed);
    return new vscode.Disposable(() => {
      // Only its own: a terminal that follows the exec again (after a
      // restart) has routed the id anew by the time the old follow ends.
      if (this.execs.get(execId) === sink) this.execs.delete(execId);
      if (onClosed) this.closers.delete(onClosed);
    });
  }

  routeStream(streamId: string, sink: DataSink): vscode.Disposable {
    this.streams.set(streamId, sink);
    return new vscode.Disposable(() => this.streams.delete(streamId));
  }

  /** The resident is gone: tell every open route. */
  failAll(err: Error): void {
    for (const close of [...this.closers]) close(err);
  }
}
