/**
 * A mark between the step cards of a session (docs/mime-schema.md, `marks`):
 * where a task began, what the user said to the model, a rewind, a
 * condensation of the context, a resume, the end of a task a next one
 * followed. One line of title and the mark's text, in the colour of its kind;
 * the same element in the saved trace (sessionCard.ts) and the live panel
 * (widget.ts).
 */

import { Mark, MARK_KINDS, parseMark } from '../schema';
import { h, oneLine } from './dom';
import { guarded } from './problem';

const ICONS: Record<string, string> = {
  task: '▶',
  said: '»',
  rewind: '↶',
  condensed: '≡',
  resumed: '↻',
  ended: '■'
};

/** The element for a mark payload, or a visible message when it cannot be rendered. */
export function markCard(data: unknown): HTMLElement {
  return guarded('mark', data, parseMark, renderMark);
}

export function renderMark(mark: Mark): HTMLElement {
  const known = (MARK_KINDS as readonly string[]).includes(mark.kind);
  return h(
    'div',
    {
      class: `grinta-mark grinta-mark-${known ? mark.kind : 'other'}`,
      'data-kind': mark.kind,
      role: 'note'
    },
    h('span', { class: 'grinta-mark-icon', 'aria-hidden': 'true' }, ICONS[mark.kind] ?? '•'),
    h('span', { class: 'grinta-mark-title' }, oneLine(mark.title || mark.kind)),
    mark.text && h('span', { class: 'grinta-mark-text' }, mark.text)
  );
}
