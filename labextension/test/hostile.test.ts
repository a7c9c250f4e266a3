/**
 * Hostile text through the parser and the cards: every diff line shows by its
 * role, every control character as an escape in a `grinta-escape` span. The
 * diffs are the runtime's own (test/fixtures/hostile-diffs.json, shared with
 * tests/test_render_hostile.py); the cards are built on a fake DOM (fakeDom.ts).
 */

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { DiffFile, parseUnifiedDiff, unquotePath } from '../src/diff';
import { sessionCard } from '../src/render/sessionCard';
import { stepCard } from '../src/render/stepCard';
import { visible } from '../src/visible';
import { byClass, FakeElement, FakeNode, installFakeDom } from './fakeDom';
import { DiffCase, fixture, RowEntry } from './shared';

installFakeDom();

// Written out, not computed with `visible`: the test states the spelling a reader sees.
const HOSTILE = 'A\rB\x1b[2Kc\bd\u202eE\u2028F\u200bG';
const SHOWN = 'A\\rB\\x1b[2Kc\\bd\\u202eE\\u2028F\\u200bG';
const ESCAPES = ['\\r', '\\x1b', '\\b', '\\u202e', '\\u2028', '\\u200b'];
// Characters that must never reach a card's text (newline and tab may).
const RAW = /[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]/;
const CASES = fixture<DiffCase[]>('hostile-diffs.json');

function step(fields: Record<string, unknown>): Record<string, unknown> {
  const base = { version: 1, session: 's1', step: 1, tool: 'create', kind: 'write' };
  return { ...base, status: 'pending', ...fields };
}

function render(build: (data: unknown) => HTMLElement, payload: unknown): FakeElement {
  const card = build(payload) as unknown as FakeElement;
  assert.equal(byClass(card, 'grinta-problem').length, 0, card.textContent);
  return card;
}

function entries(files: DiffFile[]): DiffCase['files'] {
  return files.map(f => ({
    old_path: f.oldPath,
    new_path: f.newPath,
    notes: f.notes,
    hunks: f.hunks.map(h => ({
      header: h.header,
      rows: h.rows.map((r): RowEntry => [r.kind, r.oldLine, r.newLine, r.text])
    }))
  }));
}

function rowsOf(files: DiffFile[]): RowEntry[] {
  return entries(files).flatMap(f => f.hunks.flatMap(h => h.rows));
}

function cell(row: FakeElement, name: string): FakeElement {
  return byClass(row, name)[0];
}

function role(row: FakeElement): string | undefined {
  return ['context', 'add', 'del', 'note'].find(k => row.classList.contains(`grinta-diff-${k}`));
}

/** Every attribute value in the card, for checking that none holds a raw control character. */
function attributes(node: FakeNode): string[] {
  const own = node instanceof FakeElement ? [...node.attributes.values(), node.title] : [];
  return [...own, ...node.childNodes.flatMap(attributes)];
}

describe('the diffs the runtime made', () => {
  for (const c of CASES) {
    it(`parseUnifiedDiff reads the rows parse_unified reads: ${c.name}`, () => {
      assert.deepEqual(entries(parseUnifiedDiff(c.diff)), c.files);
    });

    it(`the card shows each row by its role, escaped: ${c.name}`, () => {
      const card = render(stepCard, step({ diff: c.diff }));
      assert.deepEqual(
        byClass(card, 'grinta-diff-path').map(p => p.textContent),
        c.files.map(f => visible(f.new_path ?? f.old_path ?? '', false))
      );
      const expected = c.files.flatMap(f => f.hunks.flatMap(h => h.rows));
      const rows = byClass(card, 'grinta-diff-row');
      assert.deepEqual(
        rows.map(r => [
          role(r),
          cell(r, 'grinta-diff-old').textContent,
          cell(r, 'grinta-diff-new').textContent,
          cell(r, 'grinta-diff-code').textContent
        ]),
        expected.map(([kind, old, line, text]) => [
          kind,
          String(old ?? ''),
          String(line ?? ''),
          visible(text, false)
        ])
      );
      const hunks = c.files.flatMap(f => f.hunks.map(h => h.header));
      assert.deepEqual(
        byClass(card, 'grinta-diff-hunk').map(r => r.textContent),
        hunks
      );
      assert.doesNotMatch(card.textContent, RAW);
      assert.equal(attributes(card).filter(a => RAW.test(a)).length, 0);
    });

    it(`a diff cut anywhere keeps the role of every line it still shows: ${c.name}`, () => {
      const whole = rowsOf(parseUnifiedDiff(c.diff));
      for (let cut = 0; cut <= c.diff.length; cut++) {
        const rows = rowsOf(parseUnifiedDiff(c.diff.slice(0, cut)));
        assert.ok(rows.length <= whole.length, `cut at ${cut}`);
        rows.forEach((row, i) => {
          const [kind, old, line, text] = whole[i];
          assert.deepEqual(row.slice(0, 3), [kind, old, line], `cut at ${cut}, row ${i}`);
          const last = i === rows.length - 1;
          assert.ok(last ? text.startsWith(row[3]) : text === row[3], `cut at ${cut}, row ${i}`);
        });
      }
    });
  }

  it('shows each escape in its own styled span', () => {
    const c = CASES.find(x => x.name === 'control characters in content and name');
    assert.ok(c);
    const card = render(stepCard, step({ diff: c.diff }));
    const [first] = byClass(card, 'grinta-diff-row');
    assert.equal(cell(first, 'grinta-diff-code').textContent, SHOWN);
    assert.deepEqual(
      byClass(first, 'grinta-escape').map(e => e.textContent),
      ESCAPES
    );
    const path = byClass(card, 'grinta-diff-path')[0];
    assert.equal(path.textContent, 'notes\\u202e\\x1b[2K.txt');
    assert.deepEqual(
      byClass(path, 'grinta-escape').map(e => e.textContent),
      ['\\u202e\\x1b']
    );
  });

  it('escapes inside highlighted code too', () => {
    const line = `s = "${HOSTILE}"  # note \u202e`;
    const diff = `--- /dev/null\n+++ b/x.py\n@@ -0,0 +1 @@\n+${line}\n`;
    const card = render(stepCard, step({ diff }));
    const code = cell(byClass(card, 'grinta-diff-row')[0], 'grinta-diff-code');
    assert.equal(code.textContent, `s = "${SHOWN}"  # note \\u202e`);
    assert.ok(byClass(code, 'grinta-tok-string').length > 0, 'still highlighted');
    assert.deepEqual(
      byClass(code, 'grinta-escape').map(e => e.textContent),
      [...ESCAPES, '\\u202e']
    );
  });

  it('reads a diff saved with CRLF line ends, and keeps a lone CR in a line', () => {
    const crlf = '--- a/f\r\n+++ b/f\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\r\n';
    assert.deepEqual(rowsOf(parseUnifiedDiff(crlf)), [
      ['del', 1, null, 'a'],
      ['add', null, 1, 'b\r']
    ]);
    const lf = '--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\r\n+b\r\n';
    assert.deepEqual(rowsOf(parseUnifiedDiff(lf)), [
      ['del', 1, null, 'a\r'],
      ['add', null, 1, 'b\r']
    ]);
  });

  it('unquotes C-quoted header paths as runtime/diffs.py quotes them', () => {
    assert.equal(unquotePath('"b/a\\nb.py"'), 'b/a\nb.py');
    assert.equal(unquotePath('"b/q\\"\\\\\\t\\r\\u202e\\u001b.txt"'), 'b/q"\\\t\r\u202e\x1b.txt');
    assert.equal(unquotePath('b/plain.py'), 'b/plain.py');
    assert.equal(unquotePath('"'), '"');
  });
});

describe('every field of a card', () => {
  it('shows control characters escaped in a step card', () => {
    const card = render(
      stepCard,
      step({
        tool: `create${HOSTILE}`,
        status: 'vetoed',
        text: `text ${HOSTILE}`,
        arguments: { path: `path ${HOSTILE}`, [`key ${HOSTILE}`]: [`item ${HOSTILE}\nline 2`] },
        summary: `summary ${HOSTILE}`,
        resolutions: [
          {
            target: `target ${HOSTILE}`,
            chosen: `chosen ${HOSTILE}`,
            reason: `reason ${HOSTILE}`,
            candidates: [`candidate ${HOSTILE}`]
          }
        ],
        validation: {
          ok: false,
          code: `code ${HOSTILE}`,
          message: `message ${HOSTILE}`,
          candidates: [
            {
              path: `where ${HOSTILE}.py`,
              line: 3,
              snippet: `snippet ${HOSTILE}`,
              note: `note ${HOSTILE}`,
              kind: 'function',
              name: `name ${HOSTILE}`
            }
          ]
        },
        decision: 'veto',
        reason: `veto ${HOSTILE}`,
        observation: { ok: false, output: `output ${HOSTILE}\nmore`, exit_code: 1 },
        guards: [{ guard: `guard ${HOSTILE}`, detail: `detail ${HOSTILE}`, action: 'warn' }]
      })
    );
    const text = card.textContent;
    assert.doesNotMatch(text, RAW);
    const fields = ['text', 'path', 'key', 'item', 'summary', 'target', 'chosen', 'reason'];
    fields.push('candidate', 'code', 'message', 'snippet', 'note', 'name', 'veto', 'output');
    fields.push('guard', 'detail');
    for (const field of fields) {
      assert.ok(text.includes(`${field} ${SHOWN}`), field);
    }
    assert.ok(text.includes(`create${SHOWN}`) && text.includes(`where ${SHOWN}.py:3`));
    const escaped = byClass(card, 'grinta-escape').map(e => e.textContent);
    assert.ok(escaped.filter(e => e === '\\x1b').length >= fields.length + 2);
    assert.equal(attributes(card).filter(a => RAW.test(a)).length, 0);
  });

  it('shows control characters escaped in a session card', () => {
    const card = render(sessionCard, {
      version: 1,
      session: `s ${HOSTILE}`,
      task: `task ${HOSTILE}`,
      model: `model ${HOSTILE}`,
      toolset: 'intent',
      root: `/root ${HOSTILE}`,
      end_reason: `end ${HOSTILE}`,
      summary: `summary ${HOSTILE}`,
      metrics: { steps: 1 },
      log: `/log ${HOSTILE}`,
      steps: [step({ text: `step ${HOSTILE}` })]
    });
    const text = card.textContent;
    assert.doesNotMatch(text, RAW);
    for (const field of ['s', 'task', 'model', 'root', 'end', 'summary', 'log', 'step']) {
      assert.ok(text.includes(`${field} ${SHOWN}`), field);
    }
    assert.equal(attributes(card).filter(a => RAW.test(a)).length, 0);
  });
});
