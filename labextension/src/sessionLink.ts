/**
 * A page's link to one notebook kernel's grinta sessions, for the saved session
 * cards: which session is the kernel's current one, whether it has ended, and
 * giving it a next task. The kernel's side, and the messages, are in
 * grinta_jupyter/jupyter/sessionlink.py:
 *
 *     page → kernel   comm_open grinta.session  {}
 *     kernel → page   {"current": {"session", "state": "running" | "ended"} | null}
 *                     at once, then whenever it changes
 *     page → kernel   {"request": "continue", "session", "task", "ask": N}
 *     kernel → page   display_data in reply to it (the panel, shown again),
 *                     then {"answer": N, "ok", "message"}
 *
 * No JupyterLab here: the link talks through a `LinkChannel` (nextTask.ts makes
 * one of a kernel comm), so it is unit-tested as is. The link opens its comm
 * once a card watches it and there is a kernel (`wake`, again whenever the
 * kernel is ready); a kernel that closes it (no grinta loaded there) leaves it
 * `refused` until `retry` (a grinta output appeared) or `reset` (the kernel
 * changed, restarted or died: what it said is void). What a card shows for a
 * link's state is `boxView`, below.
 */

import { SESSION_MIME } from './schema';
import { WIDGET_VIEW_MIME } from './traceUpdate';

export const SESSION_TARGET = 'grinta.session';

export type SessionState = 'running' | 'ended';

/** The kernel's current session. */
export interface Current {
  session: string;
  state: SessionState;
}

/**
 * Where a link stands: `closed` (no kernel, or nobody asked yet), `asking`
 * (the comm is open, no word yet), `open` (the kernel's current session, or
 * null for none), `refused` (the kernel closed the comm: no grinta there).
 */
export type LinkStatus =
  | { kind: 'closed' }
  | { kind: 'asking' }
  | { kind: 'open'; current: Current | null }
  | { kind: 'refused' };

/** The kernel's answer to a next task: given, or why not. */
export interface Answer {
  ok: boolean;
  message: string;
}

/** A display the kernel sent in reply to a task: the panel, for the card's output. */
export interface Shown {
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

/** What the link needs of a kernel comm. */
export interface LinkChannel {
  /** Open it: `receive` gets each message's data; `closed` when the kernel closes it. */
  open(receive: (data: unknown) => void, closed: () => void): void;
  /** Send `data`; `iopub` gets the kernel's output messages in reply to it. */
  send(data: Record<string, unknown>, iopub: (type: string, content: unknown) => void): void;
  close(): void;
}

/** Longest task sent (the session refuses longer ones with its own word; this only bounds the message). */
export const MAX_TASK_CHARS = 20_000;

interface Ask {
  resolve: (answer: Answer) => void;
}

export class SessionLink {
  private status: LinkStatus = { kind: 'closed' };
  private channel: LinkChannel | null = null;
  private readonly watchers = new Set<() => void>();
  private readonly asks = new Map<number, Ask>();
  private nextAsk = 0;

  /** `connect` makes a channel to the kernel now, or null when there is none. */
  constructor(private readonly connect: () => LinkChannel | null) {}

  get state(): LinkStatus {
    return this.status;
  }

  /** Call `watcher` on every change (the comm opens on the first watcher); returns the unwatch. */
  watch(watcher: () => void): () => void {
    this.watchers.add(watcher);
    this.wake();
    return () => {
      this.watchers.delete(watcher);
    };
  }

  /** The kernel changed, restarted or died: whatever it said is void (`wake` asks the next). */
  reset(): void {
    this.drop('the kernel restarted or changed before it answered: nothing was given');
  }

  /** Ask the kernel, if nobody has since the last `reset` and a card watches. */
  wake(): void {
    if (this.status.kind !== 'closed' || this.watchers.size === 0) return;
    const channel = this.connect();
    if (!channel) return;
    this.channel = channel;
    this.set({ kind: 'asking' });
    try {
      channel.open(
        data => this.receive(channel, data),
        () => this.closedBy(channel)
      );
    } catch {
      this.channel = null;
      this.set({ kind: 'closed' });
    }
  }

  /** A grinta output appeared: a kernel that had refused may have the extension now. */
  retry(): void {
    if (this.status.kind === 'refused') {
      this.status = { kind: 'closed' };
      this.wake();
    }
  }

  /** Close the comm for good (the notebook closed). */
  dispose(): void {
    this.watchers.clear();
    this.drop('the notebook closed');
  }

  /**
   * Give `session` the next task `task`. `shown` gets the panel the kernel displays
   * for it (display data with the widget view and this session's trace). Resolves
   * with the kernel's answer; when the link cannot carry it, with why not.
   */
  continueTask(session: string, task: string, shown: (display: Shown) => void): Promise<Answer> {
    const channel = this.channel;
    if (this.status.kind !== 'open' || !channel) {
      return Promise.resolve({ ok: false, message: 'not sent: the kernel is not linked' });
    }
    if (task.length > MAX_TASK_CHARS) {
      return Promise.resolve({
        ok: false,
        message: `not sent: a task is at most ${MAX_TASK_CHARS.toLocaleString('en-US')} characters`
      });
    }
    const ask = ++this.nextAsk;
    return new Promise<Answer>(resolve => {
      this.asks.set(ask, { resolve });
      try {
        channel.send({ request: 'continue', session, task, ask }, (type, content) => {
          const display = panelDisplay(type, content, session);
          if (display) shown(display);
        });
      } catch {
        this.asks.delete(ask);
        resolve({ ok: false, message: 'not sent: the kernel connection is gone' });
      }
    });
  }

  private receive(channel: LinkChannel, data: unknown): void {
    if (channel !== this.channel) return;
    const current = readCurrent(data);
    if (current !== undefined) {
      this.set({ kind: 'open', current });
      return;
    }
    const answer = readAnswer(data);
    if (answer) {
      const ask = this.asks.get(answer.ask);
      this.asks.delete(answer.ask);
      ask?.resolve({ ok: answer.ok, message: answer.message });
    }
  }

  private closedBy(channel: LinkChannel): void {
    if (channel !== this.channel) return;
    this.channel = null;
    this.failAsks('not sent: the kernel closed the link');
    this.set({ kind: 'refused' });
  }

  private drop(why: string): void {
    const channel = this.channel;
    this.channel = null;
    this.failAsks(why);
    if (channel) {
      try {
        channel.close();
      } catch {
        // already gone with its kernel
      }
    }
    this.set({ kind: 'closed' });
  }

  private failAsks(message: string): void {
    const pending = [...this.asks.values()];
    this.asks.clear();
    pending.forEach(ask => ask.resolve({ ok: false, message }));
  }

  private set(status: LinkStatus): void {
    this.status = status;
    [...this.watchers].forEach(watcher => watcher());
  }
}

/** The current session a kernel message announces (null: none), or undefined when it announces none. */
export function readCurrent(data: unknown): Current | null | undefined {
  if (!isObject(data) || !('current' in data)) return undefined;
  const current = data.current;
  if (current === null) return null;
  if (
    isObject(current) &&
    typeof current.session === 'string' &&
    current.session &&
    (current.state === 'running' || current.state === 'ended')
  ) {
    return { session: current.session, state: current.state };
  }
  return undefined;
}

/** A kernel's answer to the task asked as `ask`, or null when `data` is not one. */
export function readAnswer(data: unknown): { ask: number; ok: boolean; message: string } | null {
  if (!isObject(data) || typeof data.answer !== 'number' || typeof data.ok !== 'boolean') return null;
  return { ask: data.answer, ok: data.ok, message: typeof data.message === 'string' ? data.message : '' };
}

/**
 * The panel among the kernel's replies to a task: a `display_data` holding the
 * widget view and the trace of `session`. Anything else is not put in a card.
 */
export function panelDisplay(type: string, content: unknown, session: string): Shown | null {
  if (type !== 'display_data' || !isObject(content) || !isObject(content.data)) return null;
  const data = content.data;
  const trace = data[SESSION_MIME];
  if (!(WIDGET_VIEW_MIME in data) || !isObject(trace) || trace.session !== session) return null;
  if (!Array.isArray(trace.steps)) return null;
  return { data, metadata: isObject(content.metadata) ? content.metadata : {} };
}

/** What a saved card shows under its trace: the box (enabled or not, and why), a hint, or nothing. */
export type BoxView =
  | { kind: 'box'; mode: 'continue' | 'off'; status: string }
  | { kind: 'hint'; text: string }
  | null;

export const RUNNING_NOTE = 'The session is running: talk to it in its live panel';
export const UNTRUSTED_NOTE =
  'This notebook is not trusted, so the live panel cannot show in it: trust it (Trust Notebook, ' +
  'in the command palette), or give the next task in a cell with %grinta continue TASK';

/**
 * What the saved card of `session` shows for a link in `status`. Only the kernel's
 * current session gets the box, enabled once it has ended and the notebook is
 * trusted (the panel that shows the next task is a widget, which an untrusted
 * notebook does not render); a kernel with grinta but no session gets the
 * command that brings this one back (`log`: the card's session log); any other
 * card, and one without a kernel that answers, shows nothing.
 */
export function boxView(status: LinkStatus, session: string, log: string | null, trusted: boolean): BoxView {
  if (status.kind !== 'open') return null;
  const current = status.current;
  if (current === null) {
    return log
      ? { kind: 'hint', text: `To give this session a next task here: %grinta resume ${quoted(log)}` }
      : null;
  }
  if (current.session !== session) return null;
  if (current.state === 'running') return { kind: 'box', mode: 'off', status: RUNNING_NOTE };
  if (!trusted) return { kind: 'box', mode: 'off', status: UNTRUSTED_NOTE };
  return { kind: 'box', mode: 'continue', status: '' };
}

/** A path as one word of a magic's line (shlex rules): quoted when it must be. */
export function quoted(path: string): string {
  if (/^[\w@%+=:,./-]+$/.test(path)) return path;
  return `'${path.replace(/'/g, `'"'"'`)}'`;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
