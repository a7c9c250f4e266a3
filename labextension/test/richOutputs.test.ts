/**
 * Rich outputs on the step card (src/render/richOutputs.ts): an execute's
 * plot shows as an image from its base64 data, anything else by its
 * description, and no markup from the payload is ever rendered.
 */

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { readOutputs } from '../src/render/richOutputs';
import { stepCard } from '../src/render/stepCard';
import { byClass, FakeElement, FakeNode, installFakeDom } from './fakeDom';

installFakeDom();

// A 1x1 PNG.
const PNG =
  'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==';

function payload(outputs: unknown): Record<string, unknown> {
  return {
    version: 1,
    session: 's1',
    step: 2,
    tool: 'execute',
    kind: 'command',
    status: 'committed',
    arguments: { code: 'plt.plot([1, 2])' },
    observation: { ok: true, output: 'ok (0.1s)\n[figure 1: image/png 1x1]', exit_code: null, outputs }
  };
}

function render(data: unknown): FakeElement {
  const card = stepCard(data) as unknown as FakeElement;
  assert.equal(byClass(card, 'grinta-problem').length, 0, card.textContent);
  return card;
}

function tags(node: FakeNode): string[] {
  const own = node instanceof FakeElement ? [node.tagName] : [];
  return [...own, ...node.childNodes.flatMap(tags)];
}

describe('rich outputs', () => {
  it('draws an image output from its base64 data, with its description', () => {
    const card = render(payload([{ 'image/png': PNG, 'text/plain': '[figure 1: image/png 1x1]' }]));
    const [image] = byClass(card, 'grinta-rich-image');
    assert.equal(image.tagName, 'IMG');
    assert.equal(image.getAttribute('src'), `data:image/png;base64,${PNG}`);
    assert.equal(image.getAttribute('alt'), '[figure 1: image/png 1x1]');
    assert.deepEqual(
      byClass(card, 'grinta-rich-description').map(d => d.textContent),
      ['[figure 1: image/png 1x1]']
    );
  });

  it('never renders HTML from the payload: a text/html output shows its description', () => {
    const html = '<img src=x onerror="alert(1)"><script>alert(2)</script>';
    const card = render(
      payload([{ 'text/html': html, 'text/plain': '[value: text/html, 52 characters]' }])
    );
    assert.equal(byClass(card, 'grinta-rich-image').length, 0);
    assert.ok(!tags(card).includes('SCRIPT'));
    assert.equal(tags(card).filter(t => t === 'IMG').length, 0);
    assert.deepEqual(
      byClass(card, 'grinta-rich-description').map(d => d.textContent),
      ['[value: text/html, 52 characters]']
    );
  });

  it('shows a description holding markup as text', () => {
    const card = render(payload([{ 'text/plain': '<b>bold</b>' }]));
    assert.equal(byClass(card, 'grinta-rich-description')[0].textContent, '<b>bold</b>');
    assert.ok(!tags(card).includes('B'));
  });

  it('skips what is not an output and draws no image from data that is not base64', () => {
    const outputs = readOutputs([
      null,
      'text',
      [1],
      { 'image/png': 'not base64 "><script>', 'text/plain': '[figure 2]' },
      { 'image/gif': PNG, 'text/plain': '[figure 3]' },
      { 'image/jpeg': PNG }
    ]);
    assert.deepEqual(outputs, [
      { description: '[figure 2]', image: null },
      { description: '[figure 3]', image: null },
      { description: '[output]', image: { mime: 'image/jpeg', data: PNG } }
    ]);
    assert.deepEqual(readOutputs('nope'), []);
    assert.equal(readOutputs(Array(20).fill({ 'text/plain': 'x' })).length, 8);
  });

  it('shows no section when there are no outputs (older payloads have none)', () => {
    for (const outputs of [[], undefined]) {
      const card = render(payload(outputs));
      assert.equal(byClass(card, 'grinta-rich-outputs').length, 0);
    }
  });

  it('shows the code an execute runs whole and highlighted, not folded among the arguments', () => {
    const code = Array.from({ length: 40 }, (_, i) => `total_${i} = sum(range(${i}))`).join('\n');
    const data = { ...payload([]), arguments: { code, timeout: 30 }, observation: null };
    const card = render(data);
    const [shown] = byClass(card, 'grinta-executed-code');
    assert.equal(shown.textContent, code);
    assert.ok(byClass(shown, 'grinta-tok-number').length > 0, 'python is highlighted');
    const [args] = byClass(card, 'grinta-arguments');
    assert.ok(!args.textContent.includes('total_0'), 'the code is not repeated in the arguments');
    assert.ok(args.textContent.includes('timeout'));
  });
});
