/**
 * What a reviewer can answer to a pending step, and the messages that carry
 * the answer to the kernel (grinta_jupyter/jupyter/card.py). Pure: no DOM.
 *
 * - Per-hunk approval: hunks are numbered from 0 in the order they appear in
 *   the step's unified diff, counting across files (the numbering of
 *   `ApproveHunks` in grinta_jupyter/agent/updates.py). It is offered only for
 *   a write whose diff has more than one hunk and was not cut short for size:
 *   a cut diff hides hunks, and nobody approves what they cannot see.
 * - Editing: the call's arguments as JSON, with the new text (`new_string`,
 *   `content`, `new_source`) in an editor of its own, joined back on submit.
 */

import { parseUnifiedDiff } from './diff';
import type { Step } from './schema';

/** Arguments that carry new text: edited in their own box, not inside the JSON. */
export const TEXT_FIELDS = ['new_string', 'content', 'new_source'] as const;

export const DEFAULT_VETO_REASON = 'vetoed by the user';

/**
 * What the card sends to the kernel. An approval carries the `edits` count of the
 * proposal the reviewer saw: the kernel refuses it when the proposal was edited since
 * (an edit's new diff not drawn yet), so nobody approves a diff they did not see.
 */
export type CardMessage =
  | { event: 'approve'; edits?: number }
  | { event: 'veto'; reason: string }
  | { event: 'edit'; arguments: Record<string, unknown> }
  | { event: 'hunks'; accepted: number[]; reason: string; edits?: number };

/** How many hunks the step's diff has, counting across files. */
export function hunkCount(diff: string): number {
  return parseUnifiedDiff(diff).reduce((n, file) => n + file.hunks.length, 0);
}

/** The number of hunks the reviewer may pick from, or 0 when per-hunk approval is not offered. */
export function selectableHunks(step: Pick<Step, 'kind' | 'diff' | 'diff_truncated'>): number {
  if (step.kind !== 'write' || step.diff_truncated || !step.diff) {
    return 0;
  }
  const total = hunkCount(step.diff);
  return total > 1 ? total : 0;
}

/** The main button: what Approve (and Enter) does with this selection. */
export interface Primary {
  label: string;
  /** `veto` opens the veto reason: nothing selected is a refusal. */
  action: 'approve' | 'hunks' | 'veto';
}

export function primaryAction(selected: ReadonlySet<number>, total: number): Primary {
  if (total === 0 || selected.size === total) {
    return { label: 'Approve', action: 'approve' };
  }
  if (selected.size === 0) {
    return { label: 'Veto (no hunk selected)', action: 'veto' };
  }
  return { label: `Approve selected (${selected.size} of ${total})`, action: 'hunks' };
}

/** The message for approving `selected` of `total` hunks (whole approval when all are). */
export function approvalMessage(
  selected: ReadonlySet<number>,
  total: number,
  reason: string
): CardMessage {
  const primary = primaryAction(selected, total);
  if (primary.action === 'hunks') {
    const accepted = [...selected].sort((a, b) => a - b);
    return { event: 'hunks', accepted, reason: reason.trim() };
  }
  if (primary.action === 'veto') {
    return vetoMessage(reason);
  }
  return { event: 'approve' };
}

export function vetoMessage(reason: string): CardMessage {
  return { event: 'veto', reason: reason.trim() || DEFAULT_VETO_REASON };
}

/** The edit form's starting text: the arguments as JSON, the new text apart. */
export interface EditDraft {
  json: string;
  /** The argument shown in the text editor, or null when there is none. */
  field: string | null;
  text: string;
}

/** Split the call's raw arguments for the edit form; text that is not a JSON object stays whole. */
export function editDraft(raw: string): EditDraft {
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw || '{}');
  } catch {
    return { json: raw, field: null, text: '' };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return { json: raw, field: null, text: '' };
  }
  const args = { ...(parsed as Record<string, unknown>) };
  const field = TEXT_FIELDS.find(name => typeof args[name] === 'string') ?? null;
  let text = '';
  if (field !== null) {
    text = args[field] as string;
    delete args[field];
  }
  return { json: JSON.stringify(args, null, 2), field, text };
}

export type EditResult =
  | { ok: true; message: CardMessage }
  | { ok: false; error: string };

/** The edit form's contents as an `edit` message, or why they are not arguments. */
export function editMessage(json: string, field: string | null, text: string): EditResult {
  let parsed: unknown;
  try {
    parsed = JSON.parse(json);
  } catch (error) {
    return { ok: false, error: `not valid JSON: ${(error as Error).message}` };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    return { ok: false, error: 'the arguments must be a JSON object ({...})' };
  }
  const args = { ...(parsed as Record<string, unknown>) };
  if (field !== null) {
    if (field in args) {
      return {
        ok: false,
        error: `${field} is edited in its own box below; remove it from the JSON`
      };
    }
    args[field] = text;
  }
  return { ok: true, message: { event: 'edit', arguments: args } };
}
