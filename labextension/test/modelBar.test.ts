/**
 * The live panel's model bar: the picker lists the kernel's choices in their
 * groups with the chosen one selected and sends a choice only when it changed;
 * the key field shows for a model that takes a key, sends the key in one
 * message on Enter or "Use key" and is cleared at once, keeps a key nowhere in
 * the DOM but the field, survives a redraw with what was typed, and sends
 * nothing empty; the note says where the key stands; a problem shows as an alert.
 */

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  groupChoices,
  keyMessage,
  keyNote,
  ModelBar,
  ModelsMessage,
  parseChoices
} from '../src/render/modelBar';
import { byClass, click, FakeElement, FakeEvent, fakeDocument, fire, installFakeDom, press, typeInto } from './fakeDom';

installFakeDom();

class FakeModelsModel {
  readonly sent: ModelsMessage[] = [];
  private readonly handlers = new Map<string, Set<() => void>>();
  constructor(private readonly state: Record<string, unknown>) {}
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
  send(message: ModelsMessage): void {
    this.sent.push(message);
  }
  set(changes: Record<string, unknown>): void {
    Object.assign(this.state, changes);
    for (const name of Object.keys(changes)) this.handlers.get(`change:${name}`)?.forEach(cb => cb());
  }
}

const CHOICES = [
  { name: 'anthropic/claude-x', label: 'anthropic/claude-x (GRINTA_MODEL)', source: 'configured' },
  { name: 'openai/gpt-x', label: 'openai/gpt-x', source: 'key' },
  { name: 'ollama_chat/qwen:7b', label: 'ollama_chat/qwen:7b (local Ollama)', source: 'ollama' },
  { name: 'gemini/gemini-x', label: 'gemini/gemini-x (paste GEMINI_API_KEY)', source: 'needs key' }
];
const KEY = 'sk-test-0123456789abcdefghij';

let count = 0;

function bar(state: Record<string, unknown> = {}): { model: FakeModelsModel; view: ModelBar; root: FakeElement } {
  const model = new FakeModelsModel({
    kind: 'models',
    key: `bar-${++count}`,
    choices: CHOICES,
    chosen: 'anthropic/claude-x',
    running: 'demo',
    key_provider: 'anthropic',
    key_variable: 'ANTHROPIC_API_KEY',
    key_state: 'missing',
    status: '',
    problem: '',
    searching: false,
    ...state
  });
  const view = new ModelBar(model);
  fakeDocument.body.replaceChildren(view.node as unknown as FakeElement);
  return { model, view, root: view.node as unknown as FakeElement };
}

const one = (root: FakeElement, name: string) => byClass(root, name)[0];

/** Every attribute value and text under `node`: where a key must never be. */
function everything(node: FakeElement): string {
  const parts: string[] = [node.textContent];
  const walk = (n: FakeElement) => {
    for (const value of n.attributes.values()) parts.push(value);
    for (const child of n.childNodes) if (child instanceof FakeElement) walk(child);
  };
  walk(node);
  return parts.join('\n');
}

describe('the model picker', () => {
  it('lists the choices in their groups, the chosen one selected', () => {
    const { root } = bar();
    const select = one(root, 'grinta-models-select');
    const groups = select.childNodes as FakeElement[];
    assert.deepEqual(
      groups.map(g => g.getAttribute('label')),
      ['Configured', 'Providers with a key', 'Local Ollama', 'Needs a key']
    );
    assert.equal(select.value, 'anthropic/claude-x');
    const options = groups.flatMap(g => g.childNodes as FakeElement[]);
    assert.deepEqual(options.map(o => o.getAttribute('value')), CHOICES.map(c => c.name));
    assert.equal(options[0].getAttribute('selected'), '');
    assert.match(options[3].textContent, /paste GEMINI_API_KEY/);
    assert.match(select.title, /next session.*this session keeps demo/);
  });

  it('sends a choice only when it changed', () => {
    const { model, root } = bar();
    const select = one(root, 'grinta-models-select');
    fire(select, new FakeEvent('change'));
    assert.deepEqual(model.sent, []);
    select.value = 'ollama_chat/qwen:7b';
    fire(select, new FakeEvent('change'));
    assert.deepEqual(model.sent, [{ event: 'choose', model: 'ollama_chat/qwen:7b' }]);
    assert.equal(one(root, 'grinta-models-status').textContent, 'choosing…');
  });

  it('keeps only well-formed choices, and groups unknown sources last', () => {
    const parsed = parseChoices([null, 3, { name: '' }, { name: 'x/y', source: 'elsewhere' }, { name: 'demo', source: 'demo' }]);
    assert.deepEqual(parsed, [
      { name: 'x/y', label: 'x/y', source: 'elsewhere' },
      { name: 'demo', label: 'demo', source: 'demo' }
    ]);
    assert.deepEqual(groupChoices(parsed).map(([title]) => title), ['Built in', 'Other']);
    assert.deepEqual(parseChoices('junk'), []);
  });

  it('says it is still looking for local servers', () => {
    const { model, root } = bar({ searching: true });
    assert.equal(one(root, 'grinta-models-searching').hidden, false);
    model.set({ searching: false });
    assert.equal(one(root, 'grinta-models-searching').hidden, true);
  });
});

describe('the key field', () => {
  it('sends the key on Enter, once, and clears the field at once', () => {
    const { model, root } = bar();
    const input = one(root, 'grinta-models-key');
    assert.equal(input.getAttribute('type'), 'password');
    assert.equal(input.getAttribute('autocomplete'), 'off');
    assert.equal((input as unknown as { placeholder: string }).placeholder, 'ANTHROPIC_API_KEY');
    assert.equal(input.getAttribute('aria-label'), 'API key for anthropic');
    typeInto(input, `  ${KEY} `);
    const enter = press(input, 'Enter');
    assert.ok(enter.defaultPrevented && enter.stopped, 'Enter goes nowhere else');
    assert.deepEqual(model.sent, [{ event: 'key', provider: 'anthropic', key: KEY }]);
    assert.equal(input.value, '');
    assert.ok(!everything(root).includes(KEY), 'the key is in no attribute and no text');
    assert.match(one(root, 'grinta-models-status').textContent, /sending the key/);
  });

  it('sends with the button too, and nothing empty', () => {
    const { model, root } = bar();
    const input = one(root, 'grinta-models-key');
    press(input, 'Enter');
    typeInto(input, '   ');
    click(one(root, 'grinta-models-use'));
    assert.deepEqual(model.sent, []);
    typeInto(input, KEY);
    click(one(root, 'grinta-models-use'));
    assert.deepEqual(model.sent, [{ event: 'key', provider: 'anthropic', key: KEY }]);
    assert.equal(keyMessage('', KEY), null, 'no provider: nowhere to file it');
  });

  it('keeps what is typed through a redraw of the panel, and not after it is sent', () => {
    const first = bar({ key: 'bar-kept' });
    typeInto(one(first.root, 'grinta-models-key'), KEY);
    first.view.dispose();
    const again = bar({ key: 'bar-kept' });
    const input = one(again.root, 'grinta-models-key');
    assert.equal(input.value, KEY);
    press(input, 'Enter');
    const third = bar({ key: 'bar-kept' });
    assert.equal(one(third.root, 'grinta-models-key').value, '');
  });

  it('hides for a model that takes no key, and says where a key stands', () => {
    const { model, root } = bar();
    assert.equal(root.getAttribute('data-key-state'), 'missing');
    assert.match(one(root, 'grinta-models-note').textContent, /set ANTHROPIC_API_KEY.*or type one here/);
    assert.equal(one(root, 'grinta-models-forget').hidden, true);
    model.set({ key_state: 'panel' });
    assert.match(one(root, 'grinta-models-note').textContent, /memory only/);
    assert.equal(one(root, 'grinta-models-forget').hidden, false);
    click(one(root, 'grinta-models-forget'));
    assert.deepEqual(model.sent, [{ event: 'forget', provider: 'anthropic' }]);
    model.set({ chosen: 'ollama_chat/qwen:7b', key_provider: '', key_variable: '', key_state: 'none' });
    assert.equal(one(root, 'grinta-models-keybox').hidden, true);
    assert.equal(one(root, 'grinta-models-select').value, 'ollama_chat/qwen:7b');
    assert.match(keyNote('env', 'openai', 'OPENAI_API_KEY'), /OPENAI_API_KEY is set/);
    assert.match(keyNote('rejected', 'openai', 'OPENAI_API_KEY'), /refused the last key/);
    assert.match(keyNote('optional', 'openai', 'OPENAI_API_KEY'), /optional/);
  });

  it('shows a problem as an alert, and hides it once cleared', () => {
    const { model, root } = bar();
    const problem = one(root, 'grinta-models-problem');
    assert.equal(problem.hidden, true);
    model.set({ problem: 'AUTH: rejected the key; or type a key in the key field' });
    assert.equal(problem.hidden, false);
    assert.equal(problem.getAttribute('role'), 'alert');
    assert.match(problem.textContent, /^AUTH: /);
    model.set({ problem: '' });
    assert.equal(problem.hidden, true);
  });
});
