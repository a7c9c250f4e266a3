"use strict";(self.rspackChunkgrinta_jupyter_labextension=self.rspackChunkgrinta_jupyter_labextension||[]).push([[232],{475(t,r,o){var a=o(601),n=o.n(a),e=o(314),i=(o.n(e))()(n());i.push([t.id,`/*
 * grinta cards. Every colour comes from JupyterLab's theme variables, or is a
 * translucent tint over them, so light, dark and custom themes all work; each
 * variable has a fallback (JupyterLab Light's value) for front ends without
 * them. Text stays at WCAG AA contrast (4.5:1) in JupyterLab Light, Dark and
 * Dark High Contrast: tests/browser/test_live_cards.py measures it.
 * Rules start with .grinta-output so they outrank the output area's own
 * element rules (.jp-OutputArea-output pre, dl, dt, dd).
 */

.grinta-output {
  --grinta-add-bg: rgba(46, 160, 67, 0.16);
  --grinta-del-bg: rgba(248, 81, 73, 0.16);
  --grinta-hunk-bg: rgba(56, 139, 253, 0.1);
  --grinta-radius: 4px;
  /* Text in a status colour or a grey, mixed with the text colour: unmixed, the light theme's
     greys (content-font-color3), greens and oranges and the dark theme's red fall under
     4.5:1 (test/attacks3.test.ts computes every text colour of this file in each theme). */
  --grinta-quiet-text: color-mix(in srgb, var(--jp-content-font-color2, rgba(0, 0, 0, 0.54)) 70%, var(--jp-content-font-color1, rgba(0, 0, 0, 0.87)));
  --grinta-error-text: color-mix(in srgb, var(--jp-error-color1, #d32f2f) 60%, var(--jp-content-font-color1, rgba(0, 0, 0, 0.87)));
  --grinta-success-text: color-mix(in srgb, var(--jp-success-color1, #388e3c) 55%, var(--jp-content-font-color1, rgba(0, 0, 0, 0.87)));
  --grinta-warn-text: color-mix(in srgb, var(--jp-warn-color0, #e65100) 55%, var(--jp-content-font-color1, rgba(0, 0, 0, 0.87)));
  --grinta-add-text: color-mix(in srgb, var(--jp-success-color1, #388e3c) 55%, var(--jp-content-font-color1, rgba(0, 0, 0, 0.87)));
  --grinta-del-text: color-mix(in srgb, var(--jp-error-color1, #d32f2f) 55%, var(--jp-content-font-color1, rgba(0, 0, 0, 0.87)));

  color: var(--jp-content-font-color1, rgba(0, 0, 0, 0.87));
  font-family: var(--jp-ui-font-family, system-ui, sans-serif);
  font-size: var(--jp-content-font-size1, 14px);
  line-height: var(--jp-content-line-height, 1.6);
  padding: 2px 0;
}

.grinta-output .grinta-card {
  background: var(--jp-layout-color1, #fff);
  border: var(--jp-border-width, 1px) solid var(--jp-border-color2, #e0e0e0);
  border-left: 3px solid var(--jp-border-color1, #bdbdbd);
  border-radius: var(--grinta-radius);
  padding: 6px 10px 8px;
  max-width: 100%;
  overflow-x: auto;
}

.grinta-output .grinta-step[data-status='pending'] { border-left-color: var(--jp-warn-color1, #f57c00); }
.grinta-output .grinta-step[data-status='committed'] { border-left-color: var(--jp-success-color1, #388e3c); }
.grinta-output .grinta-step[data-status='vetoed'],
.grinta-output .grinta-step[data-status='refused'],
.grinta-output .grinta-problem { border-left-color: var(--jp-error-color1, #d32f2f); }
.grinta-output .grinta-step[data-status='done'],
.grinta-output .grinta-session { border-left-color: var(--jp-brand-color1, #1976d2); }

.grinta-output .grinta-card-header {
  align-items: baseline;
  display: flex;
  flex-wrap: wrap;
  gap: 4px 8px;
  margin-bottom: 4px;
}

.grinta-output .grinta-step-number { font-weight: 600; }

.grinta-output .grinta-tool {
  font-family: var(--jp-code-font-family, Menlo, Consolas, 'DejaVu Sans Mono', monospace);
  font-weight: 600;
}

.grinta-output .grinta-kind {
  border: var(--jp-border-width, 1px) solid var(--jp-border-color1, #bdbdbd);
  border-radius: 8px;
  color: var(--grinta-quiet-text);
  font-size: var(--jp-ui-font-size0, 11px);
  padding: 0 6px;
}

.grinta-output .grinta-badge {
  background: rgba(128, 128, 128, 0.12);
  /* The status colour is mixed with the text colour, so the word stays readable in any theme. */
  --grinta-status: var(--jp-content-font-color1, rgba(0, 0, 0, 0.87));
  color: color-mix(in srgb, var(--grinta-status) 55%, var(--jp-content-font-color1, rgba(0, 0, 0, 0.87)));
  border: 1px solid currentColor;
  border-radius: 8px;
  font-size: var(--jp-ui-font-size0, 11px);
  font-weight: 600;
  padding: 0 6px;
  text-transform: uppercase;
}

.grinta-output .grinta-status-pending { --grinta-status: var(--jp-warn-color1, #f57c00); }
.grinta-output .grinta-status-committed,
.grinta-output .grinta-end-finished { --grinta-status: var(--jp-success-color1, #388e3c); }
.grinta-output .grinta-status-vetoed,
.grinta-output .grinta-status-refused { --grinta-status: var(--jp-error-color1, #d32f2f); }
.grinta-output .grinta-status-done,
.grinta-output .grinta-guard-action,
.grinta-output .grinta-end-running { --grinta-status: var(--jp-brand-color1, #1976d2); }

.grinta-output .grinta-decision { color: var(--jp-content-font-color2, rgba(0, 0, 0, 0.54)); }

.grinta-output .grinta-session-id,
.grinta-output .grinta-muted {
  color: var(--grinta-quiet-text);
  font-size: var(--jp-ui-font-size0, 11px);
}

.grinta-output .grinta-card-header .grinta-session-id { margin-left: auto; }

.grinta-output .grinta-text,
.grinta-output .grinta-summary {
  margin: 4px 0;
  white-space: pre-wrap;
}

.grinta-output .grinta-summary { color: var(--jp-content-font-color2, rgba(0, 0, 0, 0.54)); }

.grinta-output .grinta-section { margin-top: 8px; }

.grinta-output .grinta-section > h4,
.grinta-output .grinta-observation > summary {
  color: var(--jp-content-font-color2, rgba(0, 0, 0, 0.54));
  font-size: var(--jp-ui-font-size1, 13px);
  font-weight: 600;
  margin: 0 0 4px;
}

.grinta-output .grinta-pre,
.grinta-output .grinta-code,
.grinta-output .grinta-diff-table {
  font-family: var(--jp-code-font-family, Menlo, Consolas, 'DejaVu Sans Mono', monospace);
  font-size: var(--jp-code-font-size, 13px);
}

.grinta-output .grinta-pre {
  background: var(--jp-layout-color2, #eee);
  border-radius: var(--grinta-radius);
  margin: 2px 0;
  max-height: 32em;
  overflow: auto;
  padding: 4px 6px;
  white-space: pre-wrap;
  word-break: break-word;
}

.grinta-output .grinta-code {
  background: var(--jp-layout-color2, #eee);
  border-radius: 3px;
  padding: 0 3px;
}

.grinta-output .grinta-fields {
  display: grid;
  overflow: visible;
  width: auto;
  gap: 2px 10px;
  grid-template-columns: max-content minmax(0, 1fr);
  margin: 0;
}

.grinta-output .grinta-fields > dt,
.grinta-output .grinta-fields > dd {
  float: none;
  font-weight: normal;
  margin: 0;
  min-width: 0;
  padding: 0;
  width: auto;
}

.grinta-output .grinta-fields > dt {
  color: var(--jp-content-font-color2, rgba(0, 0, 0, 0.54));
  font-family: var(--jp-code-font-family, Menlo, Consolas, 'DejaVu Sans Mono', monospace);
}
.grinta-output .grinta-fields > dd > .grinta-pre { margin: 0; }

.grinta-output .grinta-list { margin: 2px 0; padding-left: 20px; }

.grinta-output .grinta-fold > summary {
  color: var(--jp-content-font-color2, rgba(0, 0, 0, 0.54));
  cursor: pointer;
  user-select: none;
}

.grinta-output .grinta-fold-preview {
  font-family: var(--jp-code-font-family, Menlo, Consolas, 'DejaVu Sans Mono', monospace);
  font-size: var(--jp-code-font-size, 13px);
  white-space: pre-wrap;
}

.grinta-output .grinta-unresolved { color: var(--grinta-error-text); }

/* Diff */

.grinta-output .grinta-diff-block {
  border: var(--jp-border-width, 1px) solid var(--jp-border-color2, #e0e0e0);
  border-radius: var(--grinta-radius);
  margin: 4px 0;
  overflow-x: auto;
}

.grinta-output .grinta-diff-file {
  align-items: baseline;
  background: var(--jp-layout-color2, #eee);
  border-bottom: var(--jp-border-width, 1px) solid var(--jp-border-color2, #e0e0e0);
  display: flex;
  gap: 8px;
  padding: 2px 8px;
}

.grinta-output .grinta-diff-path { font-family: var(--jp-code-font-family, Menlo, Consolas, 'DejaVu Sans Mono', monospace); font-weight: 600; }
.grinta-output .grinta-diff-status { color: var(--grinta-quiet-text); font-style: italic; }
.grinta-output .grinta-diff-added,
.grinta-output .grinta-diff-removed {
  color: color-mix(in srgb, var(--grinta-count) 50%, var(--jp-content-font-color1, rgba(0, 0, 0, 0.87)));
  font-family: var(--jp-code-font-family, Menlo, Consolas, 'DejaVu Sans Mono', monospace);
}
.grinta-output .grinta-diff-added { --grinta-count: var(--jp-success-color1, #388e3c); }
.grinta-output .grinta-diff-removed { --grinta-count: var(--jp-error-color1, #d32f2f); }

.grinta-output .grinta-diff-table {
  border-collapse: collapse;
  line-height: 1.45;
  width: 100%;
}

.grinta-output .grinta-diff-table td {
  border: none;
  padding: 0 6px;
  vertical-align: top;
}

.grinta-output .grinta-diff-num {
  color: color-mix(
    in srgb,
    var(--jp-content-font-color2, rgba(0, 0, 0, 0.54)) 70%,
    var(--jp-content-font-color1, rgba(0, 0, 0, 0.87))
  );
  min-width: 3ch;
  text-align: right;
  user-select: none;
  width: 1%;
}

.grinta-output .grinta-diff-new { border-right: 1px solid var(--jp-border-color2, #e0e0e0); }

.grinta-output .grinta-diff-mark {
  color: var(--grinta-quiet-text);
  user-select: none;
  width: 1%;
}

.grinta-output .grinta-diff-code {
  color: var(--jp-mirror-editor-variable-color, var(--jp-content-font-color1, rgba(0, 0, 0, 0.87)));
  white-space: pre-wrap;
  word-break: break-all;
}

.grinta-output .grinta-diff-add td { background: var(--grinta-add-bg); }
.grinta-output .grinta-diff-del td { background: var(--grinta-del-bg); }
/* The + and - are the one sign of a row's role that is not a colour: as readable as the code. */
.grinta-output .grinta-diff-add .grinta-diff-mark { color: var(--grinta-add-text); font-weight: 600; }
.grinta-output .grinta-diff-del .grinta-diff-mark { color: var(--grinta-del-text); font-weight: 600; }
.grinta-output .grinta-diff-note td { color: var(--grinta-quiet-text); font-style: italic; }

.grinta-output .grinta-diff-hunk-header {
  background: var(--grinta-hunk-bg);
  color: color-mix(in srgb, var(--jp-content-font-color2, rgba(0, 0, 0, 0.54)) 60%, var(--jp-content-font-color1, rgba(0, 0, 0, 0.87)));
}

.grinta-output .grinta-diff tr[hidden] { display: none; }

.grinta-output .grinta-toggle {
  background: var(--jp-layout-color2, #eee);
  border: var(--jp-border-width, 1px) solid var(--jp-border-color1, #bdbdbd);
  border-radius: var(--grinta-radius);
  color: var(--jp-content-font-color1, rgba(0, 0, 0, 0.87));
  cursor: pointer;
  font-family: var(--jp-ui-font-family, system-ui, sans-serif);
  font-size: var(--jp-ui-font-size1, 13px);
  margin: 2px 0;
  padding: 2px 10px;
}

.grinta-output .grinta-toggle:hover { background: var(--jp-layout-color3, #bdbdbd); }

.grinta-output .grinta-note {
  color: var(--grinta-quiet-text);
  font-size: var(--jp-ui-font-size0, 11px);
  font-style: italic;
  padding: 2px 8px;
}

/* A control or invisible character shown as an escape (src/visible.ts): boxed, in the
   theme's warning colour, so it never reads as the same characters typed literally. */

.grinta-output .grinta-escape {
  border: 1px solid currentColor;
  border-radius: 3px;
  color: var(--grinta-warn-text);
  font-family: var(--jp-code-font-family, Menlo, Consolas, 'DejaVu Sans Mono', monospace);
  font-style: normal;
  font-weight: normal;
  padding: 0 1px;
}

/* Highlighting, from the editor's own palette, mixed a little with the text colour: the
   palette is made for the editor's plain background, and the added and removed rows are
   tinted, so unmixed some colours fall under 4.5:1 (tests/browser/test_live_cards.py). */

.grinta-output [class^='grinta-tok-'] {
  color: color-mix(in srgb, var(--grinta-tok) 70%, var(--jp-content-font-color1, rgba(0, 0, 0, 0.87)));
}
.grinta-output .grinta-tok-keyword { --grinta-tok: var(--jp-mirror-editor-keyword-color, #008000); font-weight: bold; }
.grinta-output .grinta-tok-builtin { --grinta-tok: var(--jp-mirror-editor-builtin-color, #008000); }
.grinta-output .grinta-tok-string { --grinta-tok: var(--jp-mirror-editor-string-color, #ba2121); }
.grinta-output .grinta-tok-comment { --grinta-tok: var(--jp-mirror-editor-comment-color, #408080); font-style: italic; }
.grinta-output .grinta-tok-number { --grinta-tok: var(--jp-mirror-editor-number-color, #080); }

/* Validation, observation, guards */

.grinta-output .grinta-valid { color: var(--grinta-success-text); font-size: var(--jp-ui-font-size1, 13px); margin-top: 6px; }

.grinta-output .grinta-invalid {
  background: rgba(248, 81, 73, 0.08);
  border-radius: var(--grinta-radius);
  padding: 4px 8px;
}

.grinta-output .grinta-invalid > h4 { color: var(--grinta-error-text); }
.grinta-output .grinta-error-code { font-family: var(--jp-code-font-family, Menlo, Consolas, 'DejaVu Sans Mono', monospace); }
.grinta-output .grinta-error-message { white-space: pre-wrap; }
.grinta-output .grinta-candidates { margin: 4px 0; padding-left: 20px; }
.grinta-output .grinta-candidate-head { align-items: baseline; display: flex; flex-wrap: wrap; gap: 6px; }

.grinta-output .grinta-observation > summary { cursor: pointer; }
.grinta-output .grinta-observation.grinta-failed > summary .grinta-summary-title { color: var(--grinta-error-text); }

/* Session */

.grinta-output .grinta-metrics { border-collapse: collapse; font-size: var(--jp-ui-font-size1, 13px); }

.grinta-output .grinta-metrics th,
.grinta-output .grinta-metrics td {
  border-bottom: var(--jp-border-width, 1px) solid var(--jp-border-color2, #e0e0e0);
  padding: 1px 12px 1px 0;
  text-align: left;
  vertical-align: top;
}

.grinta-output .grinta-metrics th { color: var(--jp-content-font-color2, rgba(0, 0, 0, 0.54)); font-weight: normal; white-space: nowrap; }
.grinta-output .grinta-metrics td { font-family: var(--jp-code-font-family, Menlo, Consolas, 'DejaVu Sans Mono', monospace); }

.grinta-output .grinta-footer { margin-top: 6px; }


/* A live trace: the session card holds its step cards. */
.grinta-output .grinta-steps > .grinta-card { margin: 6px 0; }
.grinta-output .grinta-steps .grinta-session-id { display: none; }

/* Problems */

.grinta-output .grinta-problem-message { color: var(--grinta-error-text); font-weight: 600; }
.grinta-output .grinta-session-error .grinta-error { color: var(--grinta-error-text); }

/* The live panel (src/render/liveCard.ts): the same card, plus the action bar while it waits. */

.grinta-output.grinta-live { padding: 0; }

.grinta-output .grinta-actions {
  align-items: center;
  display: flex;
  flex-wrap: wrap;
  gap: 6px;
  outline-offset: 2px;
  padding: 6px 0 2px;
}

.grinta-output .grinta-actions:focus-visible,
.grinta-output .grinta-actions:focus {
  outline: 2px solid var(--jp-brand-color1, #1976d2);
}

.grinta-output .grinta-button {
  background: var(--jp-layout-color1, #fff);
  border: 1px solid var(--jp-border-color1, #bdbdbd);
  border-left-width: 4px;
  border-radius: var(--grinta-radius);
  color: var(--jp-ui-font-color1, rgba(0, 0, 0, 0.87));
  cursor: pointer;
  font-family: var(--jp-ui-font-family, system-ui, sans-serif);
  font-size: var(--jp-ui-font-size1, 13px);
  padding: 2px 12px;
}

.grinta-output .grinta-button:hover { background: var(--jp-layout-color2, #eee); }
/* Disabled (sent, or re-validating): a dashed border and a grey the theme keeps at 4.5:1 on
   the button's own background, not opacity, which took the light theme's text under 4.5:1. */
.grinta-output .grinta-button:disabled {
  background: var(--jp-layout-color1, #fff);
  border-style: dashed;
  color: var(--jp-ui-font-color2, rgba(0, 0, 0, 0.54));
  cursor: not-allowed;
}
.grinta-output .grinta-approve,
.grinta-output .grinta-revalidate { border-left-color: var(--jp-success-color1, #388e3c); font-weight: 600; }
.grinta-output .grinta-edit { border-left-color: var(--jp-brand-color1, #1976d2); }
.grinta-output .grinta-veto,
.grinta-output .grinta-send-veto { border-left-color: var(--jp-error-color1, #d32f2f); }

.grinta-output .grinta-action-hint {
  color: var(--jp-ui-font-color2, rgba(0, 0, 0, 0.54));
  font-size: var(--jp-ui-font-size0, 11px);
}

.grinta-output .grinta-action-status {
  color: var(--jp-ui-font-color1, rgba(0, 0, 0, 0.87));
  flex-basis: 100%;
  font-size: var(--jp-ui-font-size1, 13px);
  white-space: pre-wrap;
}

.grinta-output .grinta-actions input[type='text'],
.grinta-output .grinta-edit-form textarea {
  background: var(--jp-input-background, var(--jp-layout-color1, #fff));
  border: 1px solid var(--jp-border-color1, #bdbdbd);
  border-radius: var(--grinta-radius);
  color: var(--jp-ui-font-color1, rgba(0, 0, 0, 0.87));
  font-size: var(--jp-ui-font-size1, 13px);
  padding: 2px 6px;
}

.grinta-output .grinta-veto-reason,
.grinta-output .grinta-hunk-reason { flex: 1 1 280px; }

.grinta-output .grinta-edit-form { align-items: stretch; flex-direction: column; }

.grinta-output .grinta-edit-form textarea {
  box-sizing: border-box;
  font-family: var(--jp-code-font-family, Menlo, Consolas, 'DejaVu Sans Mono', monospace);
  font-size: var(--jp-code-font-size, 13px);
  resize: vertical;
  width: 100%;
}

.grinta-output .grinta-edit-label { color: var(--jp-ui-font-color1, rgba(0, 0, 0, 0.87)); font-weight: 600; }
.grinta-output .grinta-edit-buttons { display: flex; gap: 6px; }

.grinta-output .grinta-hunk-pick { cursor: pointer; margin-right: 6px; }
.grinta-output .grinta-hunk-check { cursor: pointer; margin: 0; vertical-align: middle; }

/* A session that lasts (src/render/markCard.ts): marks between the step cards, steps a
   rewind undid, a proposal staged again after a resume, the rules files. Colours are the
   theme's, mixed with the text colour so they stay readable in every theme. */

.grinta-output .grinta-mark {
  --grinta-mark: var(--jp-brand-color1, #1976d2);
  align-items: baseline;
  border-left: 3px solid var(--grinta-mark);
  display: flex;
  flex-wrap: wrap;
  gap: 2px 8px;
  margin: 6px 0;
  padding: 2px 10px;
}

.grinta-output .grinta-mark-said { --grinta-mark: var(--jp-brand-color2, #64b5f6); }
.grinta-output .grinta-mark-rewind,
.grinta-output .grinta-mark-condensed { --grinta-mark: var(--jp-warn-color1, #f57c00); }
.grinta-output .grinta-mark-resumed { --grinta-mark: var(--jp-success-color1, #388e3c); }
/* Grey, from the text's own grey rather than a border's: a border grey mixed into the title
   falls just under 4.5:1 in the light theme. */
.grinta-output .grinta-mark-ended,
.grinta-output .grinta-mark-other { --grinta-mark: var(--jp-ui-font-color2, rgba(0, 0, 0, 0.54)); }

.grinta-output .grinta-mark-icon,
.grinta-output .grinta-mark-title {
  color: color-mix(in srgb, var(--grinta-mark) 55%, var(--jp-content-font-color1, rgba(0, 0, 0, 0.87)));
  font-weight: 600;
}

.grinta-output .grinta-mark-text { white-space: pre-wrap; word-break: break-word; }
.grinta-output .grinta-mark-said .grinta-mark-text { font-style: italic; }

/* Dashed and badged, not faded: opacity took every row of a rewound diff under 4.5:1. */
.grinta-output .grinta-step.grinta-rewound { border-left-style: dashed; }
.grinta-output .grinta-status-rewound { --grinta-status: var(--jp-warn-color1, #f57c00); }

.grinta-output .grinta-stale {
  border: 1px solid var(--jp-warn-color1, #f57c00);
  border-radius: var(--grinta-radius);
  margin: 4px 0;
  padding: 2px 8px;
  white-space: pre-wrap;
}

.grinta-output .grinta-stale b {
  color: color-mix(in srgb, var(--jp-warn-color1, #f57c00) 55%, var(--jp-content-font-color1, rgba(0, 0, 0, 0.87)));
}

.grinta-output .grinta-rules code { font-family: var(--jp-code-font-family, Menlo, Consolas, 'DejaVu Sans Mono', monospace); }

/* The live panel's message box (src/render/messageBox.ts). */

.grinta-output.grinta-box { padding: 6px 0 0; }

.grinta-output .grinta-box-input {
  background: var(--jp-input-background, var(--jp-layout-color1, #fff));
  border: 1px solid var(--jp-border-color1, #bdbdbd);
  border-radius: var(--grinta-radius);
  box-sizing: border-box;
  color: var(--jp-ui-font-color1, rgba(0, 0, 0, 0.87));
  font-family: var(--jp-ui-font-family, system-ui, sans-serif);
  font-size: var(--jp-ui-font-size1, 13px);
  padding: 4px 8px;
  width: 100%;
}

.grinta-output .grinta-box-input::placeholder { color: var(--jp-ui-font-color2, rgba(0, 0, 0, 0.54)); opacity: 1; }
.grinta-output .grinta-box-input:focus { outline: 2px solid var(--jp-brand-color1, #1976d2); outline-offset: 1px; }
.grinta-output .grinta-box[data-mode='continue'] .grinta-box-input { border-color: var(--jp-brand-color1, #1976d2); }

.grinta-output .grinta-box-status {
  color: var(--jp-ui-font-color2, rgba(0, 0, 0, 0.54));
  font-size: var(--jp-ui-font-size0, 11px);
  min-height: 1.2em;
  white-space: pre-wrap;
}

/* The box under a saved trace (src/render/traceBox.ts): the live panel's box, in the card. */

.grinta-output .grinta-trace-box:empty { display: none; }
.grinta-output .grinta-trace-box { margin-top: 8px; }

.grinta-output .grinta-box-hint {
  color: var(--jp-ui-font-color2, rgba(0, 0, 0, 0.54));
  font-size: var(--jp-ui-font-size1, 13px);
  white-space: pre-wrap;
  word-break: break-word;
}

/* The live panel's model bar (src/render/modelBar.ts): the picker and the key field. */

.grinta-output.grinta-models { padding: 4px 0 2px; }

.grinta-output .grinta-models-row {
  align-items: center;
  display: flex;
  flex-wrap: wrap;
  gap: 4px 8px;
}

.grinta-output .grinta-models-label {
  color: var(--jp-ui-font-color1, rgba(0, 0, 0, 0.87));
  font-size: var(--jp-ui-font-size1, 13px);
}

.grinta-output .grinta-models-select,
.grinta-output .grinta-models-key {
  background: var(--jp-input-background, var(--jp-layout-color1, #fff));
  border: 1px solid var(--jp-border-color1, #bdbdbd);
  border-radius: var(--grinta-radius);
  color: var(--jp-ui-font-color1, rgba(0, 0, 0, 0.87));
  font-family: var(--jp-ui-font-family, system-ui, sans-serif);
  font-size: var(--jp-ui-font-size1, 13px);
  padding: 2px 6px;
}

.grinta-output .grinta-models-select { max-width: 28em; }
.grinta-output .grinta-models-select optgroup,
.grinta-output .grinta-models-select option {
  background: var(--jp-layout-color1, #fff);
  color: var(--jp-ui-font-color1, rgba(0, 0, 0, 0.87));
}
.grinta-output .grinta-models-key { min-width: 20em; }
.grinta-output .grinta-models-key::placeholder { color: var(--jp-ui-font-color2, rgba(0, 0, 0, 0.54)); opacity: 1; }
.grinta-output .grinta-models-select:focus,
.grinta-output .grinta-models-key:focus { outline: 2px solid var(--jp-brand-color1, #1976d2); outline-offset: 1px; }
.grinta-output .grinta-models-keybox { align-items: center; display: inline-flex; gap: 6px; }
.grinta-output .grinta-models-keybox[hidden],
.grinta-output .grinta-models-searching[hidden],
.grinta-output .grinta-models-problem[hidden],
.grinta-output .grinta-models-forget[hidden] { display: none; }
.grinta-output .grinta-models-use { border-left-color: var(--jp-brand-color1, #1976d2); }

.grinta-output .grinta-models-searching,
.grinta-output .grinta-models-note,
.grinta-output .grinta-models-status {
  color: var(--jp-ui-font-color2, rgba(0, 0, 0, 0.54));
  font-size: var(--jp-ui-font-size0, 11px);
  white-space: pre-wrap;
  word-break: break-word;
}

.grinta-output .grinta-models[data-key-state='missing'] .grinta-models-note,
.grinta-output .grinta-models[data-key-state='rejected'] .grinta-models-note {
  color: color-mix(in srgb, var(--jp-warn-color1, #f57c00) 45%, var(--jp-content-font-color1, rgba(0, 0, 0, 0.87)));
  font-weight: 600;
}
.grinta-output .grinta-models[data-key-state='missing'] .grinta-models-key,
.grinta-output .grinta-models[data-key-state='rejected'] .grinta-models-key { border-color: var(--jp-warn-color1, #f57c00); }

.grinta-output .grinta-models-problem {
  border-left: 3px solid var(--jp-error-color1, #d32f2f);
  color: color-mix(in srgb, var(--jp-error-color1, #d32f2f) 60%, var(--jp-content-font-color1, rgba(0, 0, 0, 0.87)));
  font-size: var(--jp-ui-font-size1, 13px);
  margin: 4px 0;
  padding: 2px 8px;
  white-space: pre-wrap;
  word-break: break-word;
}

/* Whitespace a change may be all about (src/render/diffView.ts): trailing spaces and tabs of
   added and removed rows, every space and tab of a whitespace-only change, and spaces that
   are not U+0020. Shaded, tabs underlined, the others boxed; the text stays exact. */

.grinta-output .grinta-ws {
  background: rgba(128, 128, 128, 0.3);
  border-radius: 2px;
  white-space: pre;
}

.grinta-output .grinta-ws-tab { box-shadow: inset 0 -2px 0 var(--grinta-quiet-text); }
.grinta-output .grinta-ws-odd { outline: 1px solid var(--grinta-warn-text); }

/* A hunk whose header promises rows the diff does not hold (a malformed payload). */
.grinta-output .grinta-diff-problem td {
  color: var(--grinta-error-text);
  font-weight: 600;
  padding: 2px 8px;
}
`,""]),o.d(r,{},{A:i})},314(t){t.exports=function(t){var r=[];return r.toString=function(){return this.map(function(r){var o="",a=void 0!==r[5];return r[4]&&(o+="@supports (".concat(r[4],") {")),r[2]&&(o+="@media ".concat(r[2]," {")),a&&(o+="@layer".concat(r[5].length>0?" ".concat(r[5]):""," {")),o+=t(r),a&&(o+="}"),r[2]&&(o+="}"),r[4]&&(o+="}"),o}).join("")},r.i=function(t,o,a,n,e){"string"==typeof t&&(t=[[null,t,void 0]]);var i={};if(a)for(var p=0;p<this.length;p++){var s=this[p][0];null!=s&&(i[s]=!0)}for(var u=0;u<t.length;u++){var g=[].concat(t[u]);a&&i[g[0]]||(void 0!==e&&(void 0===g[5]||(g[1]="@layer".concat(g[5].length>0?" ".concat(g[5]):""," {").concat(g[1],"}")),g[5]=e),o&&(g[2]&&(g[1]="@media ".concat(g[2]," {").concat(g[1],"}")),g[2]=o),n&&(g[4]?(g[1]="@supports (".concat(g[4],") {").concat(g[1],"}"),g[4]=n):g[4]="".concat(n)),r.push(g))}},r}},601(t){t.exports=function(t){return t[1]}},72(t){var r=[];function o(t){for(var o=-1,a=0;a<r.length;a++)if(r[a].identifier===t){o=a;break}return o}function a(t,a){for(var n={},e=[],i=0;i<t.length;i++){var p=t[i],s=a.base?p[0]+a.base:p[0],u=n[s]||0,g="".concat(s," ").concat(u);n[s]=u+1;var d=o(g),l={css:p[1],media:p[2],sourceMap:p[3],supports:p[4],layer:p[5]};if(-1!==d)r[d].references++,r[d].updater(l);else{var c=function(t,r){var o=r.domAPI(r);return o.update(t),function(r){r?(r.css!==t.css||r.media!==t.media||r.sourceMap!==t.sourceMap||r.supports!==t.supports||r.layer!==t.layer)&&o.update(t=r):o.remove()}}(l,a);a.byIndex=i,r.splice(i,0,{identifier:g,updater:c,references:1})}e.push(g)}return e}t.exports=function(t,n){var e=a(t=t||[],n=n||{});return function(t){t=t||[];for(var i=0;i<e.length;i++){var p=o(e[i]);r[p].references--}for(var s=a(t,n),u=0;u<e.length;u++){var g=o(e[u]);0===r[g].references&&(r[g].updater(),r.splice(g,1))}e=s}}},659(t){var r={};t.exports=function(t,o){var a=function(t){if(void 0===r[t]){var o=document.querySelector(t);if(window.HTMLIFrameElement&&o instanceof window.HTMLIFrameElement)try{o=o.contentDocument.head}catch(t){o=null}r[t]=o}return r[t]}(t);if(!a)throw Error("Couldn't find a style target. This probably means that the value for the 'insert' parameter is invalid.");a.appendChild(o)}},540(t){t.exports=function(t){var r=document.createElement("style");return t.setAttributes(r,t.attributes),t.insert(r,t.options),r}},56(t,r,o){t.exports=function(t){var r=o.nc;r&&t.setAttribute("nonce",r)}},825(t){t.exports=function(t){if("u"<typeof document)return{update:function(){},remove:function(){}};var r=t.insertStyleElement(t);return{update:function(o){var a,n,e;a="",o.supports&&(a+="@supports (".concat(o.supports,") {")),o.media&&(a+="@media ".concat(o.media," {")),(n=void 0!==o.layer)&&(a+="@layer".concat(o.layer.length>0?" ".concat(o.layer):""," {")),a+=o.css,n&&(a+="}"),o.media&&(a+="}"),o.supports&&(a+="}"),(e=o.sourceMap)&&"u">typeof btoa&&(a+="\n/*# sourceMappingURL=data:application/json;base64,".concat(btoa(unescape(encodeURIComponent(JSON.stringify(e))))," */")),t.styleTagTransform(a,r,t.options)},remove:function(){var t;null===(t=r).parentNode||t.parentNode.removeChild(t)}}}},113(t){t.exports=function(t,r){if(r.styleSheet)r.styleSheet.cssText=t;else{for(;r.firstChild;)r.removeChild(r.firstChild);r.appendChild(document.createTextNode(t))}}},579(t,r,o){var a=o(72),n=o.n(a),e=o(825),i=o.n(e),p=o(659),s=o.n(p),u=o(56),g=o.n(u),d=o(540),l=o.n(d),c=o(113),f=o.n(c),b=o(475),m={};m.styleTagTransform=f(),m.setAttributes=g(),m.insert=s().bind(null,"head"),m.domAPI=i(),m.insertStyleElement=l(),n()(b.A,m),b.A&&b.A.locals&&b.A.locals}}]);