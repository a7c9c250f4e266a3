import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { hasUnsafe, visible, visibleParts } from '../src/visible';
import { fixture, VisibleCase } from './shared';

describe('visible', () => {
  const cases = fixture<VisibleCase[]>('visible-cases.json');

  it('has the shared cases', () => {
    assert.ok(cases.length >= 20);
  });

  for (const c of cases) {
    it(`follows the rule runtime/display.py follows: ${c.name}`, () => {
      assert.equal(visible(c.text, c.keep_newlines), c.visible);
      assert.deepEqual(
        visibleParts(c.text, c.keep_newlines).map(p => [p.text, p.escaped]),
        c.parts
      );
      assert.equal(
        hasUnsafe(c.text),
        c.parts.some(([text, escaped]) => escaped && text !== '\\n')
      );
    });
  }
});
