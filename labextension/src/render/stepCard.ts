/**
 * The step card: header, the model's text, arguments, symbol resolutions,
 * diff, validation, observation, its rich outputs (richOutputs.ts) and guard
 * firings (docs/mime-schema.md).
 */

import { foldText } from '../collapse';
import { decisionText } from '../format';
import { languageForPath, tokenizeLines } from '../highlight';
import {
  GuardFiring,
  Observation,
  parseStep,
  Resolution,
  Step,
  Validation
} from '../schema';
import { HunkPicker, renderDiff, renderToken } from './diffView';
import { Child, h, oneLine, section } from './dom';
import { rememberDetails } from './memory';
import { guarded } from './problem';
import { readOutputs, richOutputsSection } from './richOutputs';

/** Strings longer than this are folded in the arguments. */
const ARG_LINES = 6;
const ARG_CHARS = 400;
/** Output longer than this starts closed. */
const OUTPUT_LINES = 12;

/** The card for a step payload, or a visible message when it cannot be rendered. */
export function stepCard(data: unknown): HTMLElement {
  return guarded('step', data, parseStep, renderStep);
}

/** `picker`: checkboxes on the diff's hunks, for a pending write in the live panel. */
export function renderStep(step: Step, picker: HunkPicker | null = null): HTMLElement {
  // Step numbers repeat across branches: the branch keeps two steps' folds apart.
  const key = step.branch ? `${step.session}/${step.branch}/${step.step}` : `${step.session}/${step.step}`;
  return h(
    'div',
    {
      class: `grinta-card grinta-step${step.rewound ? ' grinta-rewound' : ''}`,
      'data-status': step.status,
      'data-kind': step.kind,
      'data-tool': step.tool,
      'data-branch': step.branch,
      'data-rewound': step.rewound
    },
    header(step),
    step.stale !== null &&
      h(
        'div',
        { class: 'grinta-stale', role: 'note' },
        h('b', null, 'Stale: '),
        'staged again after the session resumed, and the files had changed since. ',
        step.stale
      ),
    step.stale === null &&
      step.restaged &&
      h(
        'div',
        { class: 'grinta-muted grinta-restaged' },
        'Staged again when the session resumed: the files had not changed.'
      ),
    step.text && h('div', { class: 'grinta-text' }, step.text),
    step.summary && h('div', { class: 'grinta-summary' }, step.summary),
    argumentsSection(step, `${key}/arguments`),
    codeSection(step),
    step.resolutions.length > 0 && resolutionsSection(step.resolutions),
    step.diff &&
      section(
        'diff-section',
        'Diff',
        renderDiff(step.diff, step.diff_truncated, step.files, `${key}/diff`, picker)
      ),
    validationSection(step.validation),
    step.reason &&
      section(
        'reason',
        step.decision === 'approve_hunks' ? 'Why the other hunks were declined' : 'Veto reason',
        h('div', null, step.reason)
      ),
    step.observation && observationSection(observed(step), `${key}/observation`),
    step.observation &&
      richOutputsSection(readOutputs(step.observation.outputs)),
    step.guards.length > 0 && guardsSection(step.guards)
  );
}

function header(step: Step): HTMLElement {
  const decision = decisionText(step);
  return h(
    'div',
    { class: 'grinta-card-header' },
    h('span', { class: 'grinta-step-number' }, `Step ${step.step}`),
    step.branch > 0 && h('span', { class: 'grinta-kind grinta-branch', title: 'branch' }, `branch ${step.branch}`),
    h('span', { class: 'grinta-tool' }, oneLine(step.tool)),
    h('span', { class: 'grinta-kind' }, step.kind),
    h('span', { class: `grinta-badge grinta-status-${step.status}` }, step.status),
    step.rewound &&
      h('span', { class: 'grinta-badge grinta-status-rewound', title: 'a rewind undid this step' }, 'rewound'),
    decision && h('span', { class: 'grinta-decision' }, decision),
    h('span', { class: 'grinta-session-id', title: 'session' }, oneLine(step.session))
  );
}

/** The Python an `execute` step runs in the kernel: shown whole, never folded (it is what the
 * reviewer approves), highlighted as Python. */
function executedCode(step: Step): string | null {
  const code = step.tool === 'execute' ? step.arguments?.code : undefined;
  return typeof code === 'string' ? code : null;
}

function codeSection(step: Step): HTMLElement | null {
  const code = executedCode(step);
  if (code === null) {
    return null;
  }
  const shown = highlighted('code.py', code, 'grinta-executed-code');
  return section('code', 'Code (runs in the kernel once approved)', shown);
}

function argumentsSection(step: Step, key: string): HTMLElement | null {
  if (step.arguments) {
    // An execute's code has its own section; the other arguments (timeout) stay here.
    const shown =
      executedCode(step) === null
        ? step.arguments
        : Object.fromEntries(Object.entries(step.arguments).filter(([name]) => name !== 'code'));
    const entries = Object.entries(shown);
    return entries.length ? section('arguments', 'Arguments', valueView(shown, key)) : null;
  }
  if (step.raw_arguments !== null) {
    return section(
      'arguments',
      'Arguments (not a JSON object)',
      foldable(step.raw_arguments, key)
    );
  }
  return null;
}

/** Any JSON value: strings as code (long ones folded), lists and objects nested. */
function valueView(value: unknown, key: string): Child {
  if (typeof value === 'string') {
    return foldable(value, key);
  }
  if (Array.isArray(value)) {
    return h(
      'ol',
      { class: 'grinta-list', start: 1 },
      value.map((v, i) => h('li', null, valueView(v, `${key}/${i}`)))
    );
  }
  if (typeof value === 'object' && value !== null) {
    return h(
      'dl',
      { class: 'grinta-fields' },
      Object.entries(value).flatMap(([k, v]) => [
        h('dt', null, oneLine(k)),
        h('dd', null, valueView(v, `${key}/${k}`))
      ])
    );
  }
  return h('code', { class: 'grinta-code' }, JSON.stringify(value));
}

/** Monospace text; when long, a closed <details> whose summary previews the start. */
function foldable(text: string, key: string): HTMLElement {
  const fold = foldText(text, ARG_LINES, ARG_CHARS);
  if (!fold.folded) {
    return h('pre', { class: 'grinta-pre' }, text);
  }
  const details = h(
    'details',
    { class: 'grinta-fold' },
    h(
      'summary',
      null,
      h('code', { class: 'grinta-fold-preview' }, fold.preview),
      h('span', { class: 'grinta-muted' }, ` ${fold.lines} lines, ${text.length} characters`)
    ),
    h('pre', { class: 'grinta-pre' }, text)
  );
  return rememberDetails(details, key);
}

function resolutionsSection(resolutions: Resolution[]): HTMLElement {
  return section(
    'resolutions',
    'Resolved',
    h(
      'ul',
      { class: 'grinta-list' },
      resolutions.map(r =>
        h(
          'li',
          { class: 'grinta-resolution' },
          h('code', { class: 'grinta-code' }, oneLine(r.target)),
          ' → ',
          r.chosen === null
            ? h('span', { class: 'grinta-unresolved' }, 'nothing chosen')
            : h('code', { class: 'grinta-code' }, oneLine(r.chosen)),
          r.reason && h('span', { class: 'grinta-muted' }, ` (${r.reason})`),
          r.candidates.length > 0 &&
            h(
              'details',
              { class: 'grinta-fold' },
              h('summary', null, `${r.candidates.length} candidates`),
              h(
                'ul',
                { class: 'grinta-list' },
                r.candidates.map(c =>
                  h('li', null, h('code', { class: 'grinta-code' }, oneLine(c)))
                )
              )
            )
        )
      )
    )
  );
}

function validationSection(v: Validation): HTMLElement {
  if (v.ok) {
    return h('div', { class: 'grinta-validation grinta-valid' }, '✓ validation passed');
  }
  return h(
    'section',
    { class: 'grinta-section grinta-validation grinta-invalid' },
    h(
      'h4',
      null,
      'Refused: ',
      h('code', { class: 'grinta-error-code' }, oneLine(v.code ?? 'validation failed'))
    ),
    v.message && h('div', { class: 'grinta-error-message' }, v.message),
    v.candidates.length > 0 &&
      h(
        'ol',
        { class: 'grinta-candidates' },
        v.candidates.map(c =>
          h(
            'li',
            { class: 'grinta-candidate' },
            h(
              'div',
              { class: 'grinta-candidate-head' },
              h(
                'code',
                { class: 'grinta-code' },
                oneLine(c.line === null ? c.path : `${c.path}:${c.line}`)
              ),
              c.kind && h('span', { class: 'grinta-kind' }, oneLine(c.kind)),
              c.name && h('code', { class: 'grinta-code' }, oneLine(c.name)),
              c.note && h('span', { class: 'grinta-muted' }, oneLine(c.note))
            ),
            c.snippet && snippet(c.path, c.snippet)
          )
        )
      )
  );
}

/** A candidate's lines of context, highlighted like the diff. */
function snippet(path: string, text: string): HTMLElement {
  return highlighted(path, text, 'grinta-snippet');
}

/** ``text`` highlighted as the language of ``path`` (plain when there is none). */
function highlighted(path: string, text: string, cls: string): HTMLElement {
  const lang = languageForPath(path);
  const lines = text.split('\n');
  const tokens = lang ? tokenizeLines(lines, lang) : lines.map(line => [{ text: line, cls: null }]);
  return h(
    'pre',
    { class: `grinta-pre ${cls}` },
    tokens.flatMap((line, i) => [i > 0 ? '\n' : null, ...line.flatMap(t => renderToken(t))])
  );
}

/**
 * The observation without the diff the card already shows: a committed
 * write's report to the model repeats a short diff after its first line.
 */
function observed(step: Step): Observation {
  const o = step.observation as Observation;
  const diff = step.diff.replace(/\n$/, '');
  if (step.kind !== 'write' || !diff || !o.output.includes(diff)) {
    return o;
  }
  return { ...o, output: o.output.replace(diff, '(the diff above)') };
}

function observationSection(o: Observation, key: string): HTMLElement {
  const lines = o.output ? o.output.replace(/\n$/, '').split('\n').length : 0;
  const facts = [
    o.ok ? 'ok' : 'failed',
    o.exit_code === null ? null : `exit ${o.exit_code}`,
    `${lines} line${lines === 1 ? '' : 's'}`
  ].filter(Boolean);
  const details = h(
    'details',
    {
      class: `grinta-section grinta-observation ${o.ok ? '' : 'grinta-failed'}`,
      open: lines <= OUTPUT_LINES
    },
    h(
      'summary',
      null,
      h('span', { class: 'grinta-summary-title' }, 'Output'),
      ` · ${facts.join(' · ')}`
    ),
    h('pre', { class: 'grinta-pre grinta-observation-output' }, o.output)
  );
  return rememberDetails(details, key);
}

function guardsSection(guards: GuardFiring[]): HTMLElement {
  return section(
    'guards',
    'Guards',
    h(
      'ul',
      { class: 'grinta-list' },
      guards.map(g =>
        h(
          'li',
          { class: 'grinta-guard' },
          h('code', { class: 'grinta-code' }, oneLine(g.guard)),
          g.action && h('span', { class: 'grinta-badge grinta-guard-action' }, oneLine(g.action)),
          g.detail && h('span', null, ' ', g.detail)
        )
      )
    )
  );
}
