/**
 * The message box under a saved session card (the trace a cell keeps once its
 * task has ended): the live panel's box (messageBox.ts), brought back where it
 * can act. It shows when the card is rendered in a notebook whose kernel holds
 * the card's session as its current one (sessionLink.ts, `boxView`): enabled
 * once that session has ended, and Enter gives it its next task, by the path
 * `%grinta continue TASK` takes. The kernel displays the panel again in reply,
 * and `shown` puts it where the card is (nextTask.ts), so the new task's steps
 * show there. Disabled, it says why (the session runs; the notebook is not
 * trusted); with no kernel, another kernel, or another session, nothing shows.
 *
 * The box only ever sends `continue`: it has no say mode here, and the kernel
 * takes a task only for its current session once it has ended, so nothing
 * sent from it can decide a proposal. A task the kernel refuses comes back in
 * the box with the kernel's reason; nothing typed is lost.
 */

import { BoxView, boxView, SessionLink, Shown } from '../sessionLink';
import { h } from './dom';
import { BoxMessage, BoxModel, MessageBox } from './messageBox';

export interface TraceBoxOptions {
  session: string;
  /** The card's session log, for the command that brings the session back. */
  log: string | null;
  link: SessionLink;
  /** Whether the card's output is trusted (the panel is a widget: untrusted, it would not show). */
  trusted: boolean;
  /** Put the kernel's new display of the panel in the card's place. */
  shown: (display: Shown) => void;
}

export const GIVEN_NOTE = 'The next task is given: the live panel follows it here';

export class TraceBox {
  readonly node: HTMLElement;
  private box: MessageBox | null = null;
  private readonly model: LinkedBoxModel;
  private readonly unwatch: () => void;

  constructor(private readonly options: TraceBoxOptions) {
    this.node = h('div', { class: 'grinta-trace-box', 'data-session': options.session });
    this.model = new LinkedBoxModel(options);
    this.unwatch = options.link.watch(() => this.draw());
    this.draw();
  }

  dispose(): void {
    this.unwatch();
    this.box?.dispose();
    this.box = null;
  }

  private draw(): void {
    const { link, session, log, trusted } = this.options;
    const view: BoxView = boxView(link.state, session, log, trusted);
    if (view?.kind !== 'box') {
      this.box?.dispose();
      this.box = null;
      this.node.replaceChildren(...(view ? [h('div', { class: 'grinta-box-hint' }, view.text)] : []));
      return;
    }
    this.model.update(view.mode, view.status);
    if (!this.box) {
      this.box = new MessageBox(this.model);
      this.node.replaceChildren(this.box.node);
    }
  }
}

/**
 * The box's model, over the link instead of a widget: `mode` and `status` come from
 * `boxView`, a task goes to the kernel, a refused one comes back in `draft`.
 */
class LinkedBoxModel implements BoxModel {
  private readonly state: Record<string, unknown>;
  private readonly handlers = new Map<string, Set<() => void>>();

  constructor(private readonly options: TraceBoxOptions) {
    // Keyed by session: what is typed outlives a redraw of the card (a new trace for it).
    this.state = { key: `trace:${options.session}`, mode: 'off', status: '', draft: '' };
  }

  get(name: string): unknown {
    return this.state[name];
  }

  on(event: string, callback: () => void): void {
    if (!this.handlers.has(event)) this.handlers.set(event, new Set());
    this.handlers.get(event)?.add(callback);
  }

  off(event: string, callback: () => void): void {
    this.handlers.get(event)?.delete(callback);
  }

  update(mode: string, status: string): void {
    // A word of the kernel's (a refusal, "given") stays until the state itself says something.
    const changes: Record<string, unknown> = { mode };
    if (status || mode !== this.state.mode) changes.status = status;
    this.set(changes);
  }

  send(message: BoxMessage): void {
    if (message.event !== 'continue') return; // the saved card's box has no other word
    const { link, session, shown } = this.options;
    this.state.draft = ''; // so a text refused twice comes back twice
    void link.continueTask(session, message.text, shown).then(answer => {
      if (answer.ok) {
        this.set({ status: GIVEN_NOTE });
      } else {
        this.set({ draft: message.text, status: answer.message });
      }
    });
  }

  private set(changes: Record<string, unknown>): void {
    const changed = Object.keys(changes).filter(name => this.state[name] !== changes[name]);
    Object.assign(this.state, changes);
    changed.forEach(name => this.handlers.get(`change:${name}`)?.forEach(callback => callback()));
  }
}
