/**
 * Unified diff text -> files, hunks and rows with old and new line numbers.
 * Pure: no DOM. The same reading as `parse_unified` in
 * grinta_jupyter/runtime/diffs.py (test/fixtures/hostile-diffs.json holds
 * diffs the runtime made and the rows both parsers must find).
 *
 * Hunk bodies are read by their `@@ -a,b +c,d @@` counts, not by the first
 * character alone, so a removed line that starts with "--" (a SQL or Lua
 * comment) is a removed line and not the next file's header, and an added
 * `+++ b/x` is an added line. Lines end at "\n" only: a carriage return is
 * part of its line (shown escaped), unless every line of the diff ends in
 * CRLF (a diff saved on Windows). Header paths that hold unsafe characters
 * come C-quoted (`"b/a\nb.py"`) and are unquoted here; the card shows them
 * escaped. Text outside a hunk that is not a header is kept as a note, so
 * nothing is silently lost; a diff cut short (`diff_truncated`) simply ends
 * early, its last line keeping the role its hunk gives it.
 */

export type RowKind = 'context' | 'add' | 'del' | 'note';

export interface DiffRow {
  kind: RowKind;
  /** 1-based line in the old file; null for added lines and notes. */
  oldLine: number | null;
  /** 1-based line in the new file; null for removed lines and notes. */
  newLine: number | null;
  /** The line without its leading marker. */
  text: string;
}

export interface DiffHunk {
  header: string;
  oldStart: number;
  oldCount: number;
  newStart: number;
  newCount: number;
  /** What follows the second `@@` (git puts the enclosing definition there). */
  section: string;
  rows: DiffRow[];
}

export interface DiffFile {
  /** The path without its `a/` prefix; null for `/dev/null` (a created file). */
  oldPath: string | null;
  /** The path without its `b/` prefix; null for `/dev/null` (a deleted file). */
  newPath: string | null;
  /** The path to show. */
  path: string;
  status: 'modified' | 'added' | 'deleted';
  hunks: DiffHunk[];
  added: number;
  removed: number;
  /** Lines that are neither headers nor hunk rows (`index ...`, "Binary files differ"). */
  notes: string[];
}

// `[\s\S]`, not `.`: a section may hold a carriage return or U+2028 (shown escaped).
const HUNK_HEADER = /^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@ ?([\s\S]*)$/;

export function parseUnifiedDiff(text: string): DiffFile[] {
  const files: DiffFile[] = [];
  let file: DiffFile | null = null;
  let hunk: DiffHunk | null = null;
  let oldLeft = 0;
  let newLeft = 0;
  let oldLine = 0;
  let newLine = 0;

  const crlf = text.includes('\r\n') && !/(^|[^\r])\n/.test(text);
  const lines = text.split(crlf ? '\r\n' : '\n');
  if (lines.length && lines[lines.length - 1] === '') {
    lines.pop();
  }
  const startFile = (): DiffFile => {
    const started = emptyFile();
    files.push(started);
    return started;
  };

  for (let i = 0; i < lines.length; i++) {
    const line = lines[i];

    if (hunk && (oldLeft > 0 || newLeft > 0)) {
      const mark = line[0];
      const body = line.slice(1);
      // Some tools strip the single space of an empty context line.
      if ((mark === ' ' || line === '') && oldLeft > 0 && newLeft > 0) {
        hunk.rows.push({ kind: 'context', oldLine: oldLine++, newLine: newLine++, text: body });
        oldLeft--;
        newLeft--;
        continue;
      }
      if (mark === '-' && oldLeft > 0) {
        hunk.rows.push({ kind: 'del', oldLine: oldLine++, newLine: null, text: body });
        oldLeft--;
        continue;
      }
      if (mark === '+' && newLeft > 0) {
        hunk.rows.push({ kind: 'add', oldLine: null, newLine: newLine++, text: body });
        newLeft--;
        continue;
      }
    }
    if (hunk && line.startsWith('\\')) {
      hunk.rows.push({ kind: 'note', oldLine: null, newLine: null, text: line.slice(1).trim() });
      continue;
    }

    const header = HUNK_HEADER.exec(line);
    if (header) {
      file = file ?? startFile();
      const oldCount = header[2] === undefined ? 1 : Number(header[2]);
      const newCount = header[4] === undefined ? 1 : Number(header[4]);
      hunk = {
        header: line,
        oldStart: Number(header[1]),
        oldCount,
        newStart: Number(header[3]),
        newCount,
        section: header[5] ?? '',
        rows: []
      };
      file.hunks.push(hunk);
      oldLeft = oldCount;
      newLeft = newCount;
      oldLine = hunk.oldStart;
      newLine = hunk.newStart;
      continue;
    }

    if (line.startsWith('--- ') && lines[i + 1]?.startsWith('+++ ')) {
      // A `diff --git` line may already have opened this file.
      if (!file || file.hunks.length || file.oldPath !== null || file.newPath !== null) {
        file = startFile();
      }
      file.oldPath = stripPath(line.slice(4), 'a/');
      file.newPath = stripPath(lines[i + 1].slice(4), 'b/');
      file.path = file.newPath ?? file.oldPath ?? '';
      file.status = file.oldPath === null ? 'added' : file.newPath === null ? 'deleted' : 'modified';
      hunk = null;
      i++;
      continue;
    }

    if (line.startsWith('diff --git ')) {
      file = startFile();
      file.path = line.slice('diff --git '.length).split(' b/')[0].replace(/^a\//, '');
      hunk = null;
      continue;
    }

    file = file ?? startFile();
    file.notes.push(line);
    hunk = null;
  }
  for (const f of files) {
    const rows = f.hunks.flatMap(h => h.rows);
    f.added = rows.filter(r => r.kind === 'add').length;
    f.removed = rows.filter(r => r.kind === 'del').length;
  }
  return files;
}

function emptyFile(): DiffFile {
  return {
    oldPath: null,
    newPath: null,
    path: '',
    status: 'modified',
    hunks: [],
    added: 0,
    removed: 0,
    notes: []
  };
}

function stripPath(raw: string, prefix: string): string | null {
  // A quoted path is whole; otherwise drop a trailing tab-separated timestamp (diff -u).
  const path = unquotePath(raw.startsWith('"') ? raw : raw.split('\t')[0]);
  if (path === '/dev/null') {
    return null;
  }
  return path.startsWith(prefix) ? path.slice(prefix.length) : path;
}

const C_ESCAPES: Record<string, string> = { n: '\n', t: '\t', r: '\r', '"': '"', '\\': '\\' };

/** A header path as git writes it, C-quoted when it holds anything unsafe, read back. */
export function unquotePath(text: string): string {
  if (text.length < 2 || !text.startsWith('"') || !text.endsWith('"')) {
    return text;
  }
  return text
    .slice(1, -1)
    .replace(/\\(u[0-9a-fA-F]{4}|[\s\S])/g, (_m, esc: string) =>
      esc.length === 5 ? String.fromCharCode(parseInt(esc.slice(1), 16)) : C_ESCAPES[esc] ?? esc
    );
}

/**
 * How many old and new lines a hunk's header promises that its rows do not hold: [0, 0] for a
 * whole hunk. A diff the runtime made is always whole, save the last hunk of one cut short
 * (`diff_truncated`); anything else is a malformed payload, and the card says so.
 */
export function hunkShortfall(hunk: DiffHunk): [number, number] {
  const old = hunk.rows.filter(r => r.kind === 'context' || r.kind === 'del').length;
  const now = hunk.rows.filter(r => r.kind === 'context' || r.kind === 'add').length;
  return [Math.max(0, hunk.oldCount - old), Math.max(0, hunk.newCount - now)];
}

/** Number of rows a diff shows when fully expanded (hunk headers not counted). */
export function rowCount(files: DiffFile[]): number {
  return files.reduce((n, f) => n + f.hunks.reduce((m, h) => m + h.rows.length, 0), 0);
}
