/**
 * A unified diff as per-file tables: old and new line numbers, a marker
 * column and highlighted code. Long diffs start collapsed behind a toggle.
 * Given a `HunkPicker` (a pending write, src/review.ts), each hunk header
 * carries a checkbox: hunks are numbered from 0 across files.
 *
 * A notebook's diff is of its cells as the runtime shows them (source as
 * code, each cell opened by a line `#%% cell <id> (code)`): in a `.ipynb`
 * file such lines are drawn as cell headers, their text exact.
 *
 * Whitespace that a change may be all about is drawn visibly (its text kept
 * exact): trailing spaces and tabs of added and removed rows, every space and
 * tab of a row whose change is whitespace only, and spaces that are not the
 * ASCII space (a no-break space reads as one). A row that only draws like one of the
 * other side (`é` as one character, or as `e` and a combining accent) shows every
 * character past ASCII as its escape, as the terminal and the card's HTML do. A file's `+added −removed` are
 * the rows drawn, unless the diff was cut short (then the payload's counts of
 * the whole change). A hunk whose header promises rows the diff does not hold
 * says so, rather than looking whole.
 */

import { planDiff } from '../collapse';
import { DiffFile, DiffRow, hunkShortfall, parseUnifiedDiff, rowCount } from '../diff';
import { languageForPath, Token, tokenizeHunk } from '../highlight';
import type { FileStat } from '../schema';
import { h, oneLine } from './dom';
import { escapeChar } from '../visible';
import { recall, remember } from './memory';

const MARKS = { context: ' ', add: '+', del: '-', note: '\\' } as const;

// `#%%`, optionally more `%`, then ` cell `: the runtime's cell header (runtime/notebook.py).
const CELL_HEADER = /^#%%+ cell /;

const C_ESCAPES: Record<string, string> = { '\n': '\\n', '\t': '\\t', '\r': '\\r', '"': '\\"', '\\': '\\\\' };

/**
 * `path` C-quoted with every character past ASCII escaped, as git shows names and as the
 * runtime's `quote_path(path, ascii_only=True)` does (runtime/diffs.py): `"c\u043enfig.py"`.
 */
export function quotePathAscii(path: string): string {
  // eslint-disable-next-line no-control-regex
  const unsafe = /[\x00-\x1f\x7f"\\]|[^\x00-\x7f]/gu;
  if (!path.match(unsafe)) {
    return path;
  }
  const escaped = path.replace(unsafe, char => {
    const named = C_ESCAPES[char];
    if (named !== undefined) {
      return named;
    }
    const code = char.codePointAt(0) ?? 0;
    return code < 0x10000
      ? `\\u${code.toString(16).padStart(4, '0')}`
      : `\\U${code.toString(16).padStart(8, '0')}`;
  });
  return `"${escaped}"`;
}

/** Whether a diff row of the file at `path` is a notebook cell's header line. */
export function isCellHeader(path: string, text: string): boolean {
  return /\.ipynb$/i.test(path) && CELL_HEADER.test(text);
}

/** Which hunks the reviewer keeps; `changed` is called after each checkbox toggle. */
export interface HunkPicker {
  selected: Set<number>;
  total: number;
  changed: () => void;
  /** The answer was sent: the checkboxes show what it said and no longer change. */
  locked?: boolean;
}

/** `key` names this diff in the reader's memory of what they expanded. */
export function renderDiff(
  diff: string,
  truncated: boolean,
  stats: FileStat[],
  key: string,
  picker: HunkPicker | null = null
): HTMLElement {
  const files = parseUnifiedDiff(diff);
  if (rowCount(files) === 0) {
    return h('pre', { class: 'grinta-pre' }, diff);
  }
  const plan = planDiff(files);
  const hidden: HTMLElement[] = [];
  let first = 0;
  const total = files.reduce((n, file) => n + file.hunks.length, 0);
  const view = h(
    'div',
    { class: 'grinta-diff' },
    files.map((file, f) => {
      // A cut diff's last hunk is short by design (the note below says the diff was cut).
      const cut = truncated ? total - 1 - first : -1;
      const block = renderFile(file, truncated ? stats : [], plan.shown[f], hidden, picker, first, cut);
      first += file.hunks.length;
      return block;
    })
  );
  if (hidden.length) {
    view.classList.add('grinta-collapsed');
    // Say what the fold hides by role, so a removed line never vanishes unsaid.
    const folded = files.flatMap((file, f) => file.hunks.flatMap((hunk, k) => hunk.rows.slice(plan.shown[f][k])));
    const changes = {
      added: folded.filter(r => r.kind === 'add').length,
      removed: folded.filter(r => r.kind === 'del').length
    };
    const said = h(
      'span',
      { class: 'grinta-muted grinta-diff-folded' },
      ` hidden: ${changes.added} added and ${changes.removed} removed lines`
    );
    view.append(toggle(view, hidden, plan.totalRows, plan.totalRows - plan.shownRows, key, said), said);
  }
  if (truncated) {
    view.append(cutNote(files, stats));
  }
  return view;
}

/**
 * Under a diff cut short: what the write changes past the cut. A file past it is on no other
 * surface, and approving commits it too, so every file is named with its counts and how much
 * of it the rows above show (as the card's text/plain and HTML do: jupyter/mime.py).
 */
function cutNote(files: DiffFile[], stats: FileStat[]): HTMLElement {
  const shown = files.map(f => f.path);
  const last = shown[shown.length - 1];
  const items = stats.map(s => {
    const where = !shown.includes(s.path) ? 'not shown above' : s.path === last ? 'cut short above' : 'shown above';
    return h('li', null, oneLine(s.path), ` (+${s.added} −${s.removed}, ${where})`);
  });
  return h(
    'div',
    { class: 'grinta-note grinta-diff-cut' },
    'The diff was cut short to keep the notebook small; the session log has all of it.' +
      (items.length ? ' The write changes all of it, the rest too; its files:' : ''),
    items.length > 0 && h('ul', { class: 'grinta-list' }, items)
  );
}

function renderFile(
  file: DiffFile,
  stats: FileStat[],
  shown: number[],
  hidden: HTMLElement[],
  picker: HunkPicker | null,
  first: number,
  cut: number
): HTMLElement {
  const stat = stats.find(s => s.path === file.path);
  const added = stat?.added ?? file.added;
  const removed = stat?.removed ?? file.removed;
  const status = file.status === 'modified' ? null : file.status === 'added' ? 'new file' : 'deleted';
  const header = h(
    'div',
    { class: 'grinta-diff-file' },
    h('span', { class: 'grinta-diff-path' }, oneLine(file.path || '(unnamed)')),
    status && h('span', { class: 'grinta-diff-status' }, status),
    // A letter past ASCII beside its escaped form: cоnfig.py (Cyrillic о) is not config.py.
    !/^[\x00-\x7f]*$/.test(file.path) &&
      h('span', { class: 'grinta-diff-status grinta-diff-escaped' }, quotePathAscii(file.path)),
    h('span', { class: 'grinta-diff-added' }, `+${added}`),
    h('span', { class: 'grinta-diff-removed' }, `−${removed}`)
  );
  const lang = languageForPath(file.path);
  const body = h('tbody', null);
  file.hunks.forEach((hunk, k) => {
    const headRow = h(
      'tr',
      { class: 'grinta-diff-hunk' },
      h(
        'td',
        { class: 'grinta-diff-hunk-header', colspan: 4 },
        picker && hunkCheckbox(picker, first + k),
        hunk.header
      )
    );
    body.append(headRow);
    if (shown[k] === 0) {
      hidden.push(headRow);
    }
    const tokens = lang ? tokenizeHunk(hunk.rows, lang) : hunk.rows.map(r => [plain(r.text)]);
    const spaces = rowSpaces(hunk.rows);
    hunk.rows.forEach((row, r) => {
      const cellHeader = row.kind !== 'note' && isCellHeader(file.path, row.text);
      const tr = h(
        'tr',
        { class: `grinta-diff-row grinta-diff-${row.kind}${cellHeader ? ' grinta-diff-cell' : ''}` },
        h('td', { class: 'grinta-diff-num grinta-diff-old' }, row.oldLine ?? ''),
        h('td', { class: 'grinta-diff-num grinta-diff-new' }, row.newLine ?? ''),
        h('td', { class: 'grinta-diff-mark' }, MARKS[row.kind]),
        cellHeader
          ? // Styled as a hunk header (theme-checked colours), not highlighted as a comment.
            h('td', { class: 'grinta-diff-code grinta-diff-hunk-header' }, oneLine(row.text))
          : h(
              'td',
              { class: 'grinta-diff-code' },
              spaces[r] === 'letters' ? renderLetters(row.text) : renderCode(tokens[r], spaces[r])
            )
      );
      body.append(tr);
      if (r >= shown[k]) {
        hidden.push(tr);
      }
    });
    const [oldMissing, newMissing] = hunkShortfall(hunk);
    if ((oldMissing || newMissing) && k !== cut) {
      const tr = h(
        'tr',
        { class: 'grinta-diff-problem', role: 'alert' },
        h(
          'td',
          { colspan: 4 },
          `This hunk is incomplete: its header promises ${oldMissing} more old and ${newMissing} ` +
            'more new lines than the diff holds. Do not approve from this card.'
        )
      );
      body.append(tr);
    }
  });
  const notes = file.notes.map(n => h('div', { class: 'grinta-note' }, oneLine(n)));
  return h(
    'div',
    { class: 'grinta-diff-block' },
    header,
    notes,
    file.hunks.length > 0 && h('table', { class: 'grinta-diff-table' }, body)
  );
}

function toggle(
  view: HTMLElement,
  hidden: HTMLElement[],
  total: number,
  folded: number,
  key: string,
  said: HTMLElement
): HTMLElement {
  const button = h('button', { class: 'grinta-toggle', type: 'button' });
  const setOpen = (open: boolean) => {
    hidden.forEach(el => (el.hidden = !open));
    said.hidden = open;
    view.classList.toggle('grinta-collapsed', !open);
    button.textContent = open ? 'Show fewer lines' : `Show all ${total} lines (${folded} hidden)`;
    button.setAttribute('aria-expanded', String(open));
  };
  button.addEventListener('click', () => {
    const open = view.classList.contains('grinta-collapsed');
    remember(key, open);
    setOpen(open);
  });
  setOpen(recall(key, false));
  return button;
}

function hunkCheckbox(picker: HunkPicker, index: number): HTMLElement {
  const box = h('input', {
    type: 'checkbox',
    class: 'grinta-hunk-check',
    'data-hunk': index,
    'aria-label': `Include hunk ${index + 1} of ${picker.total}`,
    title: 'Include this hunk when approving'
  });
  box.checked = picker.selected.has(index);
  box.disabled = picker.locked === true;
  box.addEventListener('change', () => {
    if (picker.locked) {
      box.checked = picker.selected.has(index); // what was sent stands
      return;
    }
    if (box.checked) {
      picker.selected.add(index);
    } else {
      picker.selected.delete(index);
    }
    picker.changed();
  });
  return h('label', { class: 'grinta-hunk-pick' }, box);
}

// Spaces that are not U+0020 but look like it (no-break, en, em, thin, ideographic...).
const ODD_SPACE = /[\u00a0\u1680\u2000-\u200a\u202f\u205f\u2800\u3000]/;
// Whitespace dropped to compare two rows, named as runtime/display.py names it (not `\s`,
// whose members differ between the two languages).
const SQUEEZE = /[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u2800\u3000\ufeff]+/g;
// Variation selectors: they choose how the character before them is drawn, and after most
// characters draw nothing (`a\ufe0fb` draws as `ab`).
const SELECTORS = /[\ufe00-\ufe0f\u{e0100}-\u{e01ef}]+/gu;

/**
 * What of a row to draw visibly besides its control characters: `all` (an added or removed
 * row whose change is whitespace only: its text, whitespace dropped, is that of a row of the
 * other side) every space and tab; `letters` (one that differs from a row of the other side,
 * whitespace aside, only in how a letter is encoded: equal under NFKC, so `é` as one character
 * or as `e` and a combining accent, a full-width letter) every character past ASCII; `trailing`
 * (the other added and removed rows) the spaces and tabs ending it; `odd` (the rest) only the
 * spaces that are not U+0020. The same rule as runtime/display.py's `row_spaces`: both are
 * checked on labextension/test/fixtures/row-cases.json.
 */
export type RowSpaces = 'all' | 'letters' | 'trailing' | 'odd';

/** Each row's `RowSpaces`, in the hunk's order. */
export function rowSpaces(rows: DiffRow[]): RowSpaces[] {
  const squeeze = (text: string) => text.replace(SQUEEZE, '');
  const changed = onBothSides(rows, rows.map(r => squeeze(r.text)));
  const alike = onBothSides(
    rows,
    rows.map(r => squeeze(r.text).normalize('NFKC').replace(SELECTORS, ''))
  );
  return rows.map((r, i) =>
    changed.has(i) ? 'all' : alike.has(i) ? 'letters' : r.kind === 'add' || r.kind === 'del' ? 'trailing' : 'odd'
  );
}

/** Indexes of the added and removed rows whose key is the key of a row of the other side. */
function onBothSides(rows: DiffRow[], keys: string[]): Set<number> {
  const dels = new Set(keys.filter((_, i) => rows[i].kind === 'del'));
  const adds = new Set(keys.filter((_, i) => rows[i].kind === 'add'));
  const both = new Set<number>();
  rows.forEach((r, i) => {
    if ((r.kind === 'del' && adds.has(keys[i])) || (r.kind === 'add' && dels.has(keys[i]))) {
      both.add(i);
    }
  });
  return both;
}

/** A row that only draws like its counterpart: every character past ASCII shown as its escape
 * (`caf\xe9` against `cafe\u0301`), trailing whitespace drawn; no highlighting. */
function renderLetters(text: string): Node[] {
  const trailing = text.replace(/[ \t]+$/, '').length;
  const out: Node[] = [];
  let run = '';
  let at = 0;
  const flush = () => {
    out.push(...oneLine(run));
    run = '';
  };
  for (const c of text) {
    if ((c.codePointAt(0) ?? 0) > 0x7e) {
      flush();
      const span = h('span', { class: 'grinta-escape', title: 'not ASCII: the rows differ here' }, escapeChar(c));
      out.push(span);
    } else if ((c === ' ' || c === '\t') && at >= trailing) {
      flush();
      out.push(whitespace(c));
    } else {
      run += c;
    }
    at += c.length;
  }
  flush();
  return out;
}

/** A row's tokens, with the whitespace `spaces` asks for drawn visibly. */
function renderCode(tokens: Token[], spaces: RowSpaces): Node[] {
  const text = tokens.map(t => t.text).join('');
  const trailing = spaces === 'odd' ? text.length : text.replace(/[ \t]+$/, '').length;
  let at = 0;
  return tokens.flatMap(token => {
    const nodes = renderToken(token, i => {
      const c = token.text[i];
      return ODD_SPACE.test(c) || ((c === ' ' || c === '\t') && (spaces === 'all' || at + i >= trailing));
    });
    at += token.text.length;
    return nodes;
  });
}

/**
 * A token as text (control characters escaped), in a span when it has a highlighting class.
 * `marked(i)`: character i is whitespace to draw visibly (a `grinta-ws` span); by default, the
 * spaces that are not U+0020.
 */
export function renderToken(
  token: Token,
  marked: (i: number) => boolean = i => ODD_SPACE.test(token.text[i])
): Node[] {
  const text: Node[] = [];
  const n = token.text.length;
  let from = 0;
  let i = 0;
  while (i < n) {
    if (!marked(i)) {
      i++;
      continue;
    }
    let end = i;
    while (end < n && marked(end)) end++;
    text.push(...oneLine(token.text.slice(from, i)), whitespace(token.text.slice(i, end)));
    from = i = end;
  }
  text.push(...oneLine(token.text.slice(from)));
  if (!token.cls) {
    return text;
  }
  return [h('span', { class: `grinta-tok-${token.cls}` }, text)];
}

/** Whitespace drawn visibly, its text exact: tabs underlined, other spaces than U+0020 boxed. */
function whitespace(run: string): HTMLElement {
  const odd = [...run].filter(c => ODD_SPACE.test(c));
  const names = [...new Set(odd)].map(c => 'U+' + c.codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0'));
  const cls = ['grinta-ws', run.includes('\t') ? 'grinta-ws-tab' : '', odd.length ? 'grinta-ws-odd' : ''];
  const title = odd.length
    ? `not an ASCII space: ${names.join(', ')}`
    : run.includes('\t')
      ? 'tabs and spaces (a whitespace change)'
      : 'spaces (a whitespace change)';
  return h('span', { class: cls.filter(Boolean).join(' '), title }, run);
}

function plain(text: string): Token {
  return { text, cls: null };
}
