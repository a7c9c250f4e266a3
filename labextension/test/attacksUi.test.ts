/**
 * The live card's bar once the reviewer has answered (src/render/liveCard.ts,
 * src/render/actionBar.ts): one answer per decision. A double click, a key held
 * down or a click on the bar still drawn while the kernel works sends nothing
 * more; the kernel's answer gives the buttons back.
 */

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { LiveCard } from '../src/render/liveCard';
import { byClass, click, FakeElement, fakeDocument, FakeEvent, fire, installFakeDom, press } from './fakeDom';
import { FakeCardModel } from './fakeCardModel';
import { THREE_HUNKS } from './shared';

installFakeDom();

const ARGS = { path: 'a.py', old_string: 'x', new_string: 'y' };

function payload(fields: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    version: 1,
    session: 's1',
    step: 4,
    tool: 'multiedit',
    kind: 'write',
    status: 'pending',
    arguments: ARGS,
    diff: THREE_HUNKS,
    ...fields
  };
}

let keys = 0;
function mount(fields: Record<string, unknown> = {}): { model: FakeCardModel; node: FakeElement } {
  const model = new FakeCardModel({
    kind: 'step',
    status: '',
    editable: JSON.stringify(ARGS),
    key: `attack-${++keys}`,
    payload: payload(fields),
    pending: true
  });
  const node = new LiveCard(model).node as unknown as FakeElement;
  fakeDocument.body.replaceChildren(node);
  return { model, node };
}

const only = (root: FakeElement, name: string): FakeElement => {
  const found = byClass(root, name);
  assert.equal(found.length, 1, `one .${name}, found ${found.length}`);
  return found[0];
};
const disabled = (node: FakeElement) => byClass(node, 'grinta-button').map(b => b.disabled);

describe('the live card after an answer', () => {
  it('sends one approval for a double click, and disables its buttons', () => {
    const { model, node } = mount();
    click(only(node, 'grinta-approve'));
    click(only(node, 'grinta-approve'));
    press(only(node, 'grinta-actions'), 'Enter');
    assert.deepEqual(model.sent, [{ event: 'approve', edits: 0 }]);
    assert.deepEqual(disabled(node), [true, true, true]);
    assert.match(only(node, 'grinta-action-hint').textContent, /waiting for the kernel/);
  });

  it('keeps Enter and Escape from the notebook while it waits, and opens no veto', () => {
    const { model, node } = mount();
    press(only(node, 'grinta-actions'), 'Enter');
    const escape = press(only(node, 'grinta-actions'), 'Escape');
    assert.ok(escape.defaultPrevented && escape.stopped);
    assert.deepEqual(byClass(node, 'grinta-veto-reason'), [], 'no veto form after an approval');
    assert.equal(model.sent.length, 1);
  });

  it('sends one veto for Enter pressed twice in the reason', () => {
    const { model, node } = mount();
    click(only(node, 'grinta-veto'));
    const reason = only(node, 'grinta-veto-reason');
    reason.value = 'no';
    press(reason, 'Enter');
    press(reason, 'Enter');
    click(only(node, 'grinta-approve'));
    assert.deepEqual(model.sent, [{ event: 'veto', reason: 'no' }]);
  });

  it('stays disabled while the kernel stages the hunks, and comes back on a refusal', () => {
    const { model, node } = mount();
    const box = byClass(node, 'grinta-hunk-check')[1];
    box.checked = false;
    fire(box, new FakeEvent('change'));
    click(only(node, 'grinta-approve'));
    model.set({ status: 'staging…' });
    click(only(node, 'grinta-approve'));
    assert.equal(model.sent.length, 1, 'no second ApproveHunks while the first is staged');
    assert.deepEqual(disabled(node), [true, true, true]);
    model.set({ status: 'not decided: the file changed' });
    assert.deepEqual(disabled(node), [false, false, false]);
    click(only(node, 'grinta-approve'));
    assert.equal(model.sent.length, 2);
  });

  it('locks the hunk checkboxes on what was sent: the label never says other than the answer', () => {
    const { model, node } = mount();
    click(only(node, 'grinta-approve'));
    const boxes = byClass(node, 'grinta-hunk-check');
    assert.deepEqual(boxes.map(b => b.disabled), [true, true, true]);
    boxes[1].checked = false;
    fire(boxes[1], new FakeEvent('change'));
    assert.equal(only(node, 'grinta-approve').textContent, 'Approve', 'still the whole write that was sent');
    assert.equal(byClass(node, 'grinta-hunk-check')[1].checked, true);
    model.set({ status: 'not decided: the file changed' });
    assert.deepEqual(byClass(node, 'grinta-hunk-check').map(b => b.disabled), [false, false, false]);
  });

  it('approves a newer proposal only from its own drawing', () => {
    const { model, node } = mount();
    click(only(node, 'grinta-approve'));
    // The kernel refused the click (the proposal was edited) and drew the new one.
    model.set({ payload: payload({ edits: 1 }) });
    assert.deepEqual(disabled(node), [false, false, false]);
    click(only(node, 'grinta-approve'));
    assert.deepEqual(model.sent, [
      { event: 'approve', edits: 0 },
      { event: 'approve', edits: 1 }
    ]);
  });
});
