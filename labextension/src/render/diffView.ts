/**
 * A unified diff as per-file tables: old and new line numbers, a marker
 * column and highlighted code. Long diffs start collapsed behind a toggle.
 * Given a `HunkPicker` (a pending write, src/review.ts), each hunk header
 * carries a checkbox: hunks are numbered from 0 across files.
 *
 * A notebook's diff is of its cells as the runtime shows them (source as
 * code, each cell opened by a line `#%% cell <id> (code)`): in a `.ipynb`
 * file such lines are drawn as cell headers, their text exact.
 */

import { planDiff } from '../collapse';
import { DiffFile, parseUnifiedDiff, rowCount } from '../diff';
import { languageForPath, Token, tokenizeHunk } from '../highlight';
import type { FileStat } from '../schema';
import { h, oneLine } from './dom';
import { recall, remember } from './memory';

const MARKS = { context: ' ', add: '+', del: '-', note: '\\' } as const;

// `#%%`, optionally more `%`, then ` cell `: the runtime's cell header (runtime/notebook.py).
const CELL_HEADER = /^#%%+ cell /;

/** Whether a diff row of the file at `path` is a notebook cell's header line. */
export function isCellHeader(path: string, text: string): boolean {
  return /\.ipynb$/i.test(path) && CELL_HEADER.test(text);
}

/** Which hunks the reviewer keeps; `changed` is called after each checkbox toggle. */
export interface HunkPicker {
  selected: Set<number>;
  total: number;
  changed: () => void;
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
  const view = h(
    'div',
    { class: 'grinta-diff' },
    files.map((file, f) => {
      const block = renderFile(file, stats, plan.shown[f], hidden, picker, first);
      first += file.hunks.length;
      return block;
    })
  );
  if (hidden.length) {
    view.classList.add('grinta-collapsed');
    view.append(toggle(view, hidden, plan.totalRows, plan.totalRows - plan.shownRows, key));
  }
  if (truncated) {
    view.append(
      h(
        'div',
        { class: 'grinta-note' },
        'The diff was cut short to keep the notebook small; the session log has all of it.'
      )
    );
  }
  return view;
}

function renderFile(
  file: DiffFile,
  stats: FileStat[],
  shown: number[],
  hidden: HTMLElement[],
  picker: HunkPicker | null,
  first: number
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
          : h('td', { class: 'grinta-diff-code' }, tokens[r].flatMap(renderToken))
      );
      body.append(tr);
      if (r >= shown[k]) {
        hidden.push(tr);
      }
    });
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
  key: string
): HTMLElement {
  const button = h('button', { class: 'grinta-toggle', type: 'button' });
  const setOpen = (open: boolean) => {
    hidden.forEach(el => (el.hidden = !open));
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
  box.addEventListener('change', () => {
    if (box.checked) {
      picker.selected.add(index);
    } else {
      picker.selected.delete(index);
    }
    picker.changed();
  });
  return h('label', { class: 'grinta-hunk-pick' }, box);
}

/** A token as text (control characters escaped), in a span when it has a highlighting class. */
export function renderToken(token: Token): Node[] {
  if (!token.cls) {
    return oneLine(token.text);
  }
  return [h('span', { class: `grinta-tok-${token.cls}` }, oneLine(token.text))];
}

function plain(text: string): Token {
  return { text, cls: null };
}
