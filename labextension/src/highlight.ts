/**
 * A small line tokenizer for diff highlighting: keywords, builtins, strings,
 * comments and numbers. Pure: no DOM.
 *
 * Why not CodeMirror's parsers: a diff shows fragments of two files, a
 * line-based lexer with a little state (inside a block comment or a
 * multi-line string) colours fragments well, runs synchronously, and costs a
 * few kilobytes instead of loading a language per file type.
 * The colours themselves come from JupyterLab's `--jp-mirror-editor-*`
 * variables, so diffs look like the editor in every theme.
 */

export type TokenClass = 'keyword' | 'builtin' | 'string' | 'comment' | 'number';

export interface Token {
  text: string;
  cls: TokenClass | null;
}

export interface Language {
  name: string;
  keywords: ReadonlySet<string>;
  builtins: ReadonlySet<string>;
  lineComments: readonly string[];
  blockComment: readonly [string, string] | null;
  /** Quotes whose string ends on the same line. */
  quotes: readonly string[];
  /** Delimiters of strings that may span lines (`"""`, `` ` ``), longest first. */
  multilineQuotes: readonly string[];
  /** Identifiers that prefix a string literal (Python's r, b, f, rb...). */
  stringPrefix: RegExp | null;
}

/** Carried between lines: inside a block comment or a multi-line string. */
export type LexState = { close: string; cls: TokenClass } | null;

const words = (s: string): ReadonlySet<string> => new Set(s.split(/\s+/).filter(Boolean));

function language(name: string, spec: Partial<Language>): Language {
  return {
    name,
    keywords: new Set(),
    builtins: new Set(),
    lineComments: [],
    blockComment: null,
    quotes: ['"', "'"],
    multilineQuotes: [],
    stringPrefix: null,
    ...spec
  };
}

const C_COMMENTS = { lineComments: ['//'], blockComment: ['/*', '*/'] as const };

export const LANGUAGES: Record<string, Language> = {
  python: language('python', {
    keywords: words(`False None True and as assert async await break class continue def del
      elif else except finally for from global if import in is lambda match case nonlocal not
      or pass raise return try while with yield`),
    builtins: words(`self cls print len range str int float dict list set tuple bool bytes
      isinstance issubclass super object type open enumerate zip map filter sorted reversed
      min max sum any all abs repr hasattr getattr setattr iter next Exception ValueError
      TypeError KeyError IndexError RuntimeError NotImplementedError`),
    lineComments: ['#'],
    multilineQuotes: ['"""', "'''"],
    stringPrefix: /^(?:[rRbBuUfF]|[rR][bBfF]|[bBfF][rR])$/
  }),
  javascript: language('javascript', {
    keywords: words(`break case catch class const continue debugger default delete do else
      export extends finally for function if import in instanceof let new return super switch
      this throw try typeof var void while with yield async await of static get set true false
      null undefined interface type enum implements private public protected readonly abstract
      declare namespace as from keyof`),
    builtins: words(`console window document Array Object String Number Boolean Promise Map Set
      JSON Math Error any unknown never string number boolean`),
    ...C_COMMENTS,
    multilineQuotes: ['`']
  }),
  go: language('go', {
    keywords: words(`break case chan const continue default defer else fallthrough for func go
      goto if import interface map package range return select struct switch type var true false
      nil iota`),
    builtins: words(`append cap close copy delete len make new panic recover print println error
      string int int64 int32 uint byte rune bool float64 float32 any`),
    ...C_COMMENTS,
    multilineQuotes: ['`']
  }),
  rust: language('rust', {
    keywords: words(`as async await break const continue crate dyn else enum extern false fn for
      if impl in let loop match mod move mut pub ref return self Self static struct super trait
      true type unsafe use where while`),
    builtins: words(`Some None Ok Err Vec String Option Result Box str usize isize u8 u32 u64 i32
      i64 f64 bool`),
    ...C_COMMENTS,
    // A lone ' starts a lifetime as often as a char, so only " strings are coloured.
    quotes: ['"']
  }),
  clike: language('clike', {
    keywords: words(`auto break case catch char class const continue default delete do double
      else enum extern final finally float for goto if implements import int interface long
      namespace new null nullptr package private protected public return short signed sizeof
      static struct super switch template this throw throws try typedef union unsigned using
      virtual void volatile while true false bool boolean var val fun override func let`),
    ...C_COMMENTS
  }),
  shell: language('shell', {
    keywords: words(`if then else elif fi for while until do done case esac in function return
      local export readonly unset exit`),
    builtins: words('echo cd source test read printf set shift eval exec trap'),
    lineComments: ['#']
  }),
  json: language('json', { keywords: words('true false null') }),
  yaml: language('yaml', { keywords: words('true false null yes no on off'), lineComments: ['#'] }),
  toml: language('toml', {
    keywords: words('true false'),
    lineComments: ['#'],
    multilineQuotes: ['"""', "'''"]
  }),
  css: language('css', { blockComment: ['/*', '*/'] })
};

const EXTENSIONS: Record<string, string> = {
  py: 'python', pyi: 'python', ipy: 'python',
  js: 'javascript', jsx: 'javascript', mjs: 'javascript', cjs: 'javascript',
  ts: 'javascript', tsx: 'javascript', mts: 'javascript', cts: 'javascript',
  go: 'go', rs: 'rust',
  c: 'clike', h: 'clike', cc: 'clike', cpp: 'clike', hpp: 'clike', cs: 'clike',
  java: 'clike', kt: 'clike', kts: 'clike', swift: 'clike', scala: 'clike',
  sh: 'shell', bash: 'shell', zsh: 'shell',
  json: 'json', ipynb: 'json', yaml: 'yaml', yml: 'yaml', toml: 'toml', cfg: 'toml', ini: 'toml',
  css: 'css', scss: 'css'
};

/** The language of a file by its name; null for anything unknown (shown uncoloured). */
export function languageForPath(path: string): Language | null {
  const base = path.split('/').pop() ?? '';
  const dot = base.lastIndexOf('.');
  const ext = dot >= 0 ? base.slice(dot + 1).toLowerCase() : '';
  const name = EXTENSIONS[ext] ?? (base === 'Dockerfile' || base === 'Makefile' ? 'shell' : null);
  return name ? LANGUAGES[name] : null;
}

const NUMBER =
  /(?:0[xX][0-9a-fA-F_]+|0[bB][01_]+|0[oO][0-7_]+|(?:\d[\d_]*(?:\.[\d_]*)?|\.\d[\d_]*)(?:[eE][+-]?\d+)?)[a-zA-Z]*/y;
const IDENT = /[A-Za-z_$][\w$]*/y;

/** Tokens of one line; their texts concatenate to `line` exactly. */
export function tokenizeLine(
  line: string,
  lang: Language,
  state: LexState = null
): { tokens: Token[]; state: LexState } {
  const out: Token[] = [];
  const push = (text: string, cls: TokenClass | null) => {
    const last = out[out.length - 1];
    if (last && last.cls === cls) {
      last.text += text;
    } else if (text) {
      out.push({ text, cls });
    }
  };
  // Emit line[from..] up to and including `close`; if it is not on this line, stay open.
  const until = (from: number, close: string, cls: TokenClass): number => {
    const end = findClose(line, from, close, cls === 'string');
    if (end < 0) {
      push(line.slice(from), cls);
      state = { close, cls };
      return line.length;
    }
    push(line.slice(from, end), cls);
    return end;
  };

  let i = 0;
  if (state) {
    const open = state;
    state = null;
    i = until(0, open.close, open.cls);
  }
  while (i < line.length) {
    const lineComment = lang.lineComments.find(c => line.startsWith(c, i));
    if (lineComment) {
      push(line.slice(i), 'comment');
      break;
    }
    const block = lang.blockComment;
    if (block && line.startsWith(block[0], i)) {
      push(block[0], 'comment');
      i = until(i + block[0].length, block[1], 'comment');
      continue;
    }
    const quote = stringOpening(line, i, lang);
    if (quote) {
      push(line.slice(i, quote.start), 'string');
      if (lang.multilineQuotes.includes(quote.delimiter)) {
        i = until(quote.start, quote.delimiter, 'string');
      } else {
        // An unterminated one-line string runs to the end of the line only.
        const end = findClose(line, quote.start, quote.delimiter, true);
        const stop = end < 0 ? line.length : end;
        push(line.slice(quote.start, stop), 'string');
        i = stop;
      }
      continue;
    }
    NUMBER.lastIndex = i;
    const afterWord = i > 0 && /[\w$]/.test(line[i - 1]);
    const number = afterWord ? null : NUMBER.exec(line);
    if (number) {
      push(number[0], 'number');
      i += number[0].length;
      continue;
    }
    IDENT.lastIndex = i;
    const ident = IDENT.exec(line);
    if (ident) {
      const word = ident[0];
      push(word, lang.keywords.has(word) ? 'keyword' : lang.builtins.has(word) ? 'builtin' : null);
      i += word.length;
      continue;
    }
    push(line[i], null);
    i++;
  }
  return { tokens: out, state };
}

/**
 * Where a string literal opens at `i` (after any prefix such as Python's `rb`):
 * `start` is the index just past the opening delimiter.
 */
function stringOpening(
  line: string,
  i: number,
  lang: Language
): { delimiter: string; start: number } | null {
  let at = i;
  if (lang.stringPrefix) {
    IDENT.lastIndex = i;
    const ident = IDENT.exec(line);
    if (ident && lang.stringPrefix.test(ident[0])) {
      at = i + ident[0].length;
    }
  }
  for (const delimiter of [...lang.multilineQuotes, ...lang.quotes]) {
    if (line.startsWith(delimiter, at)) {
      return { delimiter, start: at + delimiter.length };
    }
  }
  return null;
}

/** Index just past `close` at or after `from`, skipping backslash escapes; -1 if absent. */
function findClose(line: string, from: number, close: string, escapes: boolean): number {
  for (let j = from; j < line.length; j++) {
    if (escapes && line[j] === '\\') {
      j++;
      continue;
    }
    if (line.startsWith(close, j)) {
      return j + close.length;
    }
  }
  return -1;
}

/** Tokens of consecutive lines of one file, carrying multi-line state. */
export function tokenizeLines(lines: readonly string[], lang: Language): Token[][] {
  let state: LexState = null;
  return lines.map(line => {
    const result = tokenizeLine(line, lang, state);
    state = result.state;
    return result.tokens;
  });
}

/**
 * Tokens of one hunk's rows. The old file (context and removed lines) and
 * the new file (context and added lines) are lexed as two streams, so a
 * string opened in a context line continues into the added lines below it.
 *
 * A hunk can start inside a docstring; its closing quotes would then be read
 * as opening ones and colour all the code below as a string. So the hunk is
 * also lexed as if it started inside each multi-line string, and the reading
 * that colours the least text as string or comment is kept (ties: the plain
 * reading).
 */
export function tokenizeHunk(
  rows: readonly { kind: string; text: string }[],
  lang: Language
): Token[][] {
  let best = tokenizeStreams(rows, lang, null);
  let bestScore = quotedLength(best);
  for (const close of lang.multilineQuotes) {
    const tokens = tokenizeStreams(rows, lang, { close, cls: 'string' });
    const score = quotedLength(tokens);
    if (score < bestScore) {
      best = tokens;
      bestScore = score;
    }
  }
  return best;
}

function tokenizeStreams(
  rows: readonly { kind: string; text: string }[],
  lang: Language,
  start: LexState
): Token[][] {
  let oldState: LexState = start;
  let newState: LexState = start;
  return rows.map(row => {
    if (row.kind === 'add') {
      const r = tokenizeLine(row.text, lang, newState);
      newState = r.state;
      return r.tokens;
    }
    if (row.kind === 'del') {
      const r = tokenizeLine(row.text, lang, oldState);
      oldState = r.state;
      return r.tokens;
    }
    if (row.kind === 'context') {
      const r = tokenizeLine(row.text, lang, newState);
      newState = r.state;
      oldState = tokenizeLine(row.text, lang, oldState).state;
      return r.tokens;
    }
    return [{ text: row.text, cls: null }];
  });
}

function quotedLength(lines: Token[][]): number {
  let n = 0;
  for (const line of lines) {
    for (const t of line) {
      if (t.cls === 'string' || t.cls === 'comment') {
        n += t.text.length;
      }
    }
  }
  return n;
}
