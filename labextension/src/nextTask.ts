/**
 * Lets the saved trace of a grinta session take the session's next task.
 *
 * When a task ends, the cell's output becomes the trace (traceSync.ts): the
 * session card, no widget, so the notebook saves no widget view, and the live
 * panel's message box is gone with the panel. In every notebook this plugin
 * renders session cards itself (a renderer added to that notebook's own
 * rendermime, ahead of the package's plain one, as ipywidgets adds its widget
 * renderer), so a card knows its notebook's kernel: it links to it
 * (sessionLink.ts, over the `grinta.session` comm) and shows the box when the
 * kernel holds the card's session as its current one (render/traceBox.ts).
 * Enter gives the session its next task, the path of `%grinta continue TASK`;
 * the kernel displays the panel again in reply, and this plugin puts that
 * display in the card's output, in place of the card: the new task's steps
 * show where it was typed, and when it ends the output is the trace again.
 *
 * One link per notebook, opened when a card first needs it: reset when the
 * notebook's kernel changes, restarts or dies, and opened again once the kernel
 * is idle; tried again when a grinta output comes from a kernel that had
 * refused it (the extension was not loaded yet).
 * Cards anywhere else (an output view, a console) are the plain card.
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import type { ICodeCellModel } from '@jupyterlab/cells';
import type * as nbformat from '@jupyterlab/nbformat';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import type { Kernel, KernelMessage } from '@jupyterlab/services';
import type { JSONObject } from '@lumino/coreutils';
import { Widget } from '@lumino/widgets';

import { sessionCard } from './render/sessionCard';
import { TraceBox } from './render/traceBox';
import { SESSION_MIME, STEP_MIME } from './schema';
import { LinkChannel, SESSION_TARGET, SessionLink, Shown } from './sessionLink';
import { traceSession } from './traceUpdate';

/** A session card that knows its notebook: the trace's card gets the box. */
class LinkedSessionRenderer extends Widget implements IRenderMime.IRenderer {
  private box: TraceBox | null = null;

  constructor(
    private readonly panel: NotebookPanel,
    private readonly link: SessionLink
  ) {
    super();
    this.addClass('grinta-output');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const data = model.data[SESSION_MIME];
    const card = sessionCard(data);
    this.box?.dispose();
    this.box = null;
    const session = traceSession({ [SESSION_MIME]: data });
    if (session !== null && card.classList.contains('grinta-session')) {
      const log = (data as { log?: unknown }).log;
      this.box = new TraceBox({
        session,
        log: typeof log === 'string' && log ? log : null,
        link: this.link,
        trusted: model.trusted,
        shown: display => showPanel(this.panel, model, session, display)
      });
      card.append(this.box.node);
    }
    this.node.replaceChildren(card);
    return Promise.resolve();
  }

  dispose(): void {
    this.box?.dispose();
    this.box = null;
    super.dispose();
  }
}

/**
 * Put the kernel's new display of the panel in the output that holds `model` (the card
 * that asked), keeping the output's type; if that output is gone, in the first output of
 * the same session, so the panel shows somewhere.
 */
function showPanel(panel: NotebookPanel, model: IRenderMime.IMimeModel, session: string, display: Shown): void {
  const cells = panel.content.model?.cells;
  if (!cells) return;
  let fallback: { outputs: ICodeCellModel['outputs']; index: number } | null = null;
  for (const cell of cells) {
    if (cell.type !== 'code') continue;
    const outputs = (cell as ICodeCellModel).outputs;
    for (let index = 0; index < outputs.length; index++) {
      const output = outputs.get(index);
      if ((output as unknown) === model) {
        replace(outputs, index, display);
        return;
      }
      if (!fallback && traceSession(output.data) === session) fallback = { outputs, index };
    }
  }
  if (fallback) replace(fallback.outputs, fallback.index, display);
}

function replace(outputs: ICodeCellModel['outputs'], index: number, display: Shown): void {
  const current = outputs.get(index).toJSON();
  outputs.set(index, { ...current, data: display.data, metadata: display.metadata } as nbformat.IOutput);
}

/** A link channel over a comm of `kernel`, or null when there is no kernel. */
function channel(kernel: Kernel.IKernelConnection | null | undefined): LinkChannel | null {
  if (!kernel) return null;
  let comm: Kernel.IComm | null = null;
  return {
    open(receive, closed) {
      comm = kernel.createComm(SESSION_TARGET);
      comm.onMsg = msg => receive(msg.content.data);
      comm.onClose = () => closed();
      comm.open({});
    },
    send(data, iopub) {
      if (!comm || comm.isDisposed) throw new Error('the link is closed');
      const future = comm.send(data as JSONObject);
      future.onIOPub = msg => iopub(msg.header.msg_type, msg.content);
    },
    close() {
      if (comm && !comm.isDisposed) comm.close();
    }
  };
}

/** A kernel message that shows grinta ran there: a step or session bundle. */
function fromGrinta(msg: KernelMessage.IMessage): boolean {
  const type = msg.header.msg_type;
  if (type !== 'display_data' && type !== 'update_display_data' && type !== 'execute_result') return false;
  const data = (msg.content as { data?: Record<string, unknown> }).data;
  return !!data && (SESSION_MIME in data || STEP_MIME in data);
}

const GONE: ReadonlySet<string> = new Set(['restarting', 'autorestarting', 'dead']);

function watch(panel: NotebookPanel): void {
  const context = panel.sessionContext;
  const link = new SessionLink(() => channel(context.session?.kernel));
  const factory: IRenderMime.IRendererFactory = {
    // Safe: the card is built from text nodes only, as the package's plain renderer.
    safe: true,
    mimeTypes: [SESSION_MIME],
    createRenderer: () => new LinkedSessionRenderer(panel, link)
  };
  // This notebook's own rendermime (a clone of the app's): replaces the plain card here only.
  panel.content.rendermime.addFactory(factory, 0);
  context.kernelChanged.connect(() => {
    link.reset();
    link.wake();
  });
  context.statusChanged.connect((_context, status) => {
    // A restart disposes the comms after it says so: ask again once the kernel is back.
    if (GONE.has(status)) link.reset();
    else if (status === 'idle') link.wake();
  });
  context.iopubMessage.connect((_context, msg) => {
    if (fromGrinta(msg)) link.retry();
  });
  panel.disposed.connect(() => link.dispose());
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'grinta-jupyter-labextension:next-task',
  description: "Lets a grinta session's saved trace give the session its next task.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    tracker.forEach(watch);
    tracker.widgetAdded.connect((_tracker, panel) => watch(panel));
  }
};

export default plugin;
