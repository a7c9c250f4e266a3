// Bundles the live panel's card (src/widget.ts and style/base.css) into
// grinta_jupyter/jupyter/static/card.js and card.css, which the anywidget in
// grinta_jupyter/jupyter/card.py loads. Each file's first line names the
// source hash it was built from (source-hash.mjs --check compares it).
//
// esbuild, not the labextension's builder: an anywidget module is one
// self-contained ES module with no JupyterLab imports, while the builder
// (rspack, module federation) makes chunks that only JupyterLab can load.
import { build } from 'esbuild';
import { writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

import { BUNDLES, bundleBanner, sourceHash } from './source-hash.mjs';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const [js, css] = BUNDLES;
const banner = bundleBanner(sourceHash());

const common = {
  bundle: true,
  write: false,
  minify: true,
  legalComments: 'none',
  logLevel: 'warning'
};
const script = await build({
  ...common,
  entryPoints: [join(root, 'src', 'widget.ts')],
  format: 'esm',
  target: 'es2020',
  outfile: js
});
const style = await build({
  ...common,
  entryPoints: [join(root, 'style', 'base.css')],
  outfile: css
});
writeFileSync(js, banner + '\n' + script.outputFiles[0].text);
writeFileSync(css, banner + '\n' + style.outputFiles[0].text);
console.log(`bundled ${js} and ${css}`);
