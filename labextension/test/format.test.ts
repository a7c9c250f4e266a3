import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { decisionText, formatMetric, metricLabel } from '../src/format';

describe('decisionText', () => {
  it('says who decided', () => {
    assert.equal(decisionText({ status: 'pending', decision: null, edits: 0 }), 'awaiting your decision');
    assert.equal(decisionText({ status: 'committed', decision: 'auto', edits: 0 }), 'approved by policy');
    assert.equal(decisionText({ status: 'vetoed', decision: 'veto', edits: 2 }), 'vetoed by you · edited 2×');
    assert.equal(decisionText({ status: 'refused', decision: null, edits: 0 }), '');
    assert.equal(
      decisionText({ status: 'committed', decision: 'approve_hunks', edits: 0 }),
      'approved in part (some hunks declined)'
    );
  });
});

describe('formatMetric', () => {
  it('formats the kinds of values docs/metrics.md defines', () => {
    assert.equal(formatMetric('steps', 5), '5');
    assert.equal(formatMetric('tool_entropy_bits', 1.918295834), '1.918');
    assert.equal(formatMetric('duration', 12.3456), '12.346 s');
    assert.equal(formatMetric('cost', 0.01234), '$0.0123');
    assert.equal(formatMetric('cost', null), 'unknown');
    assert.equal(formatMetric('time_to_first_edit', null), '—');
    assert.equal(formatMetric('finished', true), 'yes');
    assert.equal(formatMetric('tool_calls', { read: 3, replace_string: 1 }), 'read: 3, replace_string: 1');
    assert.equal(formatMetric('guards_fired', {}), 'none');
    assert.equal(formatMetric('context_tokens', [1, 2, 3]), '1, 2, 3');
    assert.equal(
      formatMetric('context_tokens', [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]),
      '1, 2, 3, …, 9, 10 (10 values)'
    );
    assert.equal(metricLabel('time_to_first_edit'), 'time to first edit');
  });
});
