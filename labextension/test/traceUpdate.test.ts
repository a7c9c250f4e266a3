import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { SESSION_MIME } from '../src/schema';
import { outputsToReplace, traceSession, traceUpdate, WIDGET_VIEW_MIME } from '../src/traceUpdate';

/** A trace bundle as grinta_jupyter.jupyter.mime.trace_bundle makes it. */
function trace(session: string, endReason = 'finished'): Record<string, unknown> {
  return {
    [SESSION_MIME]: { version: 1, session, end_reason: endReason, steps: [{ step: 1 }] },
    'text/html': '<div class="grinta-trace"></div>',
    'text/plain': '[grinta step 1] run (committed)'
  };
}

/** The live output: the panel's widget view with the trace as its fallbacks. */
function live(session: string): Record<string, unknown> {
  return { ...trace(session, ''), [WIDGET_VIEW_MIME]: { model_id: 'abc', version_major: 2 } };
}

describe('traceSession', () => {
  it('is the session id of a session payload with steps', () => {
    assert.equal(traceSession(trace('s1')), 's1');
    assert.equal(traceSession(live('s1')), 's1');
  });

  it('is null for anything else', () => {
    // The summary `%grinta log` displays: a session payload without steps.
    assert.equal(traceSession({ [SESSION_MIME]: { version: 1, session: 's1' } }), null);
    assert.equal(traceSession({ [SESSION_MIME]: { session: 's1', steps: 'no' } }), null);
    assert.equal(traceSession({ [SESSION_MIME]: { session: '', steps: [] } }), null);
    assert.equal(traceSession({ [SESSION_MIME]: { session: 7, steps: [] } }), null);
    assert.equal(traceSession({ 'application/vnd.grinta.step+json': { session: 's1', step: 1 } }), null);
    assert.equal(traceSession({ 'text/plain': 'hello' }), null);
    assert.equal(traceSession(undefined), null);
    assert.equal(traceSession(['s1']), null);
  });
});

describe('traceUpdate', () => {
  it('takes a display update holding the trace alone', () => {
    const update = traceUpdate('update_display_data', {
      data: trace('s1'),
      metadata: { isolated: false },
      transient: { display_id: 'd1' }
    });
    assert.deepEqual(update, { session: 's1', data: trace('s1'), metadata: { isolated: false } });
    // A new display of the finished trace counts too; no metadata is an empty one.
    assert.deepEqual(traceUpdate('display_data', { data: trace('s1') })?.metadata, {});
  });

  it('ignores the live panel, so it is never re-rendered', () => {
    assert.equal(traceUpdate('update_display_data', { data: live('s1'), metadata: {} }), null);
  });

  it('ignores other messages and bundles', () => {
    assert.equal(traceUpdate('execute_result', { data: trace('s1'), metadata: {} }), null);
    assert.equal(traceUpdate('stream', { name: 'stdout', text: 'hi' }), null);
    assert.equal(traceUpdate('status', { execution_state: 'idle' }), null);
    assert.equal(traceUpdate('display_data', { data: { 'text/plain': 'x' }, metadata: {} }), null);
    assert.equal(traceUpdate('display_data', null), null);
  });
});

describe('outputsToReplace', () => {
  const update = traceUpdate('update_display_data', { data: trace('s1'), metadata: {} })!;

  it("finds every output showing that session's trace, live or not", () => {
    const outputs = [
      { data: { 'text/plain': 'grinta: demo model on a copy of the raft_kv sample' } },
      { data: live('s1') },
      { data: trace('s0') },
      { data: live('s2') },
      { data: trace('s1', '') }
    ];
    assert.deepEqual(outputsToReplace(outputs, update), [1, 4]);
  });

  it("leaves that session's own step and summary outputs alone", () => {
    const outputs = [
      { data: { 'application/vnd.grinta.step+json': { session: 's1', step: 1 } } },
      { data: { [SESSION_MIME]: { version: 1, session: 's1', end_reason: 'finished' } } },
      {}
    ];
    assert.deepEqual(outputsToReplace(outputs, update), []);
  });
});
