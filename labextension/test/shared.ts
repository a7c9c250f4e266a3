/**
 * Fixtures shared with the Python tests (tests/test_render_hostile.py): the
 * escaping rule both `visible` implementations follow, and diffs the runtime
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
