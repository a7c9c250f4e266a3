/**
 * Fixtures shared with the Python tests (tests/test_render_hostile.py): the
 * escaping rule both `visible` implementations follow, which whitespace or
 * letters of a diff row both cards draw visibly, and diffs the runtime
 * made with the rows both diff parsers must read from them.
 */

import { readFileSync } from 'node:fs';
import { join } from 'node:path';

export interface VisibleCase {
  name: string;
  text: string;
  keep_newlines: boolean;
  visible: string;
  parts: [string, boolean][];
}

/** A hunk's rows as [kind, text] and what each draws visibly (render/diffView.ts `rowSpaces`). */
export interface RowCase {
  name: string;
  rows: ['context' | 'add' | 'del' | 'note', string][];
  spaces: string[];
}

/** [role, old line, new line, text] */
export type RowEntry = [string, number | null, number | null, string];

export interface DiffCase {
  name: string;
  diff: string;
  files: {
    old_path: string | null;
    new_path: string | null;
    notes: string[];
    hunks: { header: string; rows: RowEntry[] }[];
  }[];
}

export function fixture<T>(name: string): T {
  // Compiled to build-test/test/: the fixtures stay next to the sources.
  const path = join(__dirname, '..', '..', 'test', 'fixtures', name);
  return JSON.parse(readFileSync(path, 'utf8')) as T;
}

/** Two files, three hunks: numbered 0, 1 (a.py) and 2 (b.py). */
export const THREE_HUNKS = [
  '--- a/a.py',
  '+++ b/a.py',
  '@@ -1,2 +1,2 @@',
  ' def f():',
  '-    return 1',
  '+    return 2',
  '@@ -20,2 +20,2 @@',
  ' def g():',
  '-    return 3',
  '+    return 4',
  '--- a/b.py',
  '+++ b/b.py',
  '@@ -5 +5 @@',
  '-x = 1',
  '+x = 2',
  ''
].join('\n');
