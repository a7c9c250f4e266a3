/**
 * What a page tells the kernel about its open documents, and which it
 * reloads after a write (src/openDocuments.ts; the plugin is documents.ts).
 */

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import {
  ANSWER_TARGET,
  documentsAnswer,
  documentsPush,
  kernelListens,
  OpenDocument,
  pushKey,
  readRequest,
  toReload
} from '../src/openDocuments';

function doc(path: string, dirty = false, collaborative = false): OpenDocument {
  return { path, dirty, collaborative, revert: () => Promise.resolve() };
}

describe('the answer about open documents', () => {
  it('names each document once, dirty if any view of it is', () => {
    const open = [doc('a.ipynb'), doc('b.py', true), doc('a.ipynb', true), doc('c/d.txt')];
    assert.deepEqual(documentsAnswer('q1', 'app1', '/srv', 'host.ipynb', open), {
      question: 'q1',
      app: 'app1',
      root: '/srv',
      host: 'host.ipynb',
      documents: [
        { path: 'a.ipynb', dirty: true },
        { path: 'b.py', dirty: true },
        { path: 'c/d.txt', dirty: false }
      ]
    });
  });
});

describe('the push of open documents', () => {
  it('says what the answer says, marked as a push instead of naming a question', () => {
    const open = [doc('a.ipynb'), doc('b.py', true), doc('a.ipynb', true)];
    assert.deepEqual(documentsPush('app1', '/srv', 'host.ipynb', open), {
      push: true,
      app: 'app1',
      root: '/srv',
      host: 'host.ipynb',
      documents: [
        { path: 'a.ipynb', dirty: true },
        { path: 'b.py', dirty: true }
      ]
    });
    assert.equal('question' in documentsPush('app1', '/srv', 'h', open), false);
  });

  it('is sent again only when what it says changes', () => {
    const before = documentsPush('app1', '/srv', 'h.ipynb', [doc('a.py'), doc('b.py')]);
    const same = documentsPush('app1', '/srv', 'h.ipynb', [doc('a.py'), doc('b.py'), doc('a.py')]);
    assert.equal(pushKey(same), pushKey(before));
    const dirty = documentsPush('app1', '/srv', 'h.ipynb', [doc('a.py', true), doc('b.py')]);
    const closed = documentsPush('app1', '/srv', 'h.ipynb', [doc('a.py')]);
    const moved = documentsPush('app1', '/srv', 'renamed.ipynb', [doc('a.py'), doc('b.py')]);
    for (const other of [dirty, closed, moved]) {
      assert.notEqual(pushKey(other), pushKey(before));
    }
  });

  it('goes to a kernel whose comm_info lists a comm on the answer target', () => {
    const on = (target: string) => ({ status: 'ok', comms: { c1: { target_name: target } } });
    assert.equal(kernelListens(on(ANSWER_TARGET)), true);
    assert.equal(kernelListens(on('jupyter.widget')), false);
    assert.equal(kernelListens({ status: 'ok', comms: {} }), false);
    assert.equal(kernelListens({ status: 'error', comms: on(ANSWER_TARGET).comms }), false);
    assert.equal(kernelListens({ status: 'ok', comms: { c1: null } }), false);
    assert.equal(kernelListens(null), false);
  });
});

describe('requests from the kernel', () => {
  it('are read strictly', () => {
    assert.deepEqual(readRequest({ request: 'documents', question: 'q1' }), {
      request: 'documents',
      question: 'q1'
    });
    assert.equal(readRequest({ request: 'documents' }), null, 'a question names itself');
    assert.equal(readRequest({ request: 'documents', question: 7 }), null);
    assert.deepEqual(readRequest({ request: 'reload', paths: ['a.py', 3, 'b.py'] }), {
      request: 'reload',
      paths: ['a.py', 'b.py']
    });
    assert.deepEqual(readRequest({ request: 'watch' }), { request: 'watch' });
    assert.equal(readRequest({ request: 'reload' }), null);
    assert.equal(readRequest({ request: 'delete', paths: [] }), null);
    assert.equal(readRequest(null), null);
    assert.equal(readRequest('documents'), null);
  });
});

describe('reloading after a write', () => {
  it('reloads the written documents that have no unsaved changes, once each', () => {
    const clean = doc('a.ipynb');
    const open = [clean, doc('a.ipynb'), doc('b.py', true), doc('c.py'), doc('shared.ipynb', false, true)];
    const reload = toReload(open, ['a.ipynb', 'b.py', 'shared.ipynb', 'gone.py']);
    assert.deepEqual(reload, [clean], 'never a dirty one, never a collaborative one');
  });
});
