// The fingerprint of the sources the committed builds were made from.
//
// `--write` stores it next to the labextension build
// (grinta_jupyter/labextension/source.sha256, done by `npm run build:prod`);
// `--check` exits 1 when the sources changed since, or when the live panel's
// card bundle (grinta_jupyter/jupyter/static/card.js and card.css, whose first
// line names the hash they were built from: scripts/bundle-card.mjs) is stale.
// tests/test_labextension.py computes the same hash in Python, so a stale
// committed build fails the ordinary test suite even on machines without Node.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const stamp = join(root, '..', 'grinta_jupyter', 'labextension', 'source.sha256');
export const BUNDLES = ['card.js', 'card.css'].map(name =>
  join(root, '..', 'grinta_jupyter', 'jupyter', 'static', name)
);
const INPUTS = ['package.json', 'package-lock.json', 'tsconfig.json', 'scripts', 'src', 'style'];

/** The first line of a bundle: names the sources it was built from. */
export function bundleBanner(hash) {
  return `/* grinta card bundle, built by labextension/scripts/bundle-card.mjs from sources ${hash} */`;
}

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

function stale(current) {
  const problems = [];
  const stored = existsSync(stamp) ? readFileSync(stamp, 'utf8').trim() : '(none)';
  if (stored !== current) {
    problems.push(`labextension build is stale: sources ${current}, build made from ${stored}`);
  }
  for (const bundle of BUNDLES) {
    const first = existsSync(bundle) ? readFileSync(bundle, 'utf8').split('\n', 1)[0] : '(none)';
    if (first !== bundleBanner(current)) {
      problems.push(`${relative(join(root, '..'), bundle)} is stale or missing: rebuild it`);
    }
  }
  return problems;
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const mode = process.argv[2];
  const current = sourceHash();
  if (mode === '--write') {
    writeFileSync(stamp, current + '\n');
  } else if (mode === '--check') {
    const problems = stale(current);
    if (problems.length) {
      console.error(problems.join('\n'));
      process.exit(1);
    }
  } else {
    console.log(current);
  }
}
