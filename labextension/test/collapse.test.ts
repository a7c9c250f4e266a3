import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { DIFF_ROW_LIMIT, foldText, planDiff } from '../src/collapse';
import { DiffFile, DiffRow, parseUnifiedDiff } from '../src/diff';

/** A file whose hunks have the given numbers of rows. */
function file(...sizes: number[]): DiffFile {
  const row: DiffRow = { kind: 'context', oldLine: 1, newLine: 1, text: '' };
  const [f] = parseUnifiedDiff('--- a/f\n+++ b/f\n');
  f.hunks = sizes.map(n => ({
    header: '@@',
    oldStart: 1,
    oldCount: n,
    newStart: 1,
    newCount: n,
    section: '',
    rows: Array(n).fill(row)
  }));
  return f;
}

describe('planDiff', () => {
  it('shows everything up to the limit', () => {
    const plan = planDiff([file(30, 30), file(20)]);
    assert.equal(DIFF_ROW_LIMIT, 80);
    assert.deepEqual(plan, { totalRows: 80, shownRows: 80, shown: [[30, 30], [20]] });
  });

  it('shows whole hunks in order while they fit, then hides the rest', () => {
    const plan = planDiff([file(30, 40), file(20, 5)]);
    assert.deepEqual(plan.shown, [[30, 40], [0, 0]]);
    assert.equal(plan.totalRows, 95);
    assert.equal(plan.shownRows, 70);
  });

  it('never skips a hunk to show a later one', () => {
    const plan = planDiff([file(10, 100, 5)]);
    assert.deepEqual(plan.shown, [[10, 0, 0]]);
  });

  it('cuts a first hunk longer than the limit', () => {
    const plan = planDiff([file(250, 3)], 80);
    assert.deepEqual(plan.shown, [[80, 0]]);
    assert.equal(plan.shownRows, 80);
  });
});

describe('foldText', () => {
  it('leaves short text alone', () => {
    assert.deepEqual(foldText('a\nb\n', 6, 400), { folded: false, preview: 'a\nb\n', lines: 2 });
  });

  it('folds by lines and by characters', () => {
    const many = Array.from({ length: 10 }, (_, i) => `line ${i}`).join('\n');
    const byLines = foldText(many, 3, 400);
    assert.equal(byLines.folded, true);
    assert.equal(byLines.lines, 10);
    assert.equal(byLines.preview, 'line 0\nline 1\nline 2 …');
    const byChars = foldText('x'.repeat(1000), 6, 10);
    assert.equal(byChars.preview, 'xxxxxxxxxx …');
  });
});
