/**
 * Which saved outputs a kernel message's finished trace replaces. Pure: no
 * DOM, no JupyterLab; the plugin that applies it is traceSync.ts.
 *
 * A `%grinta TASK` output holds the live panel (a widget view) with the trace
 * (a session payload carrying `steps`) as its fallback. When the session
 * ends, the kernel updates that display with the trace alone; this decides
 * whether a message is such an update and which outputs it is for.
 */

import { SESSION_MIME } from './schema';

export const WIDGET_VIEW_MIME = 'application/vnd.jupyter.widget-view+json';

/** A display message's new bundle, for every output of the session `session`. */
export interface TraceUpdate {
  session: string;
  data: Record<string, unknown>;
  metadata: Record<string, unknown>;
}

/** The session id of a bundle's trace (a session payload with a `steps` list), or null. */
export function traceSession(data: unknown): string | null {
  if (!isObject(data)) return null;
  const payload = data[SESSION_MIME];
  if (!isObject(payload) || typeof payload.session !== 'string' || !payload.session) return null;
  return Array.isArray(payload.steps) ? payload.session : null;
}

/**
 * The update a kernel message carries, or null: only `display_data` and
 * `update_display_data` holding a trace and no widget view count. A bundle
 * with the widget view is the live panel, which the cell already shows;
 * replacing it would re-render the panel and drop the reader's focus.
 */
export function traceUpdate(msgType: string, content: unknown): TraceUpdate | null {
  if (msgType !== 'update_display_data' && msgType !== 'display_data') return null;
  if (!isObject(content) || !isObject(content.data)) return null;
  const data = content.data;
  if (WIDGET_VIEW_MIME in data) return null;
  const session = traceSession(data);
  if (session === null) return null;
  const metadata = isObject(content.metadata) ? content.metadata : {};
  return { session, data, metadata };
}

/** The indices of the outputs (each with its `data` bundle) that `update` replaces. */
export function outputsToReplace(
  outputs: ReadonlyArray<{ data?: unknown }>,
  update: TraceUpdate
): number[] {
  const indices: number[] = [];
  outputs.forEach((output, index) => {
    if (traceSession(output.data) === update.session) indices.push(index);
  });
  return indices;
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
