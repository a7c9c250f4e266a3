import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { parseUnifiedDiff, rowCount } from '../src/diff';

const MODIFY = [
  '--- a/raft_kv/node.py',
  '+++ b/raft_kv/node.py',
  '@@ -282,7 +282,8 @@ class RaftNode:',
  '     def handle_append_entries(self, msg):',
  '         if msg.term < self.term:',
  '-            return False',
  '+            # a stale leader',
  '+            return self.reject(msg)',
  '         self.leader = msg.leader',
  '         self.reset_timer()',
  ' ',
  '         return True',
  ''
].join('\n');

describe('parseUnifiedDiff', () => {
  it('numbers old and new lines of a modified file', () => {
    const [file] = parseUnifiedDiff(MODIFY);
    assert.equal(file.path, 'raft_kv/node.py');
    assert.equal(file.status, 'modified');
    assert.equal(file.added, 2);
    assert.equal(file.removed, 1);
    const [hunk] = file.hunks;
    assert.equal(hunk.section, 'class RaftNode:');
    assert.deepEqual(
      hunk.rows.map(r => [r.kind, r.oldLine, r.newLine]),
      [
        ['context', 282, 282],
        ['context', 283, 283],
        ['del', 284, null],
        ['add', null, 284],
        ['add', null, 285],
        ['context', 285, 286],
        ['context', 286, 287],
        ['context', 287, 288],
        ['context', 288, 289]
      ]
    );
    assert.equal(hunk.rows[2].text, '            return False');
    assert.equal(hunk.rows[7].text, '');
  });

  it('reads created and deleted files, several files and omitted counts', () => {
    const text = [
      '--- /dev/null',
      '+++ b/pkg/new.py',
      '@@ -0,0 +1,2 @@',
      '+x = 1',
      '+y = 2',
      '--- a/pkg/old.py',
      '+++ /dev/null',
      '@@ -1 +0,0 @@',
      '-gone = True',
      '--- a/README.md',
      '+++ b/README.md',
      '@@ -3 +3 @@',
      '-old',
      '+new'
    ].join('\n');
    const files = parseUnifiedDiff(text);
    assert.deepEqual(
      files.map(f => [f.path, f.status, f.oldPath, f.newPath, f.added, f.removed]),
      [
        ['pkg/new.py', 'added', null, 'pkg/new.py', 2, 0],
        ['pkg/old.py', 'deleted', 'pkg/old.py', null, 0, 1],
        ['README.md', 'modified', 'README.md', 'README.md', 1, 1]
      ]
    );
    assert.deepEqual(
      files[0].hunks[0].rows.map(r => r.newLine),
      [1, 2]
    );
    assert.deepEqual(
      files[2].hunks[0].rows.map(r => [r.oldLine, r.newLine]),
      [
        [3, null],
        [null, 3]
      ]
    );
  });

  it('keeps removed lines that look like file headers inside their hunk', () => {
    const text = [
      '--- a/q.sql',
      '+++ b/q.sql',
      '@@ -1,2 +1,2 @@',
      '--- old comment',
      '+++ new comment',
      ' SELECT 1;'
    ].join('\n');
    const files = parseUnifiedDiff(text);
    assert.equal(files.length, 1);
    assert.deepEqual(
      files[0].hunks[0].rows.map(r => [r.kind, r.text]),
      [
        ['del', '-- old comment'],
        ['add', '++ new comment'],
        ['context', 'SELECT 1;']
      ]
    );
  });

  it('shows "no newline at end of file" as a note without a line number', () => {
    const text = '--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n\\ No newline at end of file\n+a\n';
    const rows = parseUnifiedDiff(text)[0].hunks[0].rows;
    assert.deepEqual(
      rows.map(r => [r.kind, r.oldLine, r.newLine, r.text]),
      [
        ['del', 1, null, 'a'],
        ['note', null, null, 'No newline at end of file'],
        ['add', null, 1, 'a']
      ]
    );
  });

  it('reads git headers and keeps their extra lines as notes', () => {
    const text = [
      'diff --git a/x.py b/x.py',
      'index 83db48f..bf269f4 100644',
      '--- a/x.py',
      '+++ b/x.py',
      '@@ -1 +1 @@',
      '-a',
      '+b'
    ].join('\n');
    const files = parseUnifiedDiff(text);
    assert.equal(files.length, 1);
    assert.equal(files[0].path, 'x.py');
    assert.deepEqual(files[0].notes, ['index 83db48f..bf269f4 100644']);
  });

  it('stops quietly where a truncated diff was cut', () => {
    const cut = MODIFY.slice(0, MODIFY.indexOf('+            return self'));
    const [file] = parseUnifiedDiff(cut + '+            retu');
    assert.equal(file.hunks[0].rows.length, 5);
    assert.equal(file.hunks[0].rows[4].text, '            retu');
  });

  it('never loses text that is not a diff', () => {
    const files = parseUnifiedDiff('not a diff\nat all');
    assert.equal(rowCount(files), 0);
    assert.deepEqual(files[0].notes, ['not a diff', 'at all']);
    assert.deepEqual(parseUnifiedDiff(''), []);
  });

  it('strips CR and timestamps from headers', () => {
    const text = '--- a/f.txt\t2024-01-01\r\n+++ b/f.txt\t2024-01-02\r\n@@ -1 +1 @@\r\n-a\r\n+b\r\n';
    const [file] = parseUnifiedDiff(text);
    assert.equal(file.path, 'f.txt');
    assert.deepEqual(
      file.hunks[0].rows.map(r => r.text),
      ['a', 'b']
    );
  });
});
