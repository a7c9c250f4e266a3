/**
 * The session card: task, model, end reason, summary and the metrics table;
 * for a live trace (a session payload carrying `steps`) the step cards too.
 */

import { formatMetric, metricLabel } from '../format';
import { parseSession, RulesFile, Session } from '../schema';
import { h, oneLine, section } from './dom';
import { markCard } from './markCard';
import { guarded } from './problem';
import { stepCard } from './stepCard';

/** The card for a session payload, or a visible message when it cannot be rendered. */
export function sessionCard(data: unknown): HTMLElement {
  return guarded('session', data, parseSession, renderSession);
}

export function renderSession(s: Session): HTMLElement {
  const metrics = Object.entries(s.metrics);
  const running = !s.end_reason;
  return h(
    'div',
    { class: 'grinta-card grinta-session', 'data-end-reason': s.end_reason || 'running' },
    h(
      'div',
      { class: 'grinta-card-header' },
      h('span', { class: 'grinta-step-number' }, 'Session'),
      s.model && h('span', { class: 'grinta-kind', title: 'model' }, oneLine(s.model)),
      s.toolset &&
        h('span', { class: 'grinta-kind', title: 'toolset' }, oneLine(s.toolset)),
      h(
        'span',
        { class: `grinta-badge grinta-end-${running ? 'running' : s.end_reason}` },
        running ? 'running' : s.end_reason
      ),
      h('span', { class: 'grinta-session-id' }, oneLine(s.session))
    ),
    s.rules.length > 0 &&
      h(
        'div',
        { class: 'grinta-muted grinta-rules', title: 'rules files in the system prompt' },
        'rules: ',
        rulesLine(s.rules)
      ),
    s.task && section('task', s.tasks.length > 1 ? 'Task 1' : 'Task', h('div', { class: 'grinta-text' }, s.task)),
    s.steps && h('div', { class: 'grinta-steps' }, interleaved(s.steps, s.marks)),
    s.summary && section('session-summary', 'Summary', h('div', { class: 'grinta-text' }, s.summary)),
    s.error && section('session-error', 'Error', h('div', { class: 'grinta-text grinta-error' }, s.error)),
    !running && metrics.length > 0 && section('metrics', 'Metrics', metricsTable(metrics)),
    (s.root || s.log) &&
      h(
        'div',
        { class: 'grinta-muted grinta-footer' },
        s.root && ['workspace ', h('code', null, oneLine(s.root))],
        s.root && s.log && ' · ',
        s.log && ['log ', h('code', null, oneLine(s.log))]
      )
  );
}

/** The step cards with the marks between them, each mark after its `at` steps. */
export function interleaved(steps: unknown[], marks: unknown[]): HTMLElement[] {
  const placed = marks.map((mark, i) => ({ mark, at: markAt(mark), i }));
  placed.sort((a, b) => a.at - b.at || a.i - b.i);
  const out: HTMLElement[] = [];
  let next = 0;
  steps.forEach((step, index) => {
    for (; next < placed.length && placed[next].at <= index; next++) out.push(markCard(placed[next].mark));
    out.push(stepCard(step));
  });
  for (; next < placed.length; next++) out.push(markCard(placed[next].mark));
  return out;
}

function markAt(mark: unknown): number {
  const at = typeof mark === 'object' && mark !== null ? (mark as { at?: unknown }).at : undefined;
  return typeof at === 'number' && Number.isInteger(at) ? at : Number.MAX_SAFE_INTEGER;
}

function rulesLine(rules: RulesFile[]): (Node | string)[] {
  return rules.flatMap((r, i) => [
    i > 0 ? ', ' : '',
    h('code', null, oneLine(r.path)),
    r.truncated ? ` (cut to ${r.chars.toLocaleString('en-US')} characters)` : ''
  ]);
}

function metricsTable(metrics: [string, unknown][]): HTMLElement {
  return h(
    'table',
    { class: 'grinta-metrics' },
    h(
      'tbody',
      null,
      metrics.map(([key, value]) =>
        h(
          'tr',
          { 'data-metric': key },
          h('th', { title: key }, metricLabel(key)),
          h('td', null, formatMetric(key, value))
        )
      )
    )
  );
}
