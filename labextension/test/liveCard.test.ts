/**
 * The live panel's card (src/render/liveCard.ts) on a fake DOM and a fake
 * widget model: the same card as the saved trace, the action bar's modes and
 * keys, per-hunk approval, the edit round trip, and taking focus.
 */

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { CardModel, LiveCard } from '../src/render/liveCard';
import { stepCard } from '../src/render/stepCard';
import {
  byClass,
  click,
  FakeElement,
  fakeDocument,
  FakeEvent,
  fire,
  installFakeDom,
  press,
  typeInto
} from './fakeDom';
import { FakeCardModel } from './fakeCardModel';
import { THREE_HUNKS } from './shared';

installFakeDom();

const ONE_HUNK = THREE_HUNKS.split('@@ -20')[0];
const ARGS = { path: 'a.py', old_string: '    return 1', new_string: '    return 2' };

function payload(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    version: 1,
    session: 's1',
    step: 3,
    tool: 'replace_string',
    kind: 'write',
    status: 'pending',
    arguments: ARGS,
    diff: ONE_HUNK,
    ...fields
  };
}

function mount(state: Record<string, unknown>): { model: FakeCardModel; card: LiveCard; node: FakeElement } {
  const model = new FakeCardModel({ kind: 'step', status: '', editable: JSON.stringify(ARGS), ...state });
  const card = new LiveCard(model);
  const node = card.node as unknown as FakeElement;
  fakeDocument.body.replaceChildren(node);
  return { model, card, node };
}

function one(root: FakeElement, name: string): FakeElement {
  const found = byClass(root, name);
  assert.equal(found.length, 1, `one .${name}, found ${found.length}`);
  return found[0];
}

function buttons(root: FakeElement): string[] {
  return byClass(root, 'grinta-button').map(b => b.textContent);
}

const tick = () => new Promise(resolve => setTimeout(resolve, 5));

describe('the live card', () => {
  it('is the saved card, plus the bar while pending', () => {
    const { node } = mount({ payload: payload(), pending: true });
    const saved = stepCard(payload()) as unknown as FakeElement;
    assert.equal(one(node, 'grinta-step').textContent, saved.textContent);
    assert.deepEqual(buttons(node), ['Approve', 'Edit', 'Veto']);
    assert.ok(byClass(node, 'grinta-tok-keyword').length > 0, 'highlighted like the saved card');
  });

  it('shows no bar once decided', () => {
    const { model, node } = mount({ payload: payload(), pending: true });
    model.set({ payload: payload({ status: 'committed', decision: 'approve' }), pending: false });
    assert.deepEqual(buttons(node), []);
    assert.equal(one(node, 'grinta-badge').textContent, 'committed');
  });

  it('approves on click and on Enter; Escape opens the veto', () => {
    const { model, node } = mount({ payload: payload(), pending: true });
    click(one(node, 'grinta-approve'));
    assert.deepEqual(model.sent, [{ event: 'approve', edits: 0 }]);
    // The kernel refused it (say, a stale drawing): the bar is back.
    model.set({ status: 'not decided: try again' });
    const bar = one(node, 'grinta-actions');
    press(bar, 'Enter', true);
    assert.equal(model.sent.length, 1, 'Shift+Enter is the notebook’s');
    const enter = press(bar, 'Enter');
    assert.ok(enter.defaultPrevented && enter.stopped, 'the notebook does not see the key');
    assert.deepEqual(model.sent, [
      { event: 'approve', edits: 0 },
      { event: 'approve', edits: 0 }
    ]);
    model.set({ status: 'not decided: again' });

    press(one(node, 'grinta-actions'), 'Escape');
    assert.deepEqual(buttons(node), ['Send veto', 'Cancel'], 'veto mode: only the veto');
    const reason = one(node, 'grinta-veto-reason');
    assert.equal(fakeDocument.activeElement, reason);
    assert.equal(reason.getAttribute('placeholder'), 'Why? The model reads this.');
    reason.value = '  not now ';
    click(one(node, 'grinta-send-veto'));
    assert.deepEqual(model.sent[2], { event: 'veto', reason: 'not now' });
  });

  it('vetoes with the default reason, from Enter in the reason box; Escape cancels', () => {
    const { model, node } = mount({ payload: payload(), pending: true });
    click(one(node, 'grinta-veto'));
    press(one(node, 'grinta-veto-reason'), 'Escape');
    assert.deepEqual(buttons(node), ['Approve', 'Edit', 'Veto']);
    assert.deepEqual(model.sent, []);
    click(one(node, 'grinta-veto'));
    press(one(node, 'grinta-veto-reason'), 'Enter');
    assert.deepEqual(model.sent, [{ event: 'veto', reason: 'vetoed by the user' }]);
  });

  it('renders a session payload as the session card, with no bar', () => {
    const session = { version: 1, session: 's1', task: 'fix it', end_reason: 'finished', metrics: {} };
    const { node } = mount({ kind: 'session', payload: session, pending: true });
    assert.equal(one(node, 'grinta-session').getAttribute('data-end-reason'), 'finished');
    assert.deepEqual(buttons(node), []);
  });

  it('shows a payload it cannot read as a message, not a blank', () => {
    const { node } = mount({ payload: { version: 9 }, pending: true });
    assert.match(one(node, 'grinta-problem').textContent, /schema version 9/);
  });
});

describe('per-hunk approval in the live card', () => {
  const multi = () => mount({ payload: payload({ diff: THREE_HUNKS }), pending: true });

  it('gives each hunk a checkbox, all checked, numbered across files', () => {
    const { node } = multi();
    const boxes = byClass(node, 'grinta-hunk-check');
    assert.deepEqual(boxes.map(b => [b.getAttribute('data-hunk'), b.checked]), [
      ['0', true],
      ['1', true],
      ['2', true]
    ]);
    assert.equal(boxes[2].getAttribute('aria-label'), 'Include hunk 3 of 3');
    assert.deepEqual(buttons(node), ['Approve', 'Edit', 'Veto']);
  });

  it('approves the checked hunks, with a reason for the others', () => {
    const { model, node } = multi();
    const second = byClass(node, 'grinta-hunk-check')[1];
    second.checked = false;
    fire(second, new FakeEvent('change'));
    assert.equal(one(node, 'grinta-approve').textContent, 'Approve selected (2 of 3)');
    typeInto(one(node, 'grinta-hunk-reason'), 'g() stays as it is');
    press(one(node, 'grinta-actions'), 'Enter');
    assert.deepEqual(model.sent, [
      { event: 'hunks', accepted: [0, 2], reason: 'g() stays as it is', edits: 0 }
    ]);
  });

  it('names the proposal it approves by its edits, so an edited one is not approved unseen', () => {
    const { model, node } = mount({ payload: payload({ edits: 2 }), pending: true });
    click(one(node, 'grinta-approve'));
    assert.deepEqual(model.sent, [{ event: 'approve', edits: 2 }]);
  });

  it('turns into a veto when every hunk is unchecked', () => {
    const { model, node } = multi();
    for (const box of byClass(node, 'grinta-hunk-check')) {
      box.checked = false;
      fire(box, new FakeEvent('change'));
    }
    assert.equal(one(node, 'grinta-approve').textContent, 'Veto (no hunk selected)');
    click(one(node, 'grinta-approve'));
    assert.deepEqual(model.sent, [], 'nothing is sent before the reason is asked');
    assert.deepEqual(buttons(node), ['Send veto', 'Cancel']);
  });

  it('offers only whole approval when the diff was cut short, or is one hunk', () => {
    for (const fields of [{ diff: THREE_HUNKS, diff_truncated: true }, { diff: ONE_HUNK }]) {
      const { node } = mount({ payload: payload(fields), pending: true });
      assert.equal(byClass(node, 'grinta-hunk-check').length, 0);
    }
  });

  it('checks every hunk again for a new proposal', () => {
    const { model, node } = multi();
    const first = byClass(node, 'grinta-hunk-check')[0];
    first.checked = false;
    fire(first, new FakeEvent('change'));
    model.set({ payload: payload({ diff: THREE_HUNKS, edits: 1 }) });
    assert.ok(byClass(node, 'grinta-hunk-check').every(b => b.checked));
    assert.equal(one(node, 'grinta-approve').textContent, 'Approve');
  });

  it('keeps the review in a new view of the same card (the kernel redraws the panel)', () => {
    const { model, node } = multi();
    const second = byClass(node, 'grinta-hunk-check')[1];
    second.checked = false;
    fire(second, new FakeEvent('change'));
    typeInto(one(node, 'grinta-hunk-reason'), 'not g');
    const again = new LiveCard(model).node as unknown as FakeElement;
    assert.deepEqual(
      byClass(again, 'grinta-hunk-check').map(b => b.checked),
      [true, false, true]
    );
    assert.equal(one(again, 'grinta-hunk-reason').value, 'not g');
    click(one(again, 'grinta-approve'));
    assert.deepEqual(model.sent, [{ event: 'hunks', accepted: [0, 2], reason: 'not g', edits: 0 }]);
  });

  it('keeps the review in a view by another wrapper of the card, as anywidget makes for each view', async () => {
    // anywidget hands each view its own wrapper of the widget model: only `key` names the card.
    const wrap = (model: FakeCardModel): CardModel => ({
      get: name => model.get(name),
      on: (event, callback) => model.on(event, callback),
      off: (event, callback) => model.off(event, callback),
      send: message => model.send(message)
    });
    const model = new FakeCardModel({
      kind: 'step',
      key: 'card-veto',
      status: '',
      editable: JSON.stringify(ARGS),
      payload: payload(),
      pending: true
    });
    const first = new LiveCard(wrap(model)).node as unknown as FakeElement;
    fakeDocument.body.replaceChildren(first);
    click(one(first, 'grinta-veto'));
    fire(one(first, 'grinta-veto-reason'), new FakeEvent('focusin'));
    typeInto(one(first, 'grinta-veto-reason'), 'not before the te');
    model.set({ status: 'a word from the kernel' }); // the same view redraws its bar
    assert.equal(one(first, 'grinta-veto-reason').value, 'not before the te');

    // The kernel redraws the cell (something was said): a new view, the old one's focus gone.
    fakeDocument.activeElement = null;
    const again = new LiveCard(wrap(model)).node as unknown as FakeElement;
    fakeDocument.body.replaceChildren(again);
    const reason = one(again, 'grinta-veto-reason');
    assert.equal(reason.value, 'not before the te');
    await tick();
    assert.equal(fakeDocument.activeElement, reason, 'typing goes on where it was');
    typeInto(reason, 'not before the tests');
    click(one(again, 'grinta-send-veto'));
    assert.deepEqual(model.sent, [{ event: 'veto', reason: 'not before the tests' }]);

    // Once the card stops waiting its review is over: the next wait starts afresh.
    model.set({ pending: false });
    model.set({ pending: true });
    const later = new LiveCard(wrap(model)).node as unknown as FakeElement;
    assert.deepEqual(buttons(later), ['Approve', 'Edit', 'Veto']);
    await tick();
  });

  it('offers the hunks of a card that starts waiting after it was drawn, and again after a wait', () => {
    const { model, node } = mount({ key: 'card-later', payload: payload({ diff: THREE_HUNKS }), pending: false });
    assert.equal(byClass(node, 'grinta-hunk-check').length, 0);
    model.set({ pending: true });
    assert.deepEqual(
      byClass(node, 'grinta-hunk-check').map(b => b.checked),
      [true, true, true]
    );
    const second = byClass(node, 'grinta-hunk-check')[1];
    second.checked = false;
    fire(second, new FakeEvent('change'));
    model.set({ pending: false });
    model.set({ pending: true });
    assert.deepEqual(
      byClass(node, 'grinta-hunk-check').map(b => b.checked),
      [true, true, true],
      'a new wait is a new review'
    );
  });

  it('shows no checkboxes on a card that is not pending', () => {
    const { node } = mount({ payload: payload({ diff: THREE_HUNKS }), pending: false });
    assert.equal(byClass(node, 'grinta-hunk-check').length, 0);
  });
});

describe('editing in the live card', () => {
  it('shows only the edit actions, with the new text in its own box', () => {
    const { node } = mount({ payload: payload(), pending: true });
    click(one(node, 'grinta-edit'));
    assert.deepEqual(buttons(node), ['Re-validate', 'Cancel'], 'no Approve while editing');
    assert.deepEqual(JSON.parse(one(node, 'grinta-edit-args').value), {
      path: 'a.py',
      old_string: '    return 1'
    });
    const text = one(node, 'grinta-edit-text');
    assert.equal(text.value, '    return 2');
    assert.equal(fakeDocument.activeElement, text);
    click(one(node, 'grinta-cancel'));
    assert.deepEqual(buttons(node), ['Approve', 'Edit', 'Veto']);
  });

  it('says what is wrong with the JSON and sends nothing', () => {
    const { model, node } = mount({ payload: payload(), pending: true });
    click(one(node, 'grinta-edit'));
    typeInto(one(node, 'grinta-edit-args'), '{"path": ');
    click(one(node, 'grinta-revalidate'));
    assert.match(one(node, 'grinta-action-status').textContent, /^not valid JSON/);
    assert.deepEqual(model.sent, []);
    assert.equal(one(node, 'grinta-edit-args').value, '{"path": ', 'what was typed stays');
  });

  it('sends the edit; a valid new proposal brings review back, an invalid one keeps the form', () => {
    const { model, node } = mount({ payload: payload(), pending: true });
    click(one(node, 'grinta-edit'));
    typeInto(one(node, 'grinta-edit-text'), '    return 3');
    click(one(node, 'grinta-revalidate'));
    assert.deepEqual(model.sent, [
      { event: 'edit', arguments: { ...ARGS, new_string: '    return 3' } }
    ]);
    assert.equal(one(node, 'grinta-action-status').textContent, 're-validating…');

    const refused = {
      ok: false,
      code: 'NOT_FOUND',
      message: 'old_string not found',
      candidates: []
    };
    model.set({
      payload: payload({ diff: '', status: 'refused', validation: refused, edits: 1 }),
      status: 'NOT_FOUND: old_string not found'
    });
    assert.deepEqual(buttons(node), ['Re-validate', 'Cancel']);
    assert.equal(one(node, 'grinta-action-status').textContent, 'NOT_FOUND: old_string not found');
    assert.equal(one(node, 'grinta-edit-text').value, '    return 3', 'the edit is kept');

    click(one(node, 'grinta-revalidate'));
    model.set({ payload: payload({ edits: 2 }), status: 'valid' });
    assert.deepEqual(buttons(node), ['Approve', 'Edit', 'Veto']);
    assert.equal(one(node, 'grinta-action-status').textContent, 'valid');
  });
});

describe('a card that starts waiting', () => {
  it('scrolls into view and takes focus', async () => {
    const { model, node: live } = mount({ payload: payload(), pending: false });
    fakeDocument.activeElement = null;
    await tick();
    assert.equal(live.scrolledIntoView, 0, 'a card that does not wait stays where it is');
    model.set({ pending: true });
    await tick();
    assert.equal(live.scrolledIntoView, 1);
    assert.equal(fakeDocument.activeElement, one(live, 'grinta-actions'));
  });

  it('does not take focus from someone typing elsewhere', async () => {
    const elsewhere = new FakeElement('TEXTAREA');
    fakeDocument.body.append(elsewhere);
    elsewhere.focus();
    const model = new FakeCardModel({ kind: 'step', payload: payload(), pending: true });
    const card = new LiveCard(model);
    fakeDocument.body.append(card.node as unknown as FakeElement);
    await tick();
    assert.equal(fakeDocument.activeElement, elsewhere);
  });

  it('stops listening to the model when disposed', () => {
    const { model, card, node } = mount({ payload: payload(), pending: true });
    card.dispose();
    model.set({ pending: false });
    assert.deepEqual(buttons(node), ['Approve', 'Edit', 'Veto']);
  });
});

describe('the saved card of a committed write', () => {
  it('of a write approved in part, says why the other hunks were declined', () => {
    const card = stepCard(
      payload({ status: 'committed', decision: 'approve_hunks', reason: 'g() stays' })
    ) as unknown as FakeElement;
    assert.equal(byClass(card, 'grinta-problem').length, 0);
    assert.match(one(card, 'grinta-decision').textContent, /approved in part/);
    assert.equal(
      one(card, 'grinta-reason').textContent,
      'Why the other hunks were declinedg() stays'
    );
  });

  it('shows the diff once: the report to the model names it instead of repeating it', () => {
    const output = `replaced 1 occurrence in a.py. Committed: a.py (+1 -1).\n${ONE_HUNK.trimEnd()}`;
    const card = stepCard(
      payload({
        status: 'committed',
        decision: 'approve',
        observation: { ok: true, output, exit_code: null }
      })
    ) as unknown as FakeElement;
    assert.equal(byClass(card, 'grinta-diff-table').length, 1);
    const shown = one(card, 'grinta-observation-output').textContent;
    assert.equal(shown, 'replaced 1 occurrence in a.py. Committed: a.py (+1 -1).\n(the diff above)');
    assert.ok(!card.textContent.includes('@@ -1,2 +1,2 @@\n'), 'no raw diff text in the card');
  });
});
