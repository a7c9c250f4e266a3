/**
 * The package's JupyterLab plugins (its "extension" entry): trace-sync
 * (traceSync.ts) keeps a finished session's trace in its notebook; next-task
 * (nextTask.ts) lets that trace give the session its next task; documents
 * (documents.ts) answers a session's questions about open documents. The MIME
 * renderers for the cards are the "mimeExtension" entry, index.ts.
 */

import type { JupyterFrontEndPlugin } from '@jupyterlab/application';

import documents from './documents';
import nextTask from './nextTask';
import traceSync from './traceSync';

const plugins: JupyterFrontEndPlugin<void>[] = [traceSync, nextTask, documents];

export default plugins;
