/**
 * What the kernel is told about the documents open in this page, and which
 * of them a "reload" touches. Pure: no JupyterLab, no DOM; the plugin that
 * wires it to the kernels and the shell is documents.ts, and the kernel side
 * is grinta_jupyter/jupyter/documents.py (which documents the wire format).
 *
 * Paths are relative to the Jupyter server's root, without a drive prefix
 * (`RTC:` under real-time collaboration): the kernel resolves them.
 *
 * Besides answering questions, a page pushes its documents to every kernel
 * that listens (it asked anything, or its comm_info lists a comm on
 * ANSWER_TARGET), at once and whenever they change: a kernel busy in a cell
 * (`%grinta approve` in manual mode) cannot ask, and then decides from the
 * last push it handled before the cell.
 */

/** The target the kernel asks on: one comm per question, opened by the kernel. */
export const DOCUMENTS_TARGET = 'grinta.documents';
/**
 * The target this page answers on: a comm of its own per question, so a page
 * without the extension (which closes the question's comm) silences no one.
 */
export const ANSWER_TARGET = 'grinta.documents.answer';
/** The target the kernel opens a comm on when it starts listening: push from now on. */
export const WATCH_TARGET = 'grinta.documents.watch';

/** A document open in the page, as far as the kernel needs to know. */
export interface OpenDocument {
  /** Relative to the server root, drive prefix removed. */
  path: string;
  /** Open with changes not saved to disk. */
  dirty: boolean;
  /** Shared through real-time collaboration: the server keeps it in step with the file. */
  collaborative: boolean;
  /** Load the file's content from disk, dropping the document's own (context.revert()). */
  revert: () => Promise<void>;
}

/** The answer to `{"request": "documents", "question": ID}`. */
export interface DocumentsAnswer {
  question: string;
  app: string;
  root: string;
  host: string;
  documents: { path: string; dirty: boolean }[];
}

/**
 * This page's answer: every open document once (several views of one
 * document share it; any dirty view makes it dirty).
 */
export function documentsAnswer(
  question: string,
  app: string,
  root: string,
  host: string,
  open: OpenDocument[]
): DocumentsAnswer {
  return { question, app, root, host, documents: uniqueDocuments(open) };
}

/** What this page pushes: what it would answer, marked as a push instead of naming a question. */
export interface DocumentsPush {
  push: true;
  app: string;
  root: string;
  host: string;
  documents: { path: string; dirty: boolean }[];
}

export function documentsPush(
  app: string,
  root: string,
  host: string,
  open: OpenDocument[]
): DocumentsPush {
  return { push: true, app, root, host, documents: uniqueDocuments(open) };
}

/** Equal for two pushes that tell the kernel the same: only a different one is sent. */
export function pushKey(push: DocumentsPush): string {
  return JSON.stringify([push.root, push.host, push.documents]);
}

/**
 * Whether a kernel's `comm_info_reply` (asked for ANSWER_TARGET) says it
 * listens: it lists a comm on that target (the kernel keeps one while it does).
 */
export function kernelListens(reply: unknown): boolean {
  if (typeof reply !== 'object' || reply === null) return false;
  const { status, comms } = reply as { status?: unknown; comms?: unknown };
  if (status !== 'ok' || typeof comms !== 'object' || comms === null) return false;
  return Object.values(comms).some(
    info =>
      typeof info === 'object' &&
      info !== null &&
      (info as { target_name?: unknown }).target_name === ANSWER_TARGET
  );
}

function uniqueDocuments(open: OpenDocument[]): { path: string; dirty: boolean }[] {
  const dirty = new Map<string, boolean>();
  for (const doc of open) {
    dirty.set(doc.path, (dirty.get(doc.path) ?? false) || doc.dirty);
  }
  return [...dirty].map(([path, d]) => ({ path, dirty: d }));
}

/**
 * What the kernel asks for: `documents` (on the question's comm, with the
 * question's id), `watch` (on a comm of WATCH_TARGET: push from now on),
 * `reload` with its paths (on this page's answer or push comm), or null for
 * anything else.
 */
export function readRequest(
  data: unknown
):
  | { request: 'documents'; question: string }
  | { request: 'watch' }
  | { request: 'reload'; paths: string[] }
  | null {
  if (typeof data !== 'object' || data === null) return null;
  const { request, paths, question } = data as {
    request?: unknown;
    paths?: unknown;
    question?: unknown;
  };
  if (request === 'documents') {
    return typeof question === 'string' && question !== '' ? { request, question } : null;
  }
  if (request === 'watch') {
    return { request };
  }
  if (request === 'reload' && Array.isArray(paths)) {
    return { request, paths: paths.filter((p): p is string => typeof p === 'string') };
  }
  return null;
}

/**
 * The documents to reload from disk after the kernel wrote `paths`: those
 * open, without unsaved changes (never drop the user's work), and not
 * collaborative (there the server loads the file into the shared document
 * itself). One per path, since views of a document share their content.
 */
export function toReload(open: OpenDocument[], paths: string[]): OpenDocument[] {
  const wanted = new Set(paths);
  const seen = new Set<string>();
  const reload: OpenDocument[] = [];
  for (const doc of open) {
    if (!wanted.has(doc.path) || seen.has(doc.path)) continue;
    seen.add(doc.path);
    if (!doc.dirty && !doc.collaborative) reload.push(doc);
  }
  return reload;
}
