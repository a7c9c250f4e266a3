/**
 * What a card shows at first and what it folds away. Pure: no DOM.
 *
 * Folded content is still in the page (it is rendered, then hidden), so the
 * card's text stays whole; only the first view is kept short.
 */

import type { DiffFile } from './diff';

/** A diff longer than this many rows starts collapsed. */
export const DIFF_ROW_LIMIT = 80;

export interface DiffPlan {
  totalRows: number;
  shownRows: number;
  /** shown[f][h]: rows of hunk h of file f visible before expanding (0: the hunk is hidden). */
  shown: number[][];
}

/**
 * Show whole hunks, in order, while they fit in `limit` rows; the first hunk
 * is always shown (cut to `limit` rows if it alone is longer). Hunks are never
 * skipped to fit a later, smaller one: the reader sees a prefix of the diff.
 */
export function planDiff(files: DiffFile[], limit: number = DIFF_ROW_LIMIT): DiffPlan {
  const sizes = files.map(f => f.hunks.map(h => h.rows.length));
  const totalRows = sizes.flat().reduce((a, b) => a + b, 0);
  if (totalRows <= limit) {
    return { totalRows, shownRows: totalRows, shown: sizes };
  }
  let budget = limit;
  let stopped = false;
  const shown = sizes.map(hunks =>
    hunks.map(size => {
      if (stopped) {
        return 0;
      }
      if (size <= budget) {
        budget -= size;
        return size;
      }
      stopped = true;
      // Nothing shown yet: show the start of this hunk rather than nothing.
      return budget === limit ? limit : 0;
    })
  );
  const shownRows = shown.flat().reduce((a, b) => a + b, 0);
  return { totalRows, shownRows, shown };
}

export interface TextFold {
  /** True when `text` is too long to show whole at first. */
  folded: boolean;
  /** What to show while folded: the first lines, cut to the character budget. */
  preview: string;
  lines: number;
}

/** Fold a string longer than `maxLines` lines or `maxChars` characters. */
export function foldText(text: string, maxLines: number, maxChars: number): TextFold {
  const lines = text.split('\n');
  const count = text.endsWith('\n') ? lines.length - 1 : lines.length;
  if (count <= maxLines && text.length <= maxChars) {
    return { folded: false, preview: text, lines: count };
  }
  let preview = lines.slice(0, maxLines).join('\n');
  if (preview.length > maxChars) {
    preview = preview.slice(0, maxChars);
  }
  return { folded: true, preview: preview.replace(/\s+$/, '') + ' …', lines: count };
}
