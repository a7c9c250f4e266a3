/**
 * Attacks on what the reviewer sees (round 3): the theme's contrast as the CSS
 * the cards use computes it, whitespace that changes and looks the same, what a
 * collapsed diff hides, counts the card states, and diffs that do not hold what
 * their hunk headers promise.
 */

import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';

import { stepCard } from '../src/render/stepCard';
import { byClass, click, FakeElement, installFakeDom } from './fakeDom';
import { fixture } from './shared';

// ---- A small reader of style/base.css: var(), color-mix(in srgb, ...), rgba, composited.

type RGBA = [number, number, number, number];

const NAMED: Record<string, RGBA> = {
  white: [255, 255, 255, 1],
  black: [0, 0, 0, 1],
  green: [0, 128, 0, 1],
  red: [255, 0, 0, 1],
  blue: [0, 0, 255, 1],
  transparent: [0, 0, 0, 0]
};

function parseColor(text: string): RGBA {
  const t = text.trim().toLowerCase();
  if (NAMED[t]) return NAMED[t];
  let m = /^#([0-9a-f]{3}|[0-9a-f]{6})$/.exec(t);
  if (m) {
    const hex = m[1].length === 3 ? [...m[1]].map(c => c + c).join('') : m[1];
    return [0, 2, 4].map(i => parseInt(hex.slice(i, i + 2), 16)).concat(1) as RGBA;
  }
  m = /^rgba?\(([^)]*)\)$/.exec(t);
  if (m) {
    const parts = m[1].split(',').map(p => Number(p.trim()));
    return [parts[0], parts[1], parts[2], parts.length > 3 ? parts[3] : 1];
  }
  throw new Error(`not a colour: ${text}`);
}

/** The index of the parenthesis that closes the one opened just before `start`. */
function closing(text: string, start: number): number {
  let depth = 1;
  for (let i = start; i < text.length; i++) {
    if (text[i] === '(') depth++;
    if (text[i] === ')' && --depth === 0) return i;
  }
  throw new Error(`unbalanced: ${text}`);
}

/** Split at commas outside parentheses. */
function topLevel(text: string): string[] {
  const out: string[] = [];
  let depth = 0;
  let from = 0;
  for (let i = 0; i < text.length; i++) {
    if (text[i] === '(') depth++;
    if (text[i] === ')') depth--;
    if (text[i] === ',' && depth === 0) {
      out.push(text.slice(from, i));
      from = i + 1;
    }
  }
  out.push(text.slice(from));
  return out.map(s => s.trim());
}

/** `expr` with every var() replaced by its value in `vars`, else its fallback. */
function substitute(expr: string, vars: Record<string, string>): string {
  const at = expr.indexOf('var(');
  if (at < 0) return expr;
  const end = closing(expr, at + 4);
  const [name, ...fallback] = topLevel(expr.slice(at + 4, end));
  const value = vars[name] ?? (fallback.length ? fallback.join(', ') : undefined);
  if (value === undefined) throw new Error(`no value for ${name}`);
  return substitute(expr.slice(0, at) + substitute(value, vars) + expr.slice(end + 1), vars);
}

function evalColor(expr: string): RGBA {
  const t = expr.trim();
  if (t.startsWith('color-mix(')) {
    const [space, a, b] = topLevel(t.slice('color-mix('.length, closing(t, 'color-mix('.length)));
    assert.equal(space, 'in srgb');
    const split = (s: string): [string, number | null] => {
      const m = /^(.*?)\s+(\d+(?:\.\d+)?)%$/.exec(s);
      return m ? [m[1], Number(m[2]) / 100] : [s, null];
    };
    const [ca, pa] = split(a);
    const [cb, pb] = split(b);
    const p = pa ?? (pb === null ? 0.5 : 1 - pb);
    const [x, y] = [evalColor(ca), evalColor(cb)];
    // Premultiplied alpha, as CSS Color 5 mixes.
    const alpha = x[3] * p + y[3] * (1 - p);
    const channel = (i: number) => (x[i] * x[3] * p + y[i] * y[3] * (1 - p)) / alpha;
    return [channel(0), channel(1), channel(2), alpha];
  }
  return parseColor(t);
}

function over(fg: RGBA, bg: RGBA): RGBA {
  const a = fg[3];
  return [0, 1, 2].map(i => fg[i] * a + bg[i] * (1 - a)).concat(1) as RGBA;
}

function luminance(c: RGBA): number {
  const [r, g, b] = c.slice(0, 3).map(v => {
    const s = v / 255;
    return s <= 0.03928 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
  });
  return 0.2126 * r + 0.7152 * g + 0.0722 * b;
}

function contrast(a: RGBA, b: RGBA): number {
  const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
  return (x + 0.05) / (y + 0.05);
}

interface Rule {
  selector: string;
  decls: Record<string, string>;
}

function rules(css: string): Rule[] {
  const clean = css.replace(/\/\*[\s\S]*?\*\//g, '');
  return [...clean.matchAll(/([^{}]+)\{([^{}]*)\}/g)].map(m => ({
    selector: m[1].trim().replace(/\s+/g, ' '),
    decls: Object.fromEntries(
      m[2]
        .split(';')
        .map(d => d.trim())
        .filter(Boolean)
        .map(d => [d.slice(0, d.indexOf(':')).trim(), d.slice(d.indexOf(':') + 1).trim()])
    )
  }));
}

const CSS = readFileSync(join(__dirname, '..', '..', 'style', 'base.css'), 'utf8');
const RULES = rules(CSS);
/** JupyterLab 4's own values of the variables base.css reads (from its theme CSS). */
const THEMES = fixture<Record<string, Record<string, string>>>('themes.json');
// A front end without JupyterLab's variables: every fallback.
THEMES['no theme (fallbacks)'] = {};

/** Every value the card's own custom property `name` takes in some rule. */
function customValues(name: string): string[] {
  return RULES.filter(r => name in r.decls).map(r => r.decls[name]);
}

/** `expr` with the card's own properties (--grinta-*) replaced, once for each value they take. */
function expand(expr: string): string[] {
  const m = /var\((--grinta-[a-z-]+)\)/.exec(expr);
  if (!m) return [expr];
  return customValues(m[1]).flatMap(value => expand(expr.replace(m[0], value)));
}

// The surfaces text is drawn on, each over the card's background.
const SURFACES: Record<string, string[]> = {
  card: [],
  code: ['var(--jp-layout-color2, #eee)'],
  add: ['var(--grinta-add-bg)'],
  del: ['var(--grinta-del-bg)'],
  hunk: ['var(--grinta-hunk-bg)'],
  invalid: ['rgba(248, 81, 73, 0.08)'],
  badge: ['rgba(128, 128, 128, 0.12)']
};

/** Which surfaces a rule's text can be drawn on. */
function surfacesOf(selector: string): string[] {
  if (/grinta-escape/.test(selector)) return Object.keys(SURFACES);
  if (/grinta-diff-add\b/.test(selector)) return ['add'];
  if (/grinta-diff-del\b/.test(selector)) return ['del'];
  if (/grinta-diff-hunk-header/.test(selector)) return ['hunk', 'add', 'del'];
  if (/grinta-tok-|grinta-diff-code|grinta-diff-num|grinta-diff-mark/.test(selector)) {
    return ['card', 'add', 'del'];
  }
  if (/grinta-diff-(file|path|status|added|removed)|grinta-toggle|grinta-pre|grinta-code/.test(selector)) {
    return ['code'];
  }
  if (/grinta-badge|grinta-status-|grinta-end-|grinta-guard-action/.test(selector)) return ['badge'];
  if (/grinta-invalid|grinta-error-|grinta-candidate/.test(selector)) return ['invalid'];
  if (/grinta-muted|grinta-kind/.test(selector)) return ['card', 'invalid'];
  return ['card'];
}

function surface(name: string, vars: Record<string, string>): RGBA {
  const card = evalColor(substitute('var(--jp-layout-color1, #fff)', vars));
  return SURFACES[name].reduce((bg, layer) => {
    const [expr] = expand(layer);
    return over(evalColor(substitute(expr, vars)), bg);
  }, card);
}

describe('the cards\' text is readable in every theme, as base.css computes its colours', () => {
  for (const [theme, vars] of Object.entries(THEMES)) {
    it(`every text colour keeps 4.5:1 in ${theme}`, () => {
      const low: string[] = [];
      for (const rule of RULES) {
        const color = rule.decls.color;
        if (!color || /placeholder|:disabled/.test(rule.selector)) continue;
        for (const expr of expand(color)) {
          const fg = evalColor(substitute(expr, vars));
          for (const name of surfacesOf(rule.selector)) {
            const bg = surface(name, vars);
            const ratio = contrast(over(fg, bg), bg);
            if (ratio < 4.5) low.push(`${rule.selector} on ${name}: ${ratio.toFixed(2)} (${expr})`);
          }
        }
      }
      assert.deepEqual(low, []);
    });
  }
});

// ---- The diff as the card draws it.

installFakeDom();

function step(fields: Record<string, unknown>): Record<string, unknown> {
  const base = { version: 1, session: 's3', step: 1, tool: 'replace_string', kind: 'write' };
  return { ...base, status: 'pending', ...fields };
}

function card(fields: Record<string, unknown>): FakeElement {
  const built = stepCard(step(fields)) as unknown as FakeElement;
  assert.equal(byClass(built, 'grinta-problem').length, 0, built.textContent);
  return built;
}

/** The code cells of the rows, each as [role, text, [whitespace drawn visibly]]. */
function codeRows(root: FakeElement): [string, string, string[]][] {
  return byClass(root, 'grinta-diff-row').map(row => {
    const code = byClass(row, 'grinta-diff-code')[0];
    const role = ['context', 'add', 'del', 'note'].find(k => row.classList.contains(`grinta-diff-${k}`)) ?? '?';
    return [role, code.textContent, byClass(code, 'grinta-ws').map(w => w.textContent)];
  });
}

describe('a change that is only whitespace looks like one', () => {
  it('draws the trailing spaces an added line gained', () => {
    const diff = '--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-x = 1\n+x = 2   \n';
    assert.deepEqual(codeRows(card({ diff })), [
      ['del', 'x = 1', []],
      ['add', 'x = 2   ', ['   ']]
    ]);
  });

  it('draws every space of a line whose only change is trailing spaces', () => {
    const diff = '--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-x = 1\n+x = 1   \n';
    assert.deepEqual(codeRows(card({ diff })), [
      ['del', 'x = 1', [' ', ' ']],
      ['add', 'x = 1   ', [' ', ' ', '   ']]
    ]);
  });

  it('draws every tab and space of a line re-indented from a tab to spaces', () => {
    const diff = '--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,2 @@\n def f():\n-\treturn 1\n+        return 1\n';
    const view = card({ diff });
    assert.deepEqual(codeRows(view), [
      ['context', 'def f():', []],
      ['del', '\treturn 1', ['\t', ' ']],
      ['add', '        return 1', ['        ', ' ']]
    ]);
    const tabs = byClass(view, 'grinta-ws-tab').map(w => w.textContent);
    assert.deepEqual(tabs, ['\t'], 'the tab is drawn apart from the spaces');
  });

  it('boxes a no-break space that reads as a space, naming it', () => {
    const diff = '--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-x = 1\n+x\u00a0= 1\n';
    const view = card({ diff });
    const odd = byClass(view, 'grinta-ws-odd');
    assert.deepEqual(odd.map(w => w.textContent), ['\u00a0']);
    assert.match(odd[0].getAttribute('title') ?? '', /U\+00A0/);
  });

  it('shows the letters of two rows that differ only in how an accent is written', () => {
    const diff = "--- a/r.py\n+++ b/r.py\n@@ -1 +1 @@\n-ADMIN = 'g\u00e9rant'\n+ADMIN = 'ge\u0301rant'\n";
    const view = card({ diff });
    assert.deepEqual(
      codeRows(view).map(([role, text]) => [role, text]),
      [
        ['del', "ADMIN = 'g\\xe9rant'"],
        ['add', "ADMIN = 'ge\\u0301rant'"]
      ]
    );
    assert.deepEqual(
      byClass(view, 'grinta-escape').map(e => e.textContent),
      ['\\xe9', '\\u0301']
    );
  });

  it('leaves an ordinary change of accented text drawn as it is', () => {
    const diff = "--- a/r.py\n+++ b/r.py\n@@ -1 +1 @@\n-NAME = 'caf\u00e9'\n+NAME = 'th\u00e9'\n";
    assert.deepEqual(codeRows(card({ diff })).map(([, text]) => text), ["NAME = 'caf\u00e9'", "NAME = 'th\u00e9'"]);
  });

  it('leaves ordinary code alone: no whitespace drawn in an ordinary change', () => {
    const diff = '--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n';
    assert.equal(byClass(card({ diff }), 'grinta-ws').length, 0);
  });
});

describe('the counts a file header states are the rows drawn', () => {
  it("does not take a payload's counts over the rows it shows", () => {
    const diff = '--- a/f.py\n+++ b/f.py\n@@ -1,2 +1 @@\n-x = 1\n-y = 2\n+x = 1\n';
    const view = card({ diff, files: [{ path: 'f.py', added: 1, removed: 0 }] });
    assert.deepEqual(byClass(view, 'grinta-diff-removed').map(e => e.textContent), ['−2']);
    assert.deepEqual(byClass(view, 'grinta-diff-added').map(e => e.textContent), ['+1']);
  });

  it("states the whole change's counts for a diff cut short", () => {
    const diff = '--- a/f.py\n+++ b/f.py\n@@ -1,40 +1,40 @@\n-x = 1\n+x = 2\n';
    const view = card({ diff, diff_truncated: true, files: [{ path: 'f.py', added: 40, removed: 40 }] });
    assert.deepEqual(byClass(view, 'grinta-diff-removed').map(e => e.textContent), ['−40']);
  });
});

describe('a diff that does not hold what its hunk headers promise', () => {
  it('says a hunk is incomplete instead of drawing it as whole', () => {
    const diff = '--- a/f.py\n+++ b/f.py\n@@ -1,3 +1,3 @@\n-a\n+b\n';
    const problems = byClass(card({ diff }), 'grinta-diff-problem');
    assert.equal(problems.length, 1);
    assert.match(problems[0].textContent, /incomplete: its header promises 2 more old and 2 more new lines/);
  });

  it('leaves the last hunk of a diff cut short to the note that says it was cut', () => {
    const diff = '--- a/f.py\n+++ b/f.py\n@@ -1 +1 @@\n-a\n+b\n@@ -9,3 +9,3 @@\n-c\n';
    const view = card({ diff, diff_truncated: true });
    assert.equal(byClass(view, 'grinta-diff-problem').length, 0);
    assert.match(view.textContent, /cut short/);
  });
});

describe('a diff cut short names what it hides', () => {
  it('names every file the write changes, a file past the cut too', () => {
    const diff = '--- a/big.txt\n+++ b/big.txt\n@@ -1,40 +1,40 @@\n-x = 1\n+x = 2\n';
    const files = [
      { path: 'big.txt', added: 2000, removed: 2000 },
      { path: 'small.py', added: 1, removed: 1 }
    ];
    const view = card({ diff, diff_truncated: true, files });
    const note = byClass(view, 'grinta-diff-cut');
    assert.equal(note.length, 1);
    assert.match(note[0].textContent, /The write changes all of it, the rest too/);
    assert.deepEqual(
      byClass(note[0], 'grinta-list').flatMap(list => list.childNodes.map(li => li.textContent)),
      ['big.txt (+2000 −2000, cut short above)', 'small.py (+1 −1, not shown above)']
    );
  });
});

describe('a folded diff says what it hides', () => {
  it('counts the removed and added lines a cut first hunk folds away', () => {
    const dels = Array.from({ length: 90 }, (_, i) => `-old_${i} = ${i}`);
    const adds = Array.from({ length: 90 }, (_, i) => `+new_${i} = ${i}`);
    const diff = ['--- a/f.py', '+++ b/f.py', '@@ -1,90 +1,90 @@', ...dels, ...adds, ''].join('\n');
    const view = card({ diff, step: 41 });
    const rows = byClass(view, 'grinta-diff-row');
    assert.equal(rows.filter(r => !r.hidden).length, 80);
    const said = byClass(view, 'grinta-diff-folded');
    assert.equal(said.length, 1);
    assert.equal(said[0].hidden, false);
    assert.match(said[0].textContent, /hidden: 90 added and 10 removed lines/);
    click(byClass(view, 'grinta-toggle')[0]);
    assert.equal(said[0].hidden, true, 'nothing hidden once open');
  });
});
