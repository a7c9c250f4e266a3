import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  approvalMessage,
  editDraft,
  editMessage,
  hunkCount,
  primaryAction,
  selectableHunks
} from '../src/review';
import { THREE_HUNKS } from './shared';

const ONE_HUNK = THREE_HUNKS.split('@@ -20')[0];

describe('per-hunk approval', () => {
  it('counts hunks across files', () => {
    assert.equal(hunkCount(THREE_HUNKS), 3);
    assert.equal(hunkCount(ONE_HUNK), 1);
    assert.equal(hunkCount(''), 0);
  });

  it('is offered for a write of several hunks whose diff is whole', () => {
    const write = { kind: 'write' as const, diff: THREE_HUNKS, diff_truncated: false };
    assert.equal(selectableHunks(write), 3);
    assert.equal(selectableHunks({ ...write, diff: ONE_HUNK }), 0, 'one hunk: approve it whole');
    assert.equal(selectableHunks({ ...write, diff_truncated: true }), 0, 'a cut diff hides hunks');
    assert.equal(selectableHunks({ ...write, kind: 'command' }), 0);
  });

  it('words the main button by what it will commit', () => {
    assert.deepEqual(primaryAction(new Set([0, 1, 2]), 3), { label: 'Approve', action: 'approve' });
    assert.deepEqual(primaryAction(new Set([0, 2]), 3), {
      label: 'Approve selected (2 of 3)',
      action: 'hunks'
    });
    assert.equal(primaryAction(new Set(), 3).action, 'veto');
    assert.equal(primaryAction(new Set(), 0).action, 'approve', 'no hunks to pick: whole approval');
  });

  it('sends the accepted hunks in order, with the reason trimmed', () => {
    assert.deepEqual(approvalMessage(new Set([2, 0]), 3, '  not b.py yet '), {
      event: 'hunks',
      accepted: [0, 2],
      reason: 'not b.py yet'
    });
    assert.deepEqual(approvalMessage(new Set([0, 1, 2]), 3, 'ignored'), { event: 'approve' });
    assert.deepEqual(approvalMessage(new Set(), 3, ''), {
      event: 'veto',
      reason: 'vetoed by the user'
    });
  });
});

describe('the edit form', () => {
  it('puts the new text in a box of its own and joins it back', () => {
    const raw = JSON.stringify({ path: 'a.py', old_string: 'x = 1', new_string: 'x = 2\n' });
    const draft = editDraft(raw);
    assert.equal(draft.field, 'new_string');
    assert.equal(draft.text, 'x = 2\n');
    assert.deepEqual(JSON.parse(draft.json), { path: 'a.py', old_string: 'x = 1' });
    const sent = editMessage(draft.json, draft.field, 'x = 3\n');
    assert.deepEqual(sent, {
      ok: true,
      message: {
        event: 'edit',
        arguments: { path: 'a.py', old_string: 'x = 1', new_string: 'x = 3\n' }
      }
    });
  });

  it('keeps arguments that are not a JSON object whole, for the reviewer to fix', () => {
    assert.deepEqual(editDraft('{"path": '), { json: '{"path": ', field: null, text: '' });
    assert.deepEqual(editDraft('[1]'), { json: '[1]', field: null, text: '' });
  });

  it('says why the form is not arguments instead of sending it', () => {
    const broken = editMessage('{"path": ', null, '');
    assert.equal(broken.ok, false);
    assert.match((broken as { error: string }).error, /^not valid JSON/);
    assert.deepEqual(editMessage('[1, 2]', null, ''), {
      ok: false,
      error: 'the arguments must be a JSON object ({...})'
    });
    const twice = editMessage('{"new_string": "a"}', 'new_string', 'b');
    assert.equal(twice.ok, false, 'the text box is the one place for the new text');
  });
});
