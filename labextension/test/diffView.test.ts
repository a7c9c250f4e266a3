/**
 * A notebook's diff: the runtime shows a notebook as its cells' sources, each
 * opened by a header line (`#%% cell <id> (code)`); the card draws those lines
 * as cell headers, with their exact text, and everything else as code.
 */

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { isCellHeader, quotePathAscii, renderDiff, rowSpaces } from '../src/render/diffView';
import { byClass, FakeElement, installFakeDom } from './fakeDom';
import { fixture, RowCase } from './shared';

installFakeDom();

const NOTEBOOK_DIFF = [
  '--- a/analysis.ipynb',
  '+++ b/analysis.ipynb',
  '@@ -1,4 +1,6 @@',
  ' #%% cell 1a2b (markdown)',
  ' # Totals',
  ' #%%% cell c3d4 (code)',
  '-total = df.groupby("a").sum()',
  '+total = df.groupby("b").sum()',
  '+#%% cell e5f6 (code)',
  '+print(total)',
  ''
].join('\n');

function render(diff: string): FakeElement {
  return renderDiff(diff, false, [], 'test') as unknown as FakeElement;
}

describe('cell headers in a notebook diff', () => {
  it('are recognised by their exact prefix, in notebooks only', () => {
    assert.ok(isCellHeader('a.ipynb', '#%% cell abc (code)'));
    assert.ok(isCellHeader('dir/A.IPYNB', '#%%%% cell abc (markdown)'));
    assert.ok(!isCellHeader('a.py', '#%% cell abc (code)'), 'a .py file is code');
    assert.ok(!isCellHeader('a.ipynb', '# %% cell abc (code)'));
    assert.ok(!isCellHeader('a.ipynb', '#% cell abc (code)'));
    assert.ok(!isCellHeader('a.ipynb', '#%%cell abc (code)'));
    assert.ok(!isCellHeader('a.ipynb', ' #%% cell abc (code)'));
  });

  it('are drawn as headers with their exact text, added ones still marked added', () => {
    const view = render(NOTEBOOK_DIFF);
    const headers = byClass(view, 'grinta-diff-cell');
    assert.deepEqual(
      headers.map(row => byClass(row, 'grinta-diff-code')[0].textContent),
      ['#%% cell 1a2b (markdown)', '#%%% cell c3d4 (code)', '#%% cell e5f6 (code)']
    );
    for (const row of headers) {
      const code = byClass(row, 'grinta-diff-code')[0];
      assert.ok(code.classList.contains('grinta-diff-hunk-header'));
      assert.equal(code.childNodes.length, 1, 'one text, not comment tokens');
    }
    assert.ok(headers[2].classList.contains('grinta-diff-add'));
    assert.equal(byClass(headers[2], 'grinta-diff-new')[0].textContent, '5');
  });

  it('leave the cell sources as code rows', () => {
    const rows = byClass(render(NOTEBOOK_DIFF), 'grinta-diff-row');
    const plain = rows.filter(row => !row.classList.contains('grinta-diff-cell'));
    assert.deepEqual(
      plain.map(row => byClass(row, 'grinta-diff-code')[0].textContent),
      ['# Totals', 'total = df.groupby("a").sum()', 'total = df.groupby("b").sum()', 'print(total)']
    );
  });

  it('are plain code in any other file', () => {
    const diff = NOTEBOOK_DIFF.replace(/analysis\.ipynb/g, 'analysis.py');
    assert.equal(byClass(render(diff), 'grinta-diff-cell').length, 0);
  });
});

describe('rowSpaces', () => {
  const cases = fixture<RowCase[]>('row-cases.json');

  it('has the shared cases', () => {
    assert.ok(cases.length >= 15);
  });

  for (const c of cases) {
    it(`follows the rule runtime/display.py follows: ${c.name}`, () => {
      const rows = c.rows.map(([kind, text]) => ({ kind, oldLine: null, newLine: null, text }));
      assert.deepEqual(rowSpaces(rows), c.spaces);
    });
  }
});

describe('a file name with a letter past ASCII', () => {
  // The same answers as runtime/diffs.py's quote_path(path, ascii_only=True).
  const cases: [string, string][] = [
    ['c\u043enfig.py', '"c\\u043enfig.py"'],
    ['caf\u00e9/men\u00fa.py', '"caf\\u00e9/men\\u00fa.py"'],
    ['emoji\u{1F600}.py', '"emoji\\U0001f600.py"'],
    ['a"b\\c\tx\u00e9.py', '"a\\"b\\\\c\\tx\\u00e9.py"'],
    ['plain.py', 'plain.py']
  ];
  for (const [path, quoted] of cases) {
    it(`is quoted as git quotes it: ${JSON.stringify(path)}`, () => {
      assert.equal(quotePathAscii(path), quoted);
    });
  }

  it('is shown beside its escaped form on the card, so cоnfig.py never passes for config.py', () => {
    const diff = ['--- a/c\u043enfig.py', '+++ b/c\u043enfig.py', '@@ -1 +1 @@', '-DEBUG = False', '+DEBUG = True', ''];
    const card = render(diff.join('\n'));
    const escaped = byClass(card, 'grinta-diff-escaped');
    assert.equal(escaped.length, 1);
    assert.equal(escaped[0].textContent, '"c\\u043enfig.py"');
    const plain = render(diff.join('\n').replace(/c\u043enfig/g, 'config'));
    assert.equal(byClass(plain, 'grinta-diff-escaped').length, 0);
  });
});
