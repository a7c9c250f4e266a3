/**
 * What the reader opened or closed, kept across re-renders of the same card:
 * a live session replaces its trace output after every step, and a diff the
 * reader expanded should stay expanded. Keys are "<session>/<step>/<part>".
 */

const choices = new Map<string, boolean>();

/** The reader's last choice for `key`, or `fallback` if they made none. */
export function recall(key: string, fallback: boolean): boolean {
  return choices.get(key) ?? fallback;
}

export function remember(key: string, open: boolean): void {
  choices.set(key, open);
}

/** Give a <details> its remembered state and keep remembering it. */
export function rememberDetails(details: HTMLDetailsElement, key: string): HTMLDetailsElement {
  details.open = recall(key, details.open);
  details.addEventListener('toggle', () => remember(key, details.open));
  return details;
}
