/**
 * A tiny element builder. Text always goes in as text nodes, never as HTML,
 * so a payload cannot inject markup and every word stays searchable. Every
 * string is shown through `visible` (../visible.ts): a control character,
 * terminal escape, bidirectional override or invisible character becomes an
 * escape in a `grinta-escape` span, styled apart from literal text.
 */

import { visible, visibleParts } from '../visible';

export type Child = Node | string | number | null | undefined | false;

export type Props = Record<string, string | number | boolean | null | undefined>;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: Props | null,
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [name, value] of Object.entries(props ?? {})) {
    if (value === null || value === undefined || value === false) {
      continue;
    }
    if (name === 'class') {
      el.className = String(value);
    } else {
      el.setAttribute(name, value === true ? '' : visible(String(value), false));
    }
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    if (child instanceof Node) {
      el.append(child);
    } else {
      el.append(...shown(String(child)));
    }
  }
  return el;
}

/** Untrusted text as nodes: literal text, and escapes in `grinta-escape` spans. */
export function shown(text: string, keepNewlines = true): Node[] {
  return visibleParts(text, keepNewlines).map(part => {
    if (!part.escaped) {
      return document.createTextNode(part.text);
    }
    const span = document.createElement('span');
    span.className = 'grinta-escape';
    span.title = 'a control or invisible character, shown as an escape';
    span.textContent = part.text;
    return span;
  });
}

/** One line of untrusted text (a path, a name): a newline in it shows as `\n`. */
export function oneLine(text: string): Node[] {
  return shown(text, false);
}

/** A titled block of a card. */
export function section(name: string, title: string, ...body: (Child | Child[])[]): HTMLElement {
  return h('section', { class: `grinta-section grinta-${name}` }, h('h4', null, title), ...body);
}
