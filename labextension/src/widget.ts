/**
 * The live panel's card as an anywidget module: grinta_jupyter/jupyter/card.py
 * loads the bundle of this file (grinta_jupyter/jupyter/static/card.js, made
 * by scripts/bundle-card.mjs), so the live panel draws the same card, from the
 * same code, as the saved trace the MIME renderer draws (index.ts).
 */

import { CardModel, LiveCard } from './render/liveCard';

export function render({ model, el }: { model: CardModel; el: HTMLElement }): () => void {
  const card = new LiveCard(model);
  el.replaceChildren(card.node);
  return () => card.dispose();
}

export default { render };
