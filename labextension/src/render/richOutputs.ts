/**
 * A step's rich outputs (docs/mime-schema.md, `observation.outputs`): the
 * plots and images a kernel `execute` made. An image is drawn from its base64
 * data as a `data:` URL; anything else shows as its one-line `text/plain`
 * description. No markup from the payload is ever rendered: a `text/html`
 * output shows as its description only.
 */

import { h } from './dom';

/** The image types drawn; their data must be base64. */
const IMAGE_TYPES = ['image/png', 'image/jpeg'] as const;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
/** As on the Python side (jupyter/mime.py): what a payload may carry. */
const MAX_OUTPUTS = 8;
const MAX_DATA_CHARS = 2_000_000;

export interface RichOutput {
  /** One line: `[figure 1: image/png 640x480]`. */
  description: string;
  image: { mime: string; data: string } | null;
}

/** The valid outputs in `value` (a payload's `observation.outputs`); anything else is skipped. */
export function readOutputs(value: unknown): RichOutput[] {
  if (!Array.isArray(value)) {
    return [];
  }
  return value.slice(0, MAX_OUTPUTS).flatMap(bundle => {
    if (typeof bundle !== 'object' || bundle === null || Array.isArray(bundle)) {
      return [];
    }
    const fields = bundle as Record<string, unknown>;
    const text = fields['text/plain'];
    const description = typeof text === 'string' ? text : '[output]';
    const mime = IMAGE_TYPES.find(type => isBase64(fields[type]));
    const image = mime ? { mime, data: fields[mime] as string } : null;
    return [{ description, image }];
  });
}

function isBase64(data: unknown): data is string {
  return typeof data === 'string' && data.length <= MAX_DATA_CHARS && BASE64.test(data);
}

/** The outputs as a section of the card, or null when there are none. */
export function richOutputsSection(outputs: RichOutput[]): HTMLElement | null {
  if (outputs.length === 0) {
    return null;
  }
  return h(
    'section',
    { class: 'grinta-section grinta-rich-outputs' },
    outputs.map(output =>
      h(
        'figure',
        { class: 'grinta-rich-output', style: 'margin:4px 0' },
        output.image &&
          h('img', {
            class: 'grinta-rich-image',
            src: `data:${output.image.mime};base64,${output.image.data}`,
            alt: output.description,
            style: 'max-width:100%;height:auto'
          }),
        h('figcaption', { class: 'grinta-muted grinta-rich-description' }, output.description)
      )
    )
  );
}
