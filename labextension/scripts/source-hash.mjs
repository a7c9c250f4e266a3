// The fingerprint of the sources the committed build was made from.
//
// `--write` stores it next to the build (grinta_jupyter/labextension/source.sha256,
// done by `npm run build:prod`); `--check` exits 1 when the sources changed since.
// tests/test_labextension.py computes the same hash in Python, so a stale
// committed build fails the ordinary test suite even on machines without Node.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, '..', 'grinta_jupyter', 'labextension', 'source.sha256');
const INPUTS = ['package.json', 'package-lock.json', 'tsconfig.json', 'src', 'style'];

function files(path) {
  const full = join(root, path);
  if (!existsSync(full)) return [];
  try {
    return readdirSync(full).flatMap(name => files(join(path, name)));
  } catch {
    return [path];
  }
}

export function sourceHash() {
  const hash = createHash('sha256');
  const all = INPUTS.flatMap(files).map(p => relative(root, join(root, p)).split('\\').join('/'));
  for (const path of all.sort()) {
    // Line endings normalised so a Windows checkout gives the same hash.
    const text = readFileSync(join(root, path)).toString('latin1').replace(/\r\n/g, '\n');
    hash.update(path + '\0');
    hash.update(Buffer.from(text, 'latin1'));
    hash.update('\0');
  }
  return hash.digest('hex');
}

const mode = process.argv[2];
const current = sourceHash();
if (mode === '--write') {
  writeFileSync(stamp, current + '\n');
} else if (mode === '--check') {
  const stored = existsSync(stamp) ? readFileSync(stamp, 'utf8').trim() : '(none)';
  if (stored !== current) {
    console.error(`labextension build is stale: sources ${current}, build made from ${stored}`);
    process.exit(1);
  }
} else {
  console.log(current);
}
