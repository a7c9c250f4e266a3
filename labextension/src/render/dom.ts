/**
 * A tiny element builder. Text always goes in as text nodes, never as HTML,
 * so a payload cannot inject markup and every word stays searchable.
 */

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
      el.setAttribute(name, value === true ? '' : String(value));
    }
  }
  for (const child of children.flat()) {
    if (child === null || child === undefined || child === false) {
      continue;
    }
    el.append(child instanceof Node ? child : String(child));
  }
  return el;
}

/** A titled block of a card. */
export function section(name: string, title: string, ...body: (Child | Child[])[]): HTMLElement {
  return h('section', { class: `grinta-section grinta-${name}` }, h('h4', null, title), ...body);
}
