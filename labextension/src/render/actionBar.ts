/**
 * The bar under a pending step card, in its three modes:
 *
 * - review: Approve (or "Approve selected (k of n)" when some hunks are
 *   unchecked, or a veto when none is), Edit, Veto. Enter approves and
 *   Escape opens the veto while the bar (or a button in it) has focus.
 * - veto: an optional reason for the model, Send veto, Cancel.
 * - edit: only the edit actions (the arguments as JSON, the new text in a
 *   box of its own, Re-validate, Cancel), so Approve is out of sight until
 *   the re-validated proposal is shown.
 *
 * The bar only builds elements and reports what the reviewer did; the state
 * (which mode, which hunks) lives in the live card (liveCard.ts).
 */

import type { Primary } from '../review';
import { h } from './dom';

export interface ReviewHandlers {
  primary: () => void;
  edit: () => void;
  veto: () => void;
}

export interface VetoHandlers {
  send: (reason: string) => void;
  cancel: () => void;
  /** Each keystroke, so a redraw of the bar keeps the reason typed so far. */
  input?: (reason: string) => void;
}

export interface EditHandlers {
  /** Each keystroke, so a redraw of the bar keeps what was typed. */
  input: (json: string, text: string) => void;
  revalidate: (json: string, text: string) => void;
  cancel: () => void;
}

const HINT = 'Enter approves, Escape vetoes';
const SENT = 'Sent: waiting for the kernel';

export function reviewBar(
  primary: Primary,
  status: string,
  handlers: ReviewHandlers,
  hunkReason: HTMLInputElement | null,
  sent = false
): HTMLElement {
  const bar = h('div', {
    class: 'grinta-actions grinta-review',
    tabindex: 0,
    role: 'toolbar',
    'aria-label': `${primary.label} (Enter), Edit, or Veto (Escape) this step`
  });
  const buttons = [
    button(primary.label, 'approve', 'Commit what is shown (Enter)', handlers.primary),
    button('Edit', 'edit', 'Edit the arguments, then re-validate', handlers.edit),
    button('Veto', 'veto', 'Refuse this step and tell the model why (Escape)', handlers.veto)
  ];
  bar.append(...buttons);
  if (hunkReason) {
    hunkReason.disabled = sent;
    bar.append(hunkReason);
  }
  if (sent) {
    // Decided: nothing more to click until the kernel answers (a double click sends one answer).
    buttons.forEach(b => ((b as HTMLButtonElement).disabled = true));
    bar.setAttribute('aria-busy', 'true');
  }
  bar.append(h('span', { class: 'grinta-action-hint' }, sent ? SENT : HINT));
  if (status) {
    bar.append(h('div', { class: 'grinta-action-status', role: 'status' }, status));
  }
  bar.addEventListener('keydown', (event: KeyboardEvent) => {
    if (sent && (event.key === 'Enter' || event.key === 'Escape')) {
      stop(event); // still not the notebook's: it would open a cell or leave the panel
    } else if (event.key === 'Enter' && !event.shiftKey) {
      stop(event);
      handlers.primary();
    } else if (event.key === 'Escape') {
      stop(event);
      handlers.veto();
    }
  });
  return bar;
}

/** The optional reason sent with a partial approval, for the declined hunks. */
export function hunkReasonInput(value: string, changed: (value: string) => void): HTMLInputElement {
  const input = h('input', {
    type: 'text',
    class: 'grinta-hunk-reason',
    placeholder: 'Why decline the unchecked hunks? (optional)',
    'aria-label': 'Why the unchecked hunks are declined'
  });
  input.value = value;
  input.addEventListener('input', () => changed(input.value));
  return input;
}

export function vetoBar(
  handlers: VetoHandlers,
  draft = ''
): { bar: HTMLElement; focus: HTMLElement } {
  const reason = h('input', {
    type: 'text',
    class: 'grinta-veto-reason',
    placeholder: 'Why? The model reads this.',
    'aria-label': 'Why this step is vetoed'
  });
  reason.value = draft;
  reason.addEventListener('input', () => handlers.input?.(reason.value));
  const send = () => handlers.send(reason.value);
  reason.addEventListener('keydown', (event: KeyboardEvent) => {
    if (event.key === 'Enter') {
      stop(event);
      send();
    } else if (event.key === 'Escape') {
      stop(event);
      handlers.cancel();
    }
  });
  const bar = h(
    'div',
    { class: 'grinta-actions grinta-veto-form' },
    reason,
    button('Send veto', 'send-veto', 'Refuse this step with this reason', send),
    button('Cancel', 'cancel', 'Back to the step', handlers.cancel)
  );
  return { bar, focus: reason };
}

export interface EditForm {
  json: string;
  field: string | null;
  text: string;
  /** The error to show: the form's own (JSON) or the kernel's verdict on the last edit. */
  message: string;
  busy: boolean;
}

export function editBar(
  form: EditForm,
  handlers: EditHandlers
): { bar: HTMLElement; focus: HTMLElement } {
  const args = h('textarea', {
    class: 'grinta-edit-args',
    rows: 6,
    spellcheck: 'false',
    'aria-label': 'The arguments, as JSON'
  });
  args.value = form.json;
  const text = form.field === null ? null : h('textarea', {
    class: 'grinta-edit-text',
    rows: 8,
    spellcheck: 'false',
    'aria-label': `${form.field}: the proposed new text`
  });
  if (text) {
    text.value = form.text;
  }
  const revalidate = button('Re-validate', 'revalidate', 'Stage and validate the edited call', () =>
    handlers.revalidate(args.value, text ? text.value : '')
  );
  (revalidate as HTMLButtonElement).disabled = form.busy;
  const typed = () => handlers.input(args.value, text ? text.value : '');
  args.addEventListener('input', typed);
  text?.addEventListener('input', typed);
  const bar = h(
    'div',
    { class: 'grinta-actions grinta-edit-form' },
    h('div', { class: 'grinta-edit-label' }, 'Arguments (JSON)'),
    args,
    text && [
      h('div', { class: 'grinta-edit-label' }, h('code', null, form.field), ' (the proposed new text)'),
      text
    ],
    h('div', { class: 'grinta-edit-buttons' }, revalidate, button('Cancel', 'cancel', 'Back to the step as proposed', handlers.cancel)),
    (form.busy || form.message) &&
      h(
        'div',
        { class: 'grinta-action-status', role: 'status' },
        form.busy ? 're-validating…' : form.message
      )
  );
  return { bar, focus: text ?? args };
}

function button(label: string, action: string, title: string, onClick: () => void): HTMLElement {
  const b = h('button', {
    type: 'button',
    class: `jupyter-button grinta-button grinta-${action}`,
    'data-action': action,
    title
  }, label);
  b.addEventListener('click', onClick);
  return b;
}

function stop(event: KeyboardEvent): void {
  event.preventDefault();
  event.stopPropagation();
}
