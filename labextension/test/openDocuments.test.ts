/**
 * What a page tells the kernel about its open documents, and which it
 * reloads after a write (src/openDocuments.ts; the plugin is documents.ts).
 */

import assert from 'node:assert/strict';
import { describe, it } from 'node:test';

import { documentsAnswer, OpenDocument, readRequest, toReload } from '../src/openDocuments';

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
