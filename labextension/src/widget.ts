/**
 * The live panel's card as an anywidget module: grinta_jupyter/jupyter/card.py
 * loads the bundle of this file (grinta_jupyter/jupyter/static/card.js, made
 * by scripts/bundle-card.mjs), so the live panel draws the same card, from the
 * same code, as the saved trace the MIME renderer draws (index.ts). The
 * panel's marks, its message box and its model bar load the same module (`kind`).
 */

import { h } from './render/dom';
import { CardModel, LiveCard } from './render/liveCard';
import { markCard } from './render/markCard';
import { BoxModel, MessageBox } from './render/messageBox';
import { ModelBar, ModelsModel } from './render/modelBar';

type AnyModel = CardModel & BoxModel & ModelsModel;

/**
 * `kind` says what the widget is: a step card or the session summary, a mark, the message
 * box, the model bar.
 */
export function render({ model, el }: { model: AnyModel; el: HTMLElement }): () => void {
  const kind = model.get('kind');
  if (kind === 'mark') {
    el.replaceChildren(h('div', { class: 'grinta-output grinta-live-mark' }, markCard(model.get('payload'))));
    return () => undefined;
  }
  if (kind === 'message') {
    const box = new MessageBox(model);
    el.replaceChildren(box.node);
    return () => box.dispose();
  }
  if (kind === 'models') {
    const bar = new ModelBar(model);
    el.replaceChildren(bar.node);
    return () => bar.dispose();
  }
  const card = new LiveCard(model);
  el.replaceChildren(card.node);
  return () => card.dispose();
}

export default { render };
