/**
 * A step card in the live panel: the saved trace's card (stepCard.ts) plus,
 * while the step waits for a decision, the action bar (actionBar.ts) and the
 * hunk checkboxes of a multi-hunk write (review.ts).
 *
 * It reads a widget model (grinta_jupyter/jupyter/card.py, an anywidget):
 * `payload` (the step payload of docs/mime-schema.md, or a session payload
 * when `kind` is "session"), `pending`, `status` (the kernel's word on the
 * last edit), `editable` (the call's arguments as the model sent them, for
 * the edit form) and `key` (names the card to the page, for its review).
 * What the reviewer decides goes back with `model.send`.
 */

import { parseStep, Step } from '../schema';
import {
  approvalMessage,
  CardMessage,
  editDraft,
  editMessage,
  primaryAction,
  selectableHunks,
  vetoMessage
} from '../review';
import { editBar, EditForm, hunkReasonInput, reviewBar, vetoBar } from './actionBar';
import { h } from './dom';
import { typingInBox } from './messageBox';
import { sessionCard } from './sessionCard';
import { renderStep, stepCard } from './stepCard';

/** The part of an anywidget model the card uses. */
export interface CardModel {
  get(name: string): unknown;
  on(event: string, callback: () => void): void;
  off(event: string, callback: () => void): void;
  send(message: CardMessage): void;
}

type Mode = 'review' | 'veto' | 'edit';

const TRAITS = ['payload', 'pending', 'status', 'editable', 'kind'];

/**
 * Where the review stands: kept per card, not per view, because the front end
 * draws a new view of the panel whenever the kernel updates the cell's display
 * (after each step, and when something is said), and a half-typed edit or
 * veto reason, or the hunks unchecked, must survive that. A view's `model` is
 * no key for it: anywidget hands each view a wrapper of its own. So the card's
 * `key` trait names it, and the reviews live on `globalThis`, which outlives a
 * second load of this module too (as the message box's text does). A review
 * ends when its card stops waiting.
 */
interface Review {
  mode: Mode;
  selected: Set<number>;
  total: number;
  hunkReason: string;
  /** The veto's reason, as typed so far. */
  vetoReason: string;
  /** A field of the veto or edit form had the focus, and no other element took it since. */
  focused: boolean;
  form: EditForm | null;
  /** The payload this review is of (JSON): a different one starts a new review. */
  seen: string | null;
  /**
   * An approval or a veto went to the kernel and it has not answered yet: the bar's buttons
   * are disabled, so a double click, a repeated Enter or a click on the old drawing sends
   * nothing more. The kernel's answer (the card stops waiting, a new payload, or a status
   * that is not work in progress) ends it.
   */
  sent: boolean;
}

interface Reviews {
  byKey: Map<string, Review>;
  /** A model without a key (an older kernel): per wrapper, as good as it gets. */
  byModel: WeakMap<CardModel, Review>;
}

function reviews(): Reviews {
  const g = globalThis as unknown as { __grintaReviews?: Reviews };
  g.__grintaReviews ??= { byKey: new Map(), byModel: new WeakMap() };
  return g.__grintaReviews;
}

function cardKey(model: CardModel): string | null {
  const key = model.get('key');
  return typeof key === 'string' && key ? key : null;
}

function reviewOf(model: CardModel): Review {
  const { byKey, byModel } = reviews();
  const key = cardKey(model);
  let review = key ? byKey.get(key) : byModel.get(model);
  if (!review) {
    review = {
      mode: 'review',
      selected: new Set(),
      total: 0,
      hunkReason: '',
      vetoReason: '',
      focused: false,
      form: null,
      seen: null,
      sent: false
    };
    if (key) byKey.set(key, review);
    else byModel.set(model, review);
  }
  return review;
}

/** The card no longer waits: its review is over (the map stays as small as the cards waiting). */
function endReview(model: CardModel): void {
  const key = cardKey(model);
  if (key) reviews().byKey.delete(key);
}

export class LiveCard {
  /** `.grinta-output` so the cards' CSS applies (style/base.css). */
  readonly node: HTMLElement;
  private readonly cardSlot: HTMLElement;
  private readonly barSlot: HTMLElement;
  private wasPending = false;
  private readonly onPayload = () => this.payloadChanged();
  private readonly onOther = () => this.draw(false);
  private readonly onStatus = () => this.statusChanged();

  constructor(private readonly model: CardModel) {
    this.cardSlot = h('div', { class: 'grinta-live-card' });
    this.barSlot = h('div', { class: 'grinta-live-bar' });
    this.node = h('div', { class: 'grinta-output grinta-live' }, this.cardSlot, this.barSlot);
    model.on('change:payload', this.onPayload);
    model.on('change:status', this.onStatus);
    for (const name of TRAITS.filter(t => t !== 'payload' && t !== 'status')) {
      model.on(`change:${name}`, this.onOther);
    }
    this.payloadChanged();
  }

  dispose(): void {
    this.model.off('change:payload', this.onPayload);
    this.model.off('change:status', this.onStatus);
    for (const name of TRAITS.filter(t => t !== 'payload' && t !== 'status')) {
      this.model.off(`change:${name}`, this.onOther);
    }
  }

  /** The card's review, shared by every view of the card. */
  private get review(): Review {
    return reviewOf(this.model);
  }

  /** What the reviewer would send with the primary button now (for tests and the bar). */
  get primary() {
    return primaryAction(this.review.selected, this.review.total);
  }

  private get pending(): boolean {
    return this.model.get('pending') === true && this.model.get('kind') !== 'session';
  }

  private payloadChanged(): void {
    this.syncReview();
    this.draw(true);
  }

  /**
   * The kernel's word on what was sent: a refusal ("not decided: ...", a stale approval)
   * gives the buttons back; work in progress ("staging…") keeps them disabled.
   */
  private statusChanged(): void {
    const answered = this.review.sent && !String(this.model.get('status') ?? '').endsWith('…');
    if (answered) {
      this.review.sent = false;
    }
    this.draw(answered); // the card too: its hunk checkboxes unlock
  }

  /**
   * The review, brought up to the payload shown: for a new proposal (or a review just
   * begun) every hunk is checked again; a valid re-validated edit ends the edit.
   */
  private syncReview(): void {
    const review = this.review;
    const seen = JSON.stringify(this.model.get('payload') ?? null);
    if (seen !== review.seen) {
      review.seen = seen;
      const step = this.step();
      review.total = step ? selectableHunks(step) : 0;
      review.selected = new Set(Array.from({ length: review.total }, (_, i) => i));
      review.hunkReason = '';
      review.sent = false;
      if (review.mode === 'edit' && review.form?.busy) {
        if (step?.validation.ok) {
          review.mode = 'review';
          review.form = null;
        } else {
          review.form = { ...review.form, busy: false };
        }
      }
    }
  }

  private step(): Step | null {
    if (this.model.get('kind') === 'session') {
      return null;
    }
    const parsed = parseStep(this.model.get('payload'));
    return parsed.ok ? parsed.value : null;
  }

  private draw(cardToo: boolean): void {
    const pending = this.pending;
    if (!pending) {
      this.review.mode = 'review';
      this.review.form = null;
      endReview(this.model);
    } else {
      this.syncReview(); // a review that ended, or never began in this page, begins here
    }
    if (cardToo || pending !== this.wasPending) {
      this.cardSlot.replaceChildren(this.card(pending));
    }
    this.drawBar(pending);
    if (pending && !this.wasPending) {
      this.reveal();
    }
    this.wasPending = pending;
  }

  private card(pending: boolean): HTMLElement {
    const payload = this.model.get('payload');
    if (this.model.get('kind') === 'session') {
      return sessionCard(payload);
    }
    const step = this.step();
    if (!step) {
      return stepCard(payload); // the visible "cannot render" message
    }
    const picker =
      pending && this.review.total > 0
        ? {
            selected: this.review.selected,
            total: this.review.total,
            changed: () => this.drawBar(true),
            locked: this.review.sent
          }
        : null;
    return renderStep(step, picker);
  }

  /** `take`: the reader just asked for this bar (a click), so its field takes the focus. */
  private drawBar(pending: boolean, take = false): void {
    if (!pending) {
      this.barSlot.replaceChildren();
      return;
    }
    const status = String(this.model.get('status') ?? '');
    if (this.review.mode === 'veto') {
      const { bar, focus } = vetoBar(
        {
          send: reason => this.send(vetoMessage(reason)),
          cancel: () => this.setMode('review'),
          input: reason => (this.review.vetoReason = reason)
        },
        this.review.vetoReason
      );
      this.show(bar, focus, take);
    } else if (this.review.mode === 'edit' && this.review.form) {
      const form = { ...this.review.form, message: this.review.form.message || status };
      const { bar, focus } = editBar(form, {
        input: (json, text) => this.review.form && Object.assign(this.review.form, { json, text }),
        revalidate: (json, text) => this.revalidate(json, text),
        cancel: () => this.setMode('review')
      });
      this.show(bar, focus, take);
    } else {
      const partial = this.review.total > 0 && this.review.selected.size > 0 && this.review.selected.size < this.review.total;
      const reason = partial
        ? hunkReasonInput(this.review.hunkReason, value => (this.review.hunkReason = value))
        : null;
      const bar = reviewBar(
        this.primary,
        status,
        {
          primary: () => this.approve(),
          edit: () => this.openEditor(),
          veto: () => this.setMode('veto')
        },
        reason,
        this.review.sent
      );
      this.show(bar, null, take);
    }
  }

  /**
   * Put `bar` in place, keeping focus inside the bar area when it was there. A form's
   * field takes the focus when the reader asked for the form or the bar had it; in a
   * new view of the card (the kernel redrew the cell), when the old view's form had it
   * (`refocus`), so typing goes on; never from someone typing elsewhere.
   */
  private show(bar: HTMLElement, focus: HTMLElement | null, take: boolean): void {
    const hadFocus = this.barSlot.contains(document.activeElement);
    this.barSlot.replaceChildren(bar);
    if (focus) {
      bar.setAttribute('data-card', this.key);
      bar.addEventListener('focusin', () => (this.review.focused = true));
      bar.addEventListener('focusout', (event: FocusEvent) => {
        // To nowhere (the view removed by a redraw, the window left): the form keeps it.
        const to = event.relatedTarget as Node | null;
        this.review.focused = !to || bar.contains(to);
      });
    }
    if (focus && (take || hadFocus)) {
      focus.focus();
    } else if (focus && this.review.focused) {
      this.refocus(focus);
    } else if (hadFocus) {
      bar.focus({ preventScroll: true });
    }
  }

  /** Names the card's bars in the page (its key), so a new view knows the old one's. */
  private get key(): string {
    return cardKey(this.model) ?? 'unkeyed';
  }

  /**
   * The form's field takes the focus back once this view is on the page and the old
   * view's field (which may still be there a moment) has let it go, unless the reader
   * went elsewhere meanwhile.
   */
  private refocus(focus: HTMLElement): void {
    let tries = 0;
    const attempt = () => {
      if (!this.review.focused || !this.pending || typingInBox()) return;
      const active = document.activeElement as HTMLElement | null;
      const old = active?.closest?.(`[data-card="${this.key}"]`);
      if (!focus.isConnected || (old && !old.contains(focus))) {
        if (++tries < 50) setTimeout(attempt, 50);
        return;
      }
      if (!active || active === document.body) focus.focus({ preventScroll: true });
    };
    setTimeout(attempt, 0);
  }

  private setMode(mode: Mode): void {
    this.review.mode = mode;
    if (mode !== 'edit') {
      this.review.form = null;
    }
    if (mode !== 'veto') {
      this.review.vetoReason = '';
    }
    this.drawBar(this.pending, true);
    if (mode === 'review') {
      this.barSlot.querySelector<HTMLElement>('.grinta-actions')?.focus({ preventScroll: true });
    }
  }

  private approve(): void {
    if (this.review.sent) {
      return; // a second click or Enter before the kernel answered the first
    }
    const message = approvalMessage(this.review.selected, this.review.total, this.review.hunkReason);
    if (message.event === 'veto') {
      this.setMode('veto'); // nothing selected: say why, or cancel
      return;
    }
    const step = this.step();
    if (step && (message.event === 'approve' || message.event === 'hunks')) {
      message.edits = step.edits; // the proposal seen: the kernel refuses it once edited
    }
    this.send(message);
  }

  private openEditor(): void {
    const draft = editDraft(String(this.model.get('editable') ?? ''));
    this.review.form = { ...draft, message: '', busy: false };
    this.setMode('edit');
  }

  private revalidate(json: string, text: string): void {
    if (!this.review.form) {
      return;
    }
    const result = editMessage(json, this.review.form.field, text);
    if (!result.ok) {
      this.review.form = { ...this.review.form, json, text, message: result.error };
    } else {
      this.review.form = { ...this.review.form, json, text, message: '', busy: true };
      this.send(result.message);
    }
    this.drawBar(this.pending, true);
  }

  private send(message: CardMessage): void {
    if (message.event !== 'edit') {
      if (this.review.sent) {
        return;
      }
      this.review.mode = 'review';
      this.review.vetoReason = '';
      this.review.sent = true;
    }
    this.model.send(message);
    if (message.event !== 'edit') {
      // The hunk checkboxes lock on what was sent, and the bar's buttons are disabled.
      this.cardSlot.replaceChildren(this.card(this.pending));
      this.drawBar(this.pending, this.barSlot.contains(document.activeElement));
    }
  }

  /** A card that starts waiting scrolls into view and takes focus (not from someone typing). */
  private reveal(): void {
    let tries = 0;
    const attempt = () => {
      if (!this.pending) {
        return;
      }
      if (!this.node.isConnected) {
        if (++tries < 50) setTimeout(attempt, 50);
        return;
      }
      if (typing(this.node) || this.review.mode !== 'review') {
        return; // a veto or an edit under way keeps its own focus (`refocus`)
      }
      this.node.scrollIntoView({ block: 'nearest' });
      this.barSlot.querySelector<HTMLElement>('.grinta-actions')?.focus();
    };
    setTimeout(attempt, 0);
  }
}

/**
 * True when the reader is typing somewhere else (a cell, a text box, the panel's message
 * box, even one a redraw has just replaced): focus is not taken.
 */
function typing(node: HTMLElement): boolean {
  if (typingInBox()) {
    return true;
  }
  const active = document.activeElement as HTMLElement | null;
  if (!active || node.contains(active)) {
    return false;
  }
  return active.isContentEditable || ['INPUT', 'TEXTAREA', 'SELECT'].includes(active.tagName);
}
