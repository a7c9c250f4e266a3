import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { LANGUAGES, languageForPath, Token, tokenizeHunk, tokenizeLines } from '../src/highlight';

const py = LANGUAGES.python;
const js = LANGUAGES.javascript;

/** Tokens as "cls:text" for the coloured ones, to keep expectations short. */
function coloured(tokens: Token[]): string[] {
  return tokens.filter(t => t.cls).map(t => `${t.cls}:${t.text}`);
}

describe('tokenizeLine', () => {
  it('colours Python keywords, builtins, strings, numbers and comments', () => {
    const [line] = tokenizeLines(['def f(x1): return len("a#b") + 0x1F  # done'], py);
    assert.deepEqual(coloured(line), [
      'keyword:def',
      'keyword:return',
      'builtin:len',
      'string:"a#b"',
      'number:0x1F',
      'comment:# done'
    ]);
  });

  it('keeps string prefixes and escapes inside the string', () => {
    const [line] = tokenizeLines(["x = rb'it\\'s' + f\"{y}\""], py);
    assert.deepEqual(coloured(line), ["string:rb'it\\'s'", 'string:f"{y}"']);
  });

  it('carries triple-quoted strings and block comments across lines', () => {
    const lines = tokenizeLines(['s = """start', 'middle if', 'end""" if x'], py);
    assert.deepEqual(lines.map(coloured), [
      ['string:"""start'],
      ['string:middle if'],
      ['string:end"""', 'keyword:if']
    ]);
    const c = tokenizeLines(['a /* one', 'two */ return `t', '${x}`'], js);
    assert.deepEqual(c.map(coloured), [
      ['comment:/* one'],
      ['comment:two */', 'keyword:return', 'string:`t'],
      ['string:${x}`']
    ]);
  });

  it('ends an unterminated one-line string at the end of the line', () => {
    const lines = tokenizeLines(['x = "open', 'if y'], py);
    assert.deepEqual(lines.map(coloured), [['string:"open'], ['keyword:if']]);
  });

  it('returns tokens that rebuild every line exactly', () => {
    const samples = [
      '',
      '    ',
      'for (let i = 0; i < 10; i++) { console.log(`${i}`) } // ok',
      "print('tab\\t', r\"\\d+\", 1_000.5e-3)",
      'weird \\ backslash " unclosed',
      '/* a */ b /* c'
    ];
    for (const lang of Object.values(LANGUAGES)) {
      const lines = tokenizeLines(samples, lang);
      lines.forEach((tokens, i) => assert.equal(tokens.map(t => t.text).join(''), samples[i]));
    }
  });
});

describe('tokenizeHunk', () => {
  it('lexes the old and new sides as separate streams', () => {
    const rows = [
      { kind: 'del', text: 'x = """' },
      { kind: 'add', text: 'x = 1' },
      { kind: 'context', text: 'if y' },
      { kind: 'note', text: 'No newline at end of file' }
    ];
    const tokens = tokenizeHunk(rows, py);
    // The removed line opened a string; the added line did not, so the
    // context line (shown from the new side) is code.
    assert.deepEqual(tokens.map(coloured), [['string:"""'], ['number:1'], ['keyword:if'], []]);
  });
});

describe('tokenizeHunk, starting inside a docstring', () => {
  const rows = (lines: string[]) => lines.map(text => ({ kind: 'context', text }));

  it('reads a leading closing quote as closing', () => {
    const tokens = tokenizeHunk(
      rows(['    Ousterhout, 2014).', '"""', '', 'from __future__ import annotations', 'import random']),
      py
    );
    assert.deepEqual(tokens.map(coloured), [
      ['string:    Ousterhout, 2014).'],
      ['string:"""'],
      [],
      ['keyword:from', 'keyword:import'],
      ['keyword:import']
    ]);
  });

  it('keeps the plain reading for a hunk that ends inside a docstring', () => {
    const tokens = tokenizeHunk(
      rows(['import os', 'if x:', '    return 1', 'def f():', '    """Summary.', '    More']),
      py
    );
    assert.deepEqual(tokens.map(coloured).slice(0, 3), [
      ['keyword:import'],
      ['keyword:if'],
      ['keyword:return', 'number:1']
    ]);
    assert.deepEqual(coloured(tokens[5]), ['string:    More']);
  });
});

describe('languageForPath', () => {
  it('maps extensions and a few file names', () => {
    assert.equal(languageForPath('raft_kv/node.py')?.name, 'python');
    assert.equal(languageForPath('web/App.TSX')?.name, 'javascript');
    assert.equal(languageForPath('Dockerfile')?.name, 'shell');
    assert.equal(languageForPath('notes.txt'), null);
    assert.equal(languageForPath('Makefile.in'), null);
  });
});
