/**
 * Showing untrusted text: control characters made visible, never interpreted.
 * Pure: no DOM.
 *
 * The same rule as `visible` in grinta_jupyter/runtime/display.py: the same
 * characters, the same escape spelling (`\r`, `\x1b`, `\u202e`, `\U000e0041`);
 * both are tested against test/fixtures/visible-cases.json. A carriage
 * return, a terminal escape, a bidirectional override or an invisible
 * character in a diff, a path or an output would otherwise change what the
 * reviewer sees; shown as an escape, it is plainly there. Tab is kept, and
 * newline unless the text must stay on one line.
 */

const NAMED: Record<string, string> = {
  '\r': '\\r',
  '\0': '\\0',
  '\v': '\\v',
  '\f': '\\f',
  '\b': '\\b',
  '\x07': '\\a'
};

// C0 controls but tab and newline, DEL and C1 controls; bidirectional controls; line and
// paragraph separators; characters that render as nothing (zero-width spaces and joiners,
// soft hyphen, fillers, tags, the byte-order mark, variation selectors except the emoji and
// text presentation selectors U+FE0E and U+FE0F); and lone surrogates.
const UNSAFE_CLASS = [
  '\\x00-\\x08\\x0b-\\x1f\\x7f-\\x9f\\xad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5',
  '\\u180b-\\u180f\\u200b-\\u200f\\u2028-\\u202e\\u2060-\\u206f\\u3164\\ud800-\\udfff',
  '\\ufe00-\\ufe0d\\ufeff\\uffa0\\ufff0-\\ufffb',
  '\\u{1bca0}-\\u{1bca3}\\u{1d173}-\\u{1d17a}\\u{e0000}-\\u{e0fff}'
].join('');
// The `u` flag reads astral characters whole and still matches lone surrogates.
const UNSAFE = new RegExp(`[${UNSAFE_CLASS}]+`, 'gu');
const UNSAFE_OR_NEWLINE = new RegExp(`[${UNSAFE_CLASS}\\n]+`, 'gu');
const ANY_UNSAFE = new RegExp(`[${UNSAFE_CLASS}]`, 'u');

/** One run of shown text: literal text, or the escapes of unsafe characters. */
export interface TextPart {
  text: string;
  escaped: boolean;
}

/** The visible form of one unsafe character: `\r`, `\x1b`, `\u202e`, `\U000e0041`. */
export function escapeChar(char: string): string {
  if (char === '\n') {
    return '\\n';
  }
  const named = NAMED[char];
  if (named) {
    return named;
  }
  const code = char.codePointAt(0) ?? 0;
  const hex = code.toString(16);
  if (code < 0x100) {
    return '\\x' + hex.padStart(2, '0');
  }
  return code < 0x10000 ? '\\u' + hex.padStart(4, '0') : '\\U' + hex.padStart(8, '0');
}

function escapeRun(run: string): string {
  return Array.from(run, escapeChar).join('');
}

/** `text` with every control character shown as an escape (tab kept; newline if asked). */
export function visible(text: string, keepNewlines = true): string {
  return text.replace(keepNewlines ? UNSAFE : UNSAFE_OR_NEWLINE, escapeRun);
}

/** `visible(text)` as runs of literal text and escapes, so a card can style the escapes. */
export function visibleParts(text: string, keepNewlines = true): TextPart[] {
  const parts: TextPart[] = [];
  let end = 0;
  for (const match of text.matchAll(keepNewlines ? UNSAFE : UNSAFE_OR_NEWLINE)) {
    const start = match.index ?? 0;
    if (start > end) {
      parts.push({ text: text.slice(end, start), escaped: false });
    }
    parts.push({ text: escapeRun(match[0]), escaped: true });
    end = start + match[0].length;
  }
  if (end < text.length) {
    parts.push({ text: text.slice(end), escaped: false });
  }
  return parts;
}

/** True when `visible` would change `text` (newlines aside). */
export function hasUnsafe(text: string): boolean {
  return ANY_UNSAFE.test(text);
}
