/**
 * Validate a payload, then render it; in every failing case show a visible
 * message instead of an empty output.
 */

import type { Parsed } from '../schema';
import { h } from './dom';

export function guarded<T>(
  what: string,
  data: unknown,
  parse: (data: unknown) => Parsed<T>,
  render: (value: T) => HTMLElement
): HTMLElement {
  const parsed = parse(data);
  if (!parsed.ok) {
    return problem(parsed.message, data);
  }
  try {
    return render(parsed.value);
  } catch (error) {
    // A renderer bug must still leave something readable in the notebook.
    return problem(`grinta: cannot render this ${what} (renderer error: ${String(error)})`, data);
  }
}

function problem(message: string, data: unknown): HTMLElement {
  let raw: string;
  try {
    raw = JSON.stringify(data, null, 2) ?? String(data);
  } catch {
    raw = String(data);
  }
  return h(
    'div',
    { class: 'grinta-card grinta-problem', role: 'alert' },
    h('div', { class: 'grinta-problem-message' }, message),
    h(
      'details',
      { class: 'grinta-fold' },
      h('summary', null, 'payload'),
      h('pre', { class: 'grinta-pre' }, raw.length > 20000 ? raw.slice(0, 20000) + '\n…' : raw)
    )
  );
}
