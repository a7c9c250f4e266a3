/**
 * Tells a grinta session in a notebook's kernel which documents this page
 * has open, and reloads them after the session wrote them.
 *
 * The kernel asks over a comm (target `grinta.documents`, registered here on
 * the kernel of every notebook the page shows) before it commits a write;
 * the page answers on a comm of its own (target `grinta.documents.answer`,
 * registered by the kernel), so a page without this extension, which closes
 * the question's comm, cannot keep the kernel from hearing this one. A file
 * open here with unsaved changes is not written (DOCUMENT_UNSAVED). After a
 * write the kernel asks again and sends "reload" on this page's answer comm
 * with the paths it wrote; each document open here without unsaved changes
 * then reloads from disk (context.revert()), so it shows the change at once
 * and no "file changed on disk" dialog follows; a trusted notebook stays
 * trusted. Every document widget counts: notebooks, the file editor, any
 * other. Under real-time collaboration the server itself loads the file into
 * the shared document, so nothing is reloaded here.
 *
 * A kernel busy in a cell (`%grinta approve` in manual mode holds it while the
 * session commits) cannot ask. So this page also pushes its documents, on a
 * comm of its own on `grinta.documents.answer`, to every kernel that listens:
 * one that asked anything, opened a comm on `grinta.documents.watch` (it does
 * when a session starts), or lists a comm on `grinta.documents.answer` in its
 * comm_info when this page connects to it. It pushes at once, then whenever
 * what it would answer changes (a document made dirty or saved, opened,
 * closed, renamed); the kernel keeps the last push's comm open and sends a
 * "reload" on it after a write it made while busy, and closes it when it forgets
 * the page: then, being here, the page pushes again. The messages and the rules
 * are in openDocuments.ts (pure, unit-tested) and
 * grinta_jupyter/jupyter/documents.py.
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { PageConfig } from '@jupyterlab/coreutils';
import type { DocumentRegistry } from '@jupyterlab/docregistry';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import type { JSONObject } from '@lumino/coreutils';
import type { Widget } from '@lumino/widgets';

import {
  ANSWER_TARGET,
  DOCUMENTS_TARGET,
  documentsAnswer,
  documentsPush,
  kernelListens,
  OpenDocument,
  pushKey,
  readRequest,
  toReload,
  WATCH_TARGET
} from './openDocuments';

// Shell areas a document may be shown in (JupyterLab's and Notebook 7's).
const AREAS = ['main', 'down', 'left', 'right'];

/** One id per page, so the kernel can count the pages that answer it. */
const APP_ID = Math.random().toString(36).slice(2) + Date.now().toString(36);

function openDocuments(app: JupyterFrontEnd): OpenDocument[] {
  const contents = app.serviceManager.contents;
  const docs: OpenDocument[] = [];
  const seen = new Set<Widget>();
  for (const area of AREAS) {
    let widgets: Iterable<Widget>;
    try {
      widgets = app.shell.widgets(area);
    } catch {
      continue; // an area this shell does not have
    }
    for (const widget of widgets) {
      if (seen.has(widget)) continue;
      seen.add(widget);
      const context = (widget as Partial<{ context: DocumentRegistry.Context }>).context;
      if (context) followChanges(app, context);
      if (!context?.model || !context.isReady) continue;
      docs.push({
        path: contents.localPath(context.path),
        dirty: context.model.dirty,
        collaborative: context.model.collaborative ?? false,
        revert: () => revertKeepingTrust(context)
      });
    }
  }
  return docs;
}

type TrustedCells = Partial<{ cells: Iterable<{ trusted: boolean }> }>;

/**
 * Reload from disk. A notebook the user trusted stays trusted: the file no
 * longer matches its signature (the session wrote it, after the user approved
 * the edit), and without this its outputs, among them the live session panel
 * of the notebook that runs it, would fall back to plain text.
 */
async function revertKeepingTrust(context: DocumentRegistry.Context): Promise<void> {
  const before = (context.model as TrustedCells).cells;
  const trusted = before !== undefined && [...before].every(cell => cell.trusted);
  await context.revert();
  const after = (context.model as TrustedCells).cells;
  if (trusted && after) {
    for (const cell of after) {
      cell.trusted = true;
    }
  }
}

async function reload(app: JupyterFrontEnd, paths: string[]): Promise<void> {
  const docs = toReload(openDocuments(app), paths);
  const results = await Promise.allSettled(docs.map(doc => doc.revert()));
  results.forEach((result, i) => {
    if (result.status === 'rejected') {
      console.warn(`grinta: could not reload ${docs[i].path}`, result.reason);
    }
  });
}

// -- pushes -------------------------------------------------------------------------

/** A kernel that listens, the notebook that connects it, and the last push it was sent. */
interface Listener {
  panel: NotebookPanel;
  last: string | null;
  repushedAt: number; // Date.now() of the last push made because the kernel forgot this page
}

const listening = new Map<Kernel.IKernelConnection, Listener>();
const followed = new WeakSet<object>();
let pushScheduled = false;
// A backstop for a change no signal tells (pushes are sent only when they differ).
const POLL_MS = 1000;
// At most one push this often because the kernel closed the comm of this page's last push.
const REPUSH_MS = 5000;
let poll: ReturnType<typeof setInterval> | null = null;

/** Push to `kernel` from now on (again at once, even if nothing changed). */
function listen(
  app: JupyterFrontEnd,
  panel: NotebookPanel,
  kernel: Kernel.IKernelConnection
): void {
  const known = listening.get(kernel);
  if (known) {
    known.last = null;
  } else {
    listening.set(kernel, { panel, last: null, repushedAt: 0 });
    const forget = () => {
      listening.delete(kernel);
    };
    kernel.disposed.connect(forget);
    kernel.statusChanged.connect((_kernel, status) => {
      // A restarted kernel listens again only once a session asks it.
      if (status === 'restarting' || status === 'autorestarting' || status === 'dead') forget();
    });
  }
  if (poll === null) {
    poll = setInterval(() => pushAll(app), POLL_MS);
  }
  schedulePush(app);
}

/**
 * Push once the current change is done (one push for a burst of signals), before any later
 * event: a change made just before the user runs a cell reaches the kernel first.
 */
function schedulePush(app: JupyterFrontEnd): void {
  if (pushScheduled || listening.size === 0) return;
  pushScheduled = true;
  void Promise.resolve().then(() => {
    pushScheduled = false;
    pushAll(app);
  });
}

/** Push when a document's unsaved state, path or life changes. */
function followChanges(app: JupyterFrontEnd, context: DocumentRegistry.Context): void {
  if (followed.has(context)) return;
  followed.add(context);
  const changed = () => schedulePush(app);
  context.model?.stateChanged.connect((_model, change) => {
    if (change.name === 'dirty') changed();
  });
  context.pathChanged.connect(changed);
  context.disposed.connect(changed);
  void context.ready.then(changed, () => undefined);
}

function pushAll(app: JupyterFrontEnd): void {
  if (listening.size === 0) return;
  const docs = openDocuments(app);
  const root = PageConfig.getOption('serverRoot');
  for (const [kernel, listener] of listening) {
    if (kernel.isDisposed) {
      listening.delete(kernel);
      continue;
    }
    const host = app.serviceManager.contents.localPath(listener.panel.sessionContext.path);
    const push = documentsPush(APP_ID, root, host, docs);
    const key = pushKey(push);
    if (key === listener.last) continue;
    try {
      const own = kernel.createComm(ANSWER_TARGET);
      own.onMsg = message => onReload(app, message);
      own.onClose = () => onPushClosed(app, listener, key);
      own.open(push as unknown as JSONObject);
      listener.last = key;
    } catch (reason) {
      // The connection is going away (a restart, a closed tab): nothing to push to.
      console.warn('grinta: could not tell the kernel about open documents', reason);
    }
  }
  if (listening.size === 0 && poll !== null) {
    clearInterval(poll);
    poll = null;
  }
}

/**
 * The kernel closed the comm of a push. When a later push replaced it, that is expected.
 * When it was this page's last, the kernel forgot the page (it answered a question too late:
 * a throttled background tab), yet the page is here: it pushes again, or its unsaved files
 * would be written by the next commit made while the kernel is busy. At most every
 * REPUSH_MS: a kernel that keeps no more pages closes every push at once.
 */
function onPushClosed(app: JupyterFrontEnd, listener: Listener, key: string): void {
  if (listener.last !== key) return;
  const wait = Math.max(0, listener.repushedAt + REPUSH_MS - Date.now());
  listener.repushedAt = Date.now() + wait;
  setTimeout(() => {
    if (listener.last === key) {
      listener.last = null;
      schedulePush(app);
    }
  }, wait);
}

function onReload(app: JupyterFrontEnd, message: KernelMessage.ICommMsgMsg): void {
  const request = readRequest(message.content.data);
  if (request?.request === 'reload') {
    void reload(app, request.paths);
  }
}

// -- answers --------------------------------------------------------------------------

// Questions this page is answering, until the kernel closes them. Only one
// connection per kernel handles comms, but a notebook's connection can be
// replaced while a question is open.
const answering = new Set<string>();

function answer(
  app: JupyterFrontEnd,
  panel: NotebookPanel,
  kernel: Kernel.IKernelConnection,
  question: Kernel.IComm,
  msg: KernelMessage.ICommOpenMsg
): void {
  const request = readRequest(msg.content.data);
  if (request?.request !== 'documents' || answering.has(request.question)) {
    return;
  }
  const id = request.question;
  answering.add(id);
  question.onClose = () => {
    answering.delete(id);
  };
  const root = PageConfig.getOption('serverRoot');
  const host = app.serviceManager.contents.localPath(panel.sessionContext.path);
  const reply = documentsAnswer(id, APP_ID, root, host, openDocuments(app));
  try {
    const own = kernel.createComm(ANSWER_TARGET);
    own.onMsg = message => onReload(app, message);
    own.open(reply as unknown as JSONObject);
  } catch (reason) {
    // The connection is going away (a restart, a closed tab): nothing to answer with.
    console.warn('grinta: could not answer the kernel about open documents', reason);
  }
  if (!listening.has(kernel)) listen(app, panel, kernel);
}

function watch(app: JupyterFrontEnd, panel: NotebookPanel, kernels: WeakSet<object>): void {
  const register = () => {
    const kernel = panel.sessionContext.session?.kernel;
    if (!kernel || kernels.has(kernel)) return;
    kernels.add(kernel);
    kernel.registerCommTarget(DOCUMENTS_TARGET, (comm, msg) =>
      answer(app, panel, kernel, comm, msg)
    );
    kernel.registerCommTarget(WATCH_TARGET, (_comm, msg) => {
      if (readRequest(msg.content.data)?.request === 'watch') listen(app, panel, kernel);
    });
    // A kernel whose session started before this page connected: its comm_info says so.
    kernel
      .requestCommInfo({ target_name: ANSWER_TARGET })
      .then(reply => {
        if (kernelListens(reply.content) && !listening.has(kernel)) listen(app, panel, kernel);
      })
      .catch(() => undefined); // the connection went away meanwhile
  };
  panel.sessionContext.kernelChanged.connect(register);
  void panel.sessionContext.ready.then(register);
  register();
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'grinta-jupyter-labextension:documents',
  description:
    'Tells a grinta session which files are open with unsaved changes, and reloads those it wrote.',
  autoStart: true,
  requires: [INotebookTracker],
  activate: (app: JupyterFrontEnd, tracker: INotebookTracker) => {
    const kernels = new WeakSet<object>();
    tracker.forEach(panel => watch(app, panel, kernels));
    tracker.widgetAdded.connect((_tracker, panel) => watch(app, panel, kernels));
    // A document opened or closed: push, if any kernel listens.
    const shell = app.shell as Partial<{ layoutModified: { connect(slot: () => void): boolean } }>;
    shell.layoutModified?.connect(() => schedulePush(app));
    app.shell.currentChanged?.connect(() => schedulePush(app));
  }
};

export default plugin;
