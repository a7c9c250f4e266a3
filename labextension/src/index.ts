/**
 * JupyterLab MIME renderers for grinta-jupyter's step and session cards.
 * The payloads are described in docs/mime-schema.md; this file only wires
 * the two MIME types to their cards. The package's other plugins (keeping a
 * finished session's trace in the notebook, giving it a next task from the box
 * under it, answering a session about open documents) are in plugins.ts; in a
 * notebook, the session card is drawn by nextTask.ts's renderer, which knows
 * the notebook's kernel.
 */

import { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { sessionCard } from './render/sessionCard';
import { stepCard } from './render/stepCard';
import { SESSION_MIME, STEP_MIME } from './schema';

class CardRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(
    private readonly mimeType: string,
    private readonly build: (data: unknown) => HTMLElement
  ) {
    super();
    this.addClass('grinta-output');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    this.node.replaceChildren(this.build(model.data[this.mimeType]));
    return Promise.resolve();
  }
}

function extension(
  name: string,
  mimeType: string,
  build: (data: unknown) => HTMLElement
): IRenderMime.IExtension {
  const rendererFactory: IRenderMime.IRendererFactory = {
    // Safe: cards are built from text nodes only, so they may show in untrusted notebooks.
    safe: true,
    mimeTypes: [mimeType],
    createRenderer: () => new CardRenderer(mimeType, build)
  };
  // Rank 0 puts the card ahead of the bundle's text/html and text/plain fallbacks.
  return { id: `grinta-jupyter-labextension:${name}`, rendererFactory, rank: 0 };
}

const extensions: IRenderMime.IExtension[] = [
  extension('step', STEP_MIME, stepCard),
  extension('session', SESSION_MIME, sessionCard)
];

export default extensions;
