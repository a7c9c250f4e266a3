/**
 * Keeps a finished grinta session's trace in its notebook.
 *
 * A session runs in the background after its `%grinta` cell has finished,
 * and JupyterLab applies display updates to a cell only while it runs. This
 * plugin listens to each notebook's kernel and, when the final trace of a
 * session arrives (traceUpdate.ts says which messages and outputs), puts it
 * into the outputs that show that session, so it is what the notebook saves.
 */

import { JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import type { ICodeCellModel } from '@jupyterlab/cells';
import type * as nbformat from '@jupyterlab/nbformat';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';

import { outputsToReplace, TraceUpdate, traceUpdate } from './traceUpdate';

function apply(panel: NotebookPanel, update: TraceUpdate): void {
  const cells = panel.content.model?.cells;
  if (!cells) return;
  for (const cell of cells) {
    if (cell.type !== 'code') continue;
    const outputs = (cell as ICodeCellModel).outputs;
    const current = Array.from({ length: outputs.length }, (_, i) => outputs.get(i));
    for (const index of outputsToReplace(current, update)) {
      // The output keeps its type (display_data, or execute_result and its count).
      const replaced = { ...current[index].toJSON(), data: update.data, metadata: update.metadata };
      outputs.set(index, replaced as nbformat.IOutput);
    }
  }
}

function watch(panel: NotebookPanel): void {
  // The session context's signal follows kernel restarts and changes.
  panel.sessionContext.iopubMessage.connect((_context, msg) => {
    const update = traceUpdate(msg.header.msg_type, msg.content);
    if (update) apply(panel, update);
  });
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: 'grinta-jupyter-labextension:trace-sync',
  description: "Saves a grinta session's final trace in the output of the cell that started it.",
  autoStart: true,
  requires: [INotebookTracker],
  activate: (_app: JupyterFrontEnd, tracker: INotebookTracker) => {
    tracker.forEach(watch);
    tracker.widgetAdded.connect((_tracker, panel) => watch(panel));
  }
};

export default plugin;
