/**
 * The step and session payloads (docs/mime-schema.md, schema version 1) and
 * their validation. Pure: no DOM, no JupyterLab.
 *
 * Validation never throws: it returns the typed payload or one sentence
 * saying what is wrong, which the renderer shows instead of a blank output.
 */

export const SCHEMA_VERSION = 1;
export const STEP_MIME = 'application/vnd.grinta.step+json';
export const SESSION_MIME = 'application/vnd.grinta.session+json';

export const KINDS = ['read', 'write', 'command', 'finish'] as const;
export const STATUSES = ['pending', 'committed', 'vetoed', 'refused', 'done'] as const;
export const DECISIONS = ['approve', 'approve_hunks', 'edit', 'veto', 'auto'] as const;

export type Kind = (typeof KINDS)[number];
export type Status = (typeof STATUSES)[number];
export type Decision = (typeof DECISIONS)[number];

export interface Resolution {
  target: string;
  chosen: string | null;
  reason: string;
  candidates: string[];
}

export interface FileStat {
  path: string;
  added: number;
  removed: number;
}

export interface ValidationCandidate {
  path: string;
  line: number | null;
  snippet: string;
  note: string;
  kind: string;
  name: string;
}

export interface Validation {
  ok: boolean;
  code: string | null;
  message: string | null;
  candidates: ValidationCandidate[];
}

export interface Observation {
  ok: boolean;
  output: string;
  exit_code: number | null;
  /** Rich outputs (MIME bundles) of the kernel's execute; validated when drawn (richOutputs.ts). */
  outputs: unknown[];
}

export interface GuardFiring {
  guard: string;
  detail: string;
  action: string;
}

export interface Step {
  version: number;
  session: string;
  step: number;
  tool: string;
  kind: Kind;
  status: Status;
  text: string;
  arguments: Record<string, unknown> | null;
  raw_arguments: string | null;
  summary: string;
  resolutions: Resolution[];
  diff: string;
  diff_truncated: boolean;
  files: FileStat[];
  validation: Validation;
  decision: Decision | null;
  reason: string | null;
  edits: number;
  observation: Observation | null;
  guards: GuardFiring[];
  /** The branch the step was made on (0 until the session's first rewind). */
  branch: number;
  /** A rewind took this step off the session's current branch (its commits were undone). */
  rewound: boolean;
  /** Staged again when the session was resumed after a restart or a crash. */
  restaged: boolean;
  /** When restaged against files that changed since: what changed. */
  stale: string | null;
}

export const MARK_KINDS = ['task', 'said', 'rewind', 'condensed', 'resumed', 'ended'] as const;
export type MarkKind = (typeof MARK_KINDS)[number];

/**
 * Something that happened between steps of a session (grinta_jupyter/jupyter/timeline.py):
 * a task began, the user said something, a rewind, a condensation, a resume, a task's end.
 * `kind` may be one this extension does not know yet: it is drawn as a plain mark.
 */
export interface Mark {
  kind: string;
  title: string;
  text: string;
  branch: number;
  /** How many of the session's `steps` come before it. */
  at: number;
}

export interface RulesFile {
  path: string;
  chars: number;
  truncated: boolean;
}

export interface Session {
  version: number;
  session: string;
  task: string;
  model: string;
  toolset: string;
  root: string;
  end_reason: string;
  summary: string;
  /** `CODE: message` of the error that ended the session; empty when none. */
  error: string;
  metrics: Record<string, unknown>;
  log: string | null;
  /**
   * The session's step payloads, when one output shows the whole session so
   * far (grinta_jupyter.jupyter.mime.trace_bundle). Each is validated when it
   * is rendered, so one bad step does not hide the others.
   */
  steps: unknown[] | null;
  /** The marks between the steps; each is validated when it is rendered. */
  marks: unknown[];
  /** Every task the session was given, in order (the first is `task`). */
  tasks: string[];
  /** The rules files (AGENTS.md and the like) the session read into its system prompt. */
  rules: RulesFile[];
  /** The session's current branch. */
  branch: number;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; message: string };

/** Validate a step payload; on failure the message reads "grinta: cannot render this step (...)". */
export function parseStep(data: unknown): Parsed<Step> {
  return parse(data, 'step', r => ({
    version: SCHEMA_VERSION,
    session: r.string('session'),
    step: r.int('step'),
    tool: r.string('tool'),
    kind: r.oneOf('kind', KINDS),
    status: r.oneOf('status', STATUSES),
    text: r.text('text'),
    arguments: r.objectOrNull('arguments'),
    raw_arguments: r.stringOrNull('raw_arguments'),
    summary: r.text('summary'),
    resolutions: r.list('resolutions', e => ({
      target: e.string('target'),
      chosen: e.stringOrNull('chosen'),
      reason: e.text('reason'),
      candidates: e.strings('candidates')
    })),
    diff: r.text('diff'),
    diff_truncated: r.bool('diff_truncated', false),
    files: r.list('files', e => ({
      path: e.string('path'),
      added: e.int('added', 0),
      removed: e.int('removed', 0)
    })),
    validation: r.object('validation', e => ({
      ok: e.bool('ok'),
      code: e.stringOrNull('code'),
      message: e.stringOrNull('message'),
      candidates: e.list('candidates', c => ({
        path: c.text('path'),
        line: c.intOrNull('line'),
        snippet: c.text('snippet'),
        note: c.text('note'),
        kind: c.text('kind'),
        name: c.text('name')
      }))
    })) ?? { ok: true, code: null, message: null, candidates: [] },
    decision: r.oneOfOrNull('decision', DECISIONS),
    reason: r.stringOrNull('reason'),
    edits: r.int('edits', 0),
    observation: r.object('observation', e => ({
      ok: e.bool('ok'),
      output: e.text('output'),
      exit_code: e.intOrNull('exit_code'),
      outputs: e.listOrNull('outputs') ?? []
    })),
    guards: r.list('guards', e => ({
      guard: e.string('guard'),
      detail: e.text('detail'),
      action: e.text('action')
    })),
    branch: r.int('branch', 0),
    rewound: r.bool('rewound', false),
    restaged: r.bool('restaged', false),
    stale: r.stringOrNull('stale')
  }));
}

/** Validate a mark; on failure the message reads "grinta: cannot render this mark (...)". */
export function parseMark(data: unknown): Parsed<Mark> {
  const checked = isObject(data) && !('version' in data) ? { ...data, version: SCHEMA_VERSION } : data;
  return parse(checked, 'mark', r => ({
    kind: r.string('kind'),
    title: r.text('title'),
    text: r.text('text'),
    branch: r.int('branch', 0),
    at: r.int('at', 0)
  }));
}

/** Validate a session payload; on failure the message reads "grinta: cannot render this session (...)". */
export function parseSession(data: unknown): Parsed<Session> {
  return parse(data, 'session', r => ({
    version: SCHEMA_VERSION,
    session: r.string('session'),
    task: r.text('task'),
    model: r.text('model'),
    toolset: r.text('toolset'),
    root: r.text('root'),
    // Empty while the session runs (a live trace).
    end_reason: r.text('end_reason'),
    summary: r.text('summary'),
    error: r.text('error'),
    metrics: r.objectOrNull('metrics') ?? {},
    log: r.stringOrNull('log'),
    steps: r.listOrNull('steps'),
    marks: r.listOrNull('marks') ?? [],
    tasks: r.strings('tasks'),
    rules: r.list('rules', e => ({
      path: e.string('path'),
      chars: e.int('chars', 0),
      truncated: e.bool('truncated', false)
    })),
    branch: r.int('branch', 0)
  }));
}

function parse<T>(data: unknown, what: string, read: (r: Reader) => T): Parsed<T> {
  const fail = (reason: string): Parsed<T> => ({
    ok: false,
    message: `grinta: cannot render this ${what} (${reason})`
  });
  if (!isObject(data)) {
    return fail(`expected a JSON object, got ${describe(data)}`);
  }
  const version = data.version;
  if (typeof version !== 'number' || !Number.isInteger(version)) {
    return fail(`no integer schema version; this extension knows ${SCHEMA_VERSION}`);
  }
  if (version !== SCHEMA_VERSION) {
    return fail(`schema version ${version}; this extension knows ${SCHEMA_VERSION}`);
  }
  const reader = new Reader(data, '');
  const value = read(reader);
  const errors = reader.errors;
  if (errors.length) {
    const more = errors.length > 1 ? `; and ${errors.length - 1} more` : '';
    return fail(errors[0] + more);
  }
  return { ok: true, value };
}

/**
 * Reads typed fields from one JSON object. A missing field takes its default
 * (a field without one is required); a field of the wrong type is recorded in
 * `errors` and a harmless placeholder is returned so reading can go on.
 */
class Reader {
  constructor(
    private readonly obj: Record<string, unknown>,
    private readonly where: string,
    readonly errors: string[] = []
  ) {}

  string(key: string, fallback?: string): string {
    return this.field(key, 'a string', v => typeof v === 'string', fallback, '') as string;
  }

  stringOrNull(key: string): string | null {
    return this.nullable(key, () => this.string(key));
  }

  /** Optional text: a string, with null or absent read as empty. */
  text(key: string): string {
    return this.stringOrNull(key) ?? '';
  }

  int(key: string, fallback?: number): number {
    return this.field(key, 'an integer', v => Number.isInteger(v), fallback, 0) as number;
  }

  intOrNull(key: string): number | null {
    return this.nullable(key, () => this.int(key));
  }

  bool(key: string, fallback?: boolean): boolean {
    return this.field(key, 'true or false', v => typeof v === 'boolean', fallback, false) as boolean;
  }

  oneOf<T extends string>(key: string, values: readonly T[]): T {
    const test = (v: unknown) => values.includes(v as T);
    return this.field(key, `one of ${values.join(', ')}`, test, undefined, values[0]) as T;
  }

  oneOfOrNull<T extends string>(key: string, values: readonly T[]): T | null {
    return this.nullable(key, () => this.oneOf(key, values));
  }

  objectOrNull(key: string): Record<string, unknown> | null {
    return this.nullable(key, () => this.field(key, 'an object', isObject, undefined, {})) as Record<
      string,
      unknown
    > | null;
  }

  /** A list of anything, left unread; null when null or absent. */
  listOrNull(key: string): unknown[] | null {
    return this.nullable(key, () => this.field(key, 'a list', Array.isArray, undefined, [])) as
      | unknown[]
      | null;
  }

  /** A nested object read with `read`; null when the field is null or absent. */
  object<T>(key: string, read: (r: Reader) => T): T | null {
    const v = this.nullable(key, () => this.field(key, 'an object', isObject, undefined, null));
    return isObject(v) ? read(new Reader(v, this.path(key), this.errors)) : null;
  }

  /** A list of objects, each read with `read`; empty when null or absent. */
  list<T>(key: string, read: (r: Reader) => T): T[] {
    return this.items(key).flatMap(([item, where]) => {
      if (isObject(item)) {
        return [read(new Reader(item, where, this.errors))];
      }
      this.errors.push(`field \`${where}\` should be an object; got ${describe(item)}`);
      return [];
    });
  }

  /** A list of strings; empty when null or absent. */
  strings(key: string): string[] {
    return this.items(key).map(([item, where]) => {
      if (typeof item === 'string') {
        return item;
      }
      this.errors.push(`field \`${where}\` should be a string; got ${describe(item)}`);
      return '';
    });
  }

  private items(key: string): [unknown, string][] {
    const v = this.nullable(key, () => this.field(key, 'a list', Array.isArray, undefined, []));
    return Array.isArray(v) ? v.map((item, i) => [item, `${this.path(key)}[${i}]`]) : [];
  }

  private nullable<T>(key: string, read: () => T): T | null {
    const v = this.obj[key];
    return v === null || v === undefined ? null : read();
  }

  private field(
    key: string,
    expected: string,
    test: (v: unknown) => boolean,
    fallback: unknown,
    placeholder: unknown
  ): unknown {
    const v = this.obj[key];
    if (v === undefined) {
      if (fallback === undefined) {
        this.errors.push(`field \`${this.path(key)}\` is missing`);
        return placeholder;
      }
      return fallback;
    }
    if (!test(v)) {
      this.errors.push(`field \`${this.path(key)}\` should be ${expected}; got ${describe(v)}`);
      return placeholder;
    }
    return v;
  }

  private path(key: string): string {
    return this.where ? `${this.where}.${key}` : key;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function describe(v: unknown): string {
  if (v === null) {
    return 'null';
  }
  if (Array.isArray(v)) {
    return 'a list';
  }
  if (typeof v === 'string') {
    return JSON.stringify(v.length > 40 ? v.slice(0, 40) + '…' : v);
  }
  if (typeof v === 'object') {
    return 'an object';
  }
  return String(v);
}
