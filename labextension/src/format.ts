/**
 * Words and numbers shown on the cards. Pure: no DOM.
 */

import type { Step } from './schema';

/** One line saying where the step stands: who decided what. */
export function decisionText(step: Pick<Step, 'status' | 'decision' | 'edits'>): string {
  const edited = step.edits > 0 ? ` · edited ${step.edits}×` : '';
  switch (step.decision) {
    case 'approve':
      return 'approved' + edited;
    case 'approve_hunks':
      return 'approved in part (some hunks declined)' + edited;
    case 'edit':
      return 'approved after edits' + edited;
    case 'veto':
      return 'vetoed by you' + edited;
    case 'auto':
      return 'approved by policy' + edited;
    default:
      return (step.status === 'pending' ? 'awaiting your decision' : '') + edited;
  }
}

const SECONDS = new Set(['duration', 'time_to_first_edit']);

/** A metric value as one short line (docs/metrics.md: numbers, nulls, lists, per-name counts). */
export function formatMetric(key: string, value: unknown): string {
  if (value === null || value === undefined) {
    return key === 'cost' ? 'unknown' : '—'; // a cost is null when some reply's price was not known
  }
  if (typeof value === 'boolean') {
    return value ? 'yes' : 'no';
  }
  if (typeof value === 'number') {
    if (key === 'cost') {
      return '$' + value.toFixed(4);
    }
    return formatNumber(value) + (SECONDS.has(key) ? ' s' : '');
  }
  if (Array.isArray(value)) {
    const items = value.map(v => (typeof v === 'number' ? formatNumber(v) : JSON.stringify(v)));
    if (items.length > 8) {
      return `${items.slice(0, 3).join(', ')}, …, ${items.slice(-2).join(', ')} (${items.length} values)`;
    }
    return items.length ? items.join(', ') : 'none';
  }
  if (typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>);
    return entries.length ? entries.map(([k, v]) => `${k}: ${formatMetric(k, v)}`).join(', ') : 'none';
  }
  return String(value);
}

function formatNumber(n: number): string {
  return Number.isInteger(n) ? String(n) : String(Number(n.toFixed(3)));
}

/** "tool_entropy_bits" -> "tool entropy bits". */
export function metricLabel(key: string): string {
  return key.replace(/_/g, ' ');
}
