/**
 * The live panel's model bar (grinta_jupyter/jupyter/modelbar.py, `ModelBarWidget`):
 * the model picker for the next session, and the key field for its provider.
 *
 * The picker lists the kernel's `choices` (grouped by where each comes from)
 * with `chosen` selected; picking one sends `{"event": "choose", "model"}`.
 * It never switches the running session: the kernel applies it to the next.
 *
 * The key field is a password input for the chosen model's provider
 * (`key_provider`, `key_variable`; hidden when the model takes no key). Enter
 * or "Use key" sends `{"event": "key", "provider", "key"}` in one custom
 * message and clears the field at once. A key is never a trait (the notebook
 * may save widget state), never in an attribute, never logged: the only copy
 * the page keeps is what is typed and not yet sent, in memory, so that a
 * redraw of the panel (after every step) does not lose a pasted key.
 * "Forget key" asks the kernel to drop a key it holds.
 *
 * `key_state` says where the key stands (env, panel, missing, optional,
 * rejected, none) and picks the note under the row; `problem` is the model
 * error that ended a session or kept one from starting, with its fix, shown
 * as an alert; `status` is the kernel's word on the last action. `answered`
 * counts the messages the kernel acted on: a redraw on its change replaces the
 * bar's "sending…" even when the kernel's word is the same as last time (the
 * same key typed again), which a change of `status` alone would never bring.
 */

import { h } from './dom';

export type ModelsMessage =
  | { event: 'choose'; model: string }
  | { event: 'key'; provider: string; key: string }
  | { event: 'forget'; provider: string };

/** The part of an anywidget model the bar uses. */
export interface ModelsModel {
  get(name: string): unknown;
  on(event: string, callback: () => void): void;
  off(event: string, callback: () => void): void;
  send(message: ModelsMessage): void;
}

export interface Choice {
  name: string;
  label: string;
  source: string;
}

export type KeyState = 'env' | 'panel' | 'missing' | 'optional' | 'rejected' | 'none';

const GROUPS: [string, string][] = [
  ['configured', 'Configured'],
  ['key', 'Providers with a key'],
  ['server', 'GRINTA_API_BASE'],
  ['ollama', 'Local Ollama'],
  ['demo', 'Built in'],
  ['needs key', 'Needs a key']
];

const TRAITS = ['choices', 'chosen', 'running', 'key_provider', 'key_variable', 'key_state', 'status', 'problem', 'searching', 'answered'];

/** The kernel's `choices`, keeping only well-formed entries. */
export function parseChoices(value: unknown): Choice[] {
  if (!Array.isArray(value)) return [];
  const found: Choice[] = [];
  for (const item of value) {
    if (!item || typeof item !== 'object') continue;
    const { name, label, source } = item as Record<string, unknown>;
    if (typeof name !== 'string' || !name) continue;
    found.push({
      name,
      label: typeof label === 'string' && label ? label : name,
      source: typeof source === 'string' ? source : ''
    });
  }
  return found;
}

/** The choices in their groups, in the order the kernel gave them within each. */
export function groupChoices(choices: Choice[]): [string, Choice[]][] {
  const known = new Set(GROUPS.map(([source]) => source));
  const groups: [string, Choice[]][] = GROUPS.map(([source, title]) => [
    title,
    choices.filter(c => c.source === source)
  ]);
  const other = choices.filter(c => !known.has(c.source));
  return [...groups, ['Other', other] as [string, Choice[]]].filter(([, items]) => items.length > 0);
}

export function keyState(value: unknown): KeyState {
  const states: KeyState[] = ['env', 'panel', 'missing', 'optional', 'rejected', 'none'];
  return states.includes(value as KeyState) ? (value as KeyState) : 'none';
}

/** The note under the row for a key state (what is known, and the fix when one is needed). */
export function keyNote(state: KeyState, provider: string, variable: string): string {
  switch (state) {
    case 'env':
      return `${variable} is set in the kernel's environment; a key typed here replaces it for grinta's sessions`;
    case 'panel':
      return `the key for ${provider} is held in this kernel's memory only (not in the environment, the notebook or a file)`;
    case 'missing':
      return `no key for ${provider}: set ${variable} before starting Jupyter, or type one here (kept in the kernel's memory only)`;
    case 'rejected':
      return `${provider} refused the last key: type a valid one`;
    case 'optional':
      return `a server of your own: a key is optional (${variable})`;
    default:
      return 'this model needs no key';
  }
}

/** What sending `text` as `provider`'s key sends, or null (nothing typed, no provider). */
export function keyMessage(provider: string, text: string): ModelsMessage | null {
  const key = text.trim();
  if (!provider || !key) return null;
  return { event: 'key', provider, key };
}

/**
 * What is typed in a bar's key field and not yet sent, by the bar's `key` trait (which
 * names the widget, not an API key): on `globalThis`, so a redraw of the panel keeps it.
 * Page memory only; cleared when sent.
 */
function drafts(): Map<string, string> {
  const g = globalThis as unknown as { __grintaKeyDrafts?: Map<string, string> };
  g.__grintaKeyDrafts ??= new Map();
  return g.__grintaKeyDrafts;
}

let unkeyed = 0;

export class ModelBar {
  readonly node: HTMLElement;
  private readonly select: HTMLSelectElement;
  private readonly searching: HTMLElement;
  private readonly keyBox: HTMLElement;
  private readonly input: HTMLInputElement;
  private readonly use: HTMLButtonElement;
  private readonly forget: HTMLButtonElement;
  private readonly note: HTMLElement;
  private readonly statusLine: HTMLElement;
  private readonly problemLine: HTMLElement;
  private readonly id: string;
  private readonly onChange = () => this.draw();
  private drawn = '';

  constructor(private readonly model: ModelsModel) {
    const id = model.get('key');
    this.id = typeof id === 'string' && id ? id : `unkeyed-${++unkeyed}`;
    this.select = h('select', { class: 'grinta-models-select', 'aria-label': "The next session's model" });
    this.select.addEventListener('change', () => this.choose());
    this.searching = h('span', { class: 'grinta-models-searching' }, 'looking for local servers…');
    this.input = h('input', {
      type: 'password',
      class: 'grinta-models-key',
      autocomplete: 'off',
      spellcheck: 'false'
    });
    this.input.value = drafts().get(this.id) ?? '';
    this.input.addEventListener('input', () => this.typed());
    this.input.addEventListener('keydown', (event: KeyboardEvent) => this.keydown(event));
    this.use = h('button', { type: 'button', class: 'grinta-button grinta-models-use' }, 'Use key');
    this.use.addEventListener('click', () => this.sendKey());
    this.forget = h('button', { type: 'button', class: 'grinta-button grinta-models-forget' }, 'Forget key');
    this.forget.addEventListener('click', () => this.forgetKey());
    this.keyBox = h('span', { class: 'grinta-models-keybox' }, this.input, this.use, this.forget);
    this.note = h('div', { class: 'grinta-models-note' });
    this.statusLine = h('div', { class: 'grinta-models-status', role: 'status' });
    this.problemLine = h('div', { class: 'grinta-models-problem', role: 'alert' });
    this.node = h(
      'div',
      { class: 'grinta-output grinta-models' },
      h(
        'div',
        { class: 'grinta-models-row' },
        h('span', { class: 'grinta-models-label' }, 'Next session:'),
        this.select,
        this.searching,
        this.keyBox
      ),
      this.note,
      this.problemLine,
      this.statusLine
    );
    for (const name of TRAITS) model.on(`change:${name}`, this.onChange);
    this.draw();
  }

  dispose(): void {
    for (const name of TRAITS) this.model.off(`change:${name}`, this.onChange);
  }

  private get provider(): string {
    return String(this.model.get('key_provider') ?? '');
  }

  private draw(): void {
    const choices = parseChoices(this.model.get('choices'));
    const chosen = String(this.model.get('chosen') ?? '');
    const shape = JSON.stringify([choices, chosen]);
    if (shape !== this.drawn) {
      // Rebuilt only when what it offers changed: an open list is not closed under the reader.
      this.drawn = shape;
      this.select.replaceChildren(
        ...groupChoices(choices).map(([title, items]) =>
          h(
            'optgroup',
            { label: title },
            items.map(c => h('option', { value: c.name, selected: c.name === chosen }, c.label))
          )
        )
      );
      this.select.value = chosen;
    }
    const running = String(this.model.get('running') ?? '');
    this.select.title = running
      ? `The model of the next session (%grinta TASK); this session keeps ${running}`
      : 'The model of the next session (%grinta TASK)';
    this.searching.hidden = !this.model.get('searching');
    const state = keyState(this.model.get('key_state'));
    const provider = this.provider;
    const variable = String(this.model.get('key_variable') ?? '');
    this.node.setAttribute('data-key-state', state);
    this.keyBox.hidden = state === 'none';
    this.input.placeholder = variable ? `${variable}` : '';
    this.input.setAttribute('aria-label', provider ? `API key for ${provider}` : 'API key');
    this.forget.hidden = state !== 'panel';
    this.note.textContent = keyNote(state, provider, variable);
    this.problemLine.textContent = String(this.model.get('problem') ?? '');
    this.problemLine.hidden = !this.problemLine.textContent;
    this.statusLine.textContent = String(this.model.get('status') ?? '');
  }

  private choose(): void {
    const model = this.select.value;
    if (model && model !== this.model.get('chosen')) {
      this.statusLine.textContent = 'choosing…';
      this.model.send({ event: 'choose', model });
    }
  }

  private typed(): void {
    if (this.input.value) drafts().set(this.id, this.input.value);
    else drafts().delete(this.id);
  }

  private keydown(event: KeyboardEvent): void {
    if (event.key !== 'Enter' || event.isComposing) return;
    // Enter is the field's own: not the notebook's, not a card's action bar.
    event.preventDefault();
    event.stopPropagation();
    this.sendKey();
  }

  private sendKey(): void {
    const message = keyMessage(this.provider, this.input.value);
    this.input.value = '';
    drafts().delete(this.id);
    if (!message) return;
    this.statusLine.textContent = 'sending the key to the kernel…';
    this.model.send(message);
  }

  private forgetKey(): void {
    const provider = this.provider;
    if (provider) this.model.send({ event: 'forget', provider });
  }
}
