/**
 * The live panel's message box (grinta_jupyter/jupyter/card.py, `MessageBoxWidget`),
 * also the box under a saved trace (traceBox.ts, with a model over the kernel link).
 *
 * One box: while the session runs (`mode` "say") Enter sends the text to the
 * model, which reads it at its next turn; once the session has ended (`mode`
 * "continue") Enter gives it as the session's next task. The message says
 * which the box offered (`{"event": "say" | "continue", "text"}`), so the
 * kernel never turns a word meant for the model into a task, nor the reverse;
 * when the session changed meanwhile, the kernel hands the text back in
 * `draft`. The box is cleared once the text is sent; an empty box sends
 * nothing. Enter in the box goes nowhere else (not to a card's action bar, not
 * to the notebook), and nothing here ever decides a proposal.
 *
 * What is typed survives a new view of the widget (the kernel redraws the
 * cell's display after each step), and so does the focus: a box that had it
 * takes it back. Both are kept by the widget's `key`. While the box holds unsent text, a card that starts waiting
 * does not take the focus (liveCard.ts asks `typingInBox`), so an Enter meant
 * for the message can never approve a step.
 */

import { h } from './dom';

export type BoxEvent = 'say' | 'continue';

export interface BoxMessage {
  event: BoxEvent;
  text: string;
}

/** The part of an anywidget model the box uses. */
export interface BoxModel {
  get(name: string): unknown;
  on(event: string, callback: () => void): void;
  off(event: string, callback: () => void): void;
  send(message: BoxMessage): void;
}

const PLACEHOLDERS: Record<string, string> = {
  say: 'Tell the model something; it reads it at its next turn (Enter sends)',
  continue: 'The session has ended: give it a next task (Enter continues the session)',
  off: 'The session cannot take messages now'
};

/** What Enter sends in `mode` with `text`, or null (nothing to send, or the box is off). */
export function boxMessage(mode: unknown, text: string): BoxMessage | null {
  const trimmed = text.trim();
  if (!trimmed || (mode !== 'say' && mode !== 'continue')) return null;
  return { event: mode, text: trimmed };
}

interface BoxState {
  text: string;
  focused: boolean;
  draftSeen: string;
}

/**
 * The page's boxes, by the widget's `key` (a trait the kernel sets once per box). Kept on
 * `globalThis`, not in this module: a front end may load the module again, or hand each
 * view its own wrapper of the model, and the state must outlive a view either way.
 */
interface Boxes {
  states: Map<string, BoxState>;
  drafts: Set<string>;
}

function boxes(): Boxes {
  const g = globalThis as unknown as { __grintaBoxes?: Boxes };
  g.__grintaBoxes ??= { states: new Map(), drafts: new Set() };
  return g.__grintaBoxes;
}

let unkeyed = 0;

/** Boxes holding unsent text, across every widget of the page. */
function drafts(): Set<string> {
  return boxes().drafts;
}

/** Whether someone is writing a message in a grinta box: cards then leave the focus alone. */
export function typingInBox(): boolean {
  return drafts().size > 0;
}

export class MessageBox {
  readonly node: HTMLElement;
  private readonly input: HTMLInputElement;
  private readonly statusLine: HTMLElement;
  private readonly state: BoxState;
  private readonly key: string;
  private readonly onChange = () => this.draw();

  constructor(private readonly model: BoxModel) {
    const key = model.get('key');
    this.key = typeof key === 'string' && key ? key : `unkeyed-${++unkeyed}`;
    let state = boxes().states.get(this.key);
    if (!state) {
      state = { text: '', focused: false, draftSeen: '' };
      boxes().states.set(this.key, state);
    }
    this.state = state;
    this.input = h('input', {
      type: 'text',
      class: 'grinta-box-input',
      'aria-label': 'Message to the session'
    });
    this.input.value = state.text;
    this.input.addEventListener('input', () => this.typed());
    this.input.addEventListener('keydown', (event: KeyboardEvent) => this.keydown(event));
    this.input.addEventListener('focus', () => (this.state.focused = true));
    this.input.addEventListener('blur', (event: FocusEvent) => {
      // The reader went to another element: the box lets go. A blur to nowhere (the box
      // removed by a redraw, the window left) keeps `focused`, so the box's next view
      // takes the focus back, if nothing else has it by then.
      this.state.focused = !event.relatedTarget;
    });
    this.statusLine = h('div', { class: 'grinta-box-status', role: 'status' });
    this.node = h('div', { class: 'grinta-output grinta-box' }, this.input, this.statusLine);
    for (const name of ['mode', 'status', 'draft']) model.on(`change:${name}`, this.onChange);
    this.draw();
    if (state.focused) this.refocus();
  }

  dispose(): void {
    for (const name of ['mode', 'status', 'draft']) this.model.off(`change:${name}`, this.onChange);
  }

  private get mode(): string {
    const mode = this.model.get('mode');
    return typeof mode === 'string' && mode in PLACEHOLDERS ? mode : 'off';
  }

  private draw(): void {
    const mode = this.mode;
    this.input.placeholder = PLACEHOLDERS[mode];
    this.input.disabled = mode === 'off';
    this.node.setAttribute('data-mode', mode);
    const draft = String(this.model.get('draft') ?? '');
    if (draft && draft !== this.state.draftSeen) {
      // Handed back by the kernel: not sent. Put it back unless something new was typed.
      this.state.draftSeen = draft;
      if (!this.input.value.trim()) this.setText(draft);
    }
    this.statusLine.textContent = String(this.model.get('status') ?? '');
  }

  private typed(): void {
    this.setText(this.input.value, false);
  }

  private setText(text: string, toInput = true): void {
    this.state.text = text;
    if (toInput) this.input.value = text;
    if (text.trim()) drafts().add(this.key);
    else drafts().delete(this.key);
  }

  private keydown(event: KeyboardEvent): void {
    if (event.key !== 'Enter' || event.shiftKey || event.isComposing) return;
    // Enter is the box's own: not the notebook's, not a card's action bar.
    event.preventDefault();
    event.stopPropagation();
    const message = boxMessage(this.mode, this.input.value);
    if (!message) return;
    this.setText('');
    this.state.draftSeen = '';
    this.statusLine.textContent = 'sending…';
    this.model.send(message);
  }

  /** A new view of a box that had the focus takes it back, once it is on the page. */
  private refocus(): void {
    let tries = 0;
    const attempt = () => {
      if (!this.input.isConnected) {
        if (++tries < 50) setTimeout(attempt, 50);
        return;
      }
      const active = document.activeElement;
      if (this.state.focused && (!active || active === document.body)) {
        this.input.focus({ preventScroll: true });
      }
    };
    setTimeout(attempt, 0);
  }
}
