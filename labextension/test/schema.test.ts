import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { parseSession, parseStep } from '../src/schema';

/** The example of docs/mime-schema.md. */
const STEP = {
  version: 1,
  session: '20261130-101500-ab12cd',
  step: 3,
  tool: 'replace_string',
  kind: 'write',
  status: 'pending',
  text: 'Fixing the comparison:',
  arguments: { path: 'raft_kv/node.py', old_string: 'a', new_string: 'b' },
  raw_arguments: null,
  summary: 'replaced 1 occurrence in raft_kv/node.py',
  resolutions: [
    {
      target: 'RaftNode.handle_append_entries',
      chosen: 'raft_kv/node.py:268 method RaftNode.handle_append_entries',
      reason: 'the only definition with this name',
      candidates: []
    }
  ],
  diff: '--- a/raft_kv/node.py\n+++ b/raft_kv/node.py\n@@ -282 +282 @@\n-a\n+b\n',
  diff_truncated: false,
  files: [{ path: 'raft_kv/node.py', added: 1, removed: 1 }],
  validation: { ok: true, code: null, message: null, candidates: [] },
  decision: null,
  reason: null,
  edits: 0,
  observation: null,
  guards: []
};

function message(result: { ok: boolean; message?: string }): string | undefined {
  return result.ok ? undefined : result.message;
}

describe('parseStep', () => {
  it('accepts the documented example unchanged', () => {
    const result = parseStep(STEP);
    assert.ok(result.ok);
    // Fields added since the example (a lasting session's) take their defaults.
    assert.deepEqual(result.value, { ...STEP, branch: 0, rewound: false, restaged: false, stale: null });
  });

  it('fills optional fields and ignores unknown ones', () => {
    const result = parseStep({
      version: 1,
      session: 's',
      step: 1,
      tool: 'read',
      kind: 'read',
      status: 'done',
      observation: { ok: true, output: 'x', exit_code: null },
      added_later: 'ignored'
    });
    assert.ok(result.ok);
    assert.equal(result.value.diff, '');
    assert.deepEqual(result.value.validation, { ok: true, code: null, message: null, candidates: [] });
    assert.deepEqual(result.value.guards, []);
    assert.equal(result.value.observation?.output, 'x');
  });

  it('reads null optional text as empty', () => {
    const candidate = { path: 'a.py', line: 3, snippet: null, note: null, kind: null, name: null };
    const result = parseStep({
      ...STEP,
      text: null,
      validation: { ok: false, code: 'NOT_FOUND', message: 'no match', candidates: [candidate] }
    });
    assert.ok(result.ok);
    assert.equal(result.value.text, '');
    assert.deepEqual(result.value.validation.candidates[0], {
      path: 'a.py',
      line: 3,
      snippet: '',
      note: '',
      kind: '',
      name: ''
    });
  });

  it('names an unknown schema version', () => {
    assert.equal(
      message(parseStep({ ...STEP, version: 7 })),
      'grinta: cannot render this step (schema version 7; this extension knows 1)'
    );
    assert.equal(
      message(parseStep({ ...STEP, version: '1' })),
      'grinta: cannot render this step (no integer schema version; this extension knows 1)'
    );
  });

  it('refuses what is not an object', () => {
    assert.equal(
      message(parseStep(null)),
      'grinta: cannot render this step (expected a JSON object, got null)'
    );
    assert.equal(
      message(parseStep([1])),
      'grinta: cannot render this step (expected a JSON object, got a list)'
    );
    assert.equal(
      message(parseStep('{"version": 1}')),
      'grinta: cannot render this step (expected a JSON object, got "{\\"version\\": 1}")'
    );
  });

  it('says which field is wrong, with its path', () => {
    assert.equal(
      message(parseStep({ ...STEP, status: 'maybe' })),
      'grinta: cannot render this step (field `status` should be one of pending, committed, vetoed, refused, done; got "maybe")'
    );
    const bad = { ...STEP, validation: { ...STEP.validation, candidates: [{ path: 'a', line: 'x' }] } };
    assert.equal(
      message(parseStep(bad)),
      'grinta: cannot render this step (field `validation.candidates[0].line` should be an integer; got "x")'
    );
    const { tool: _tool, ...noTool } = STEP;
    assert.equal(message(parseStep(noTool)), 'grinta: cannot render this step (field `tool` is missing)');
  });

  it('counts further errors', () => {
    assert.equal(
      message(parseStep({ ...STEP, step: 'three', files: 'all', guards: [1] })),
      'grinta: cannot render this step (field `step` should be an integer; got "three"; and 2 more)'
    );
  });
});

describe('parseSession', () => {
  const SESSION = {
    version: 1,
    session: 's1',
    task: 'fix it',
    model: 'demo',
    toolset: 'intent',
    root: '/w',
    end_reason: 'finished',
    summary: 'done',
    metrics: { steps: 5, tool_calls: { read: 3 } },
    log: '/w/.grinta/sessions/s1.jsonl'
  };

  it('accepts the documented shape', () => {
    const result = parseSession(SESSION);
    assert.ok(result.ok);
    assert.deepEqual(result.value, {
      ...SESSION,
      error: '',
      steps: null,
      marks: [],
      tasks: [],
      rules: [],
      branch: 0
    });
  });

  it('carries the error that ended a session, shown on its card', () => {
    const result = parseSession({ ...SESSION, end_reason: 'error', error: 'MISSING_KEY: set X' });
    assert.ok(result.ok);
    assert.equal(result.value.error, 'MISSING_KEY: set X');
  });

  it('accepts a live trace: no end reason yet, and the steps left for their own cards', () => {
    const steps = [{ version: 1 }, 'not even an object'];
    const result = parseSession({ ...SESSION, end_reason: null, summary: null, steps });
    assert.ok(result.ok);
    assert.equal(result.value.end_reason, '');
    assert.equal(result.value.summary, '');
    assert.deepEqual(result.value.steps, steps);
    assert.equal(
      message(parseSession({ ...SESSION, steps: {} })),
      'grinta: cannot render this session (field `steps` should be a list; got an object)'
    );
  });

  it('refuses an unknown version and bad metrics', () => {
    assert.equal(
      message(parseSession({ ...SESSION, version: 2 })),
      'grinta: cannot render this session (schema version 2; this extension knows 1)'
    );
    assert.equal(
      message(parseSession({ ...SESSION, metrics: [1, 2] })),
      'grinta: cannot render this session (field `metrics` should be an object; got a list)'
    );
  });
});
