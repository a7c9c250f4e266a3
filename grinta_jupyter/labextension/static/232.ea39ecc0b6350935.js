"use strict";(self.rspackChunkgrinta_jupyter_labextension=self.rspackChunkgrinta_jupyter_labextension||[]).push([[232],{475(t,r,o){var a=o(601),n=o.n(a),i=o(314),e=(o.n(i))()(n());e.push([t.id,`/*
 * grinta cards. Every colour comes from JupyterLab's theme variables, or is a
 * translucent tint over them, so light, dark and custom themes all work.
 * Rules start with .grinta-output so they outrank the output area's own
 * element rules (.jp-OutputArea-output pre, dl, dt, dd).
 */

.grinta-output {
  --grinta-add-bg: rgba(46, 160, 67, 0.16);
  --grinta-add-strong: rgba(46, 160, 67, 0.7);
  --grinta-del-bg: rgba(248, 81, 73, 0.16);
  --grinta-del-strong: rgba(248, 81, 73, 0.75);
  --grinta-hunk-bg: rgba(56, 139, 253, 0.1);
  --grinta-radius: 4px;

  color: var(--jp-content-font-color1);
  font-family: var(--jp-ui-font-family);
  font-size: var(--jp-content-font-size1);
  line-height: var(--jp-content-line-height);
  padding: 2px 0;
}

.grinta-output .grinta-card {
  background: var(--jp-layout-color1);
  border: var(--jp-border-width) solid var(--jp-border-color2);
  border-left: 3px solid var(--jp-border-color1);
  border-radius: var(--grinta-radius);
  padding: 6px 10px 8px;
  max-width: 100%;
  overflow-x: auto;
}

.grinta-output .grinta-step[data-status='pending'] { border-left-color: var(--jp-warn-color1); }
.grinta-output .grinta-step[data-status='committed'] { border-left-color: var(--jp-success-color1); }
.grinta-output .grinta-step[data-status='vetoed'],
.grinta-output .grinta-step[data-status='refused'],
.grinta-output .grinta-problem { border-left-color: var(--jp-error-color1); }
.grinta-output .grinta-step[data-status='done'],
.grinta-output .grinta-session { border-left-color: var(--jp-brand-color1); }

.grinta-output .grinta-card-header {
  align-items: baseline;
  display: flex;
  flex-wrap: wrap;
  gap: 4px 8px;
  margin-bottom: 4px;
}

.grinta-output .grinta-step-number { font-weight: 600; }

.grinta-output .grinta-tool {
  font-family: var(--jp-code-font-family);
  font-weight: 600;
}

.grinta-output .grinta-kind {
  border: var(--jp-border-width) solid var(--jp-border-color1);
  border-radius: 8px;
  color: var(--jp-content-font-color2);
  font-size: var(--jp-ui-font-size0);
  padding: 0 6px;
}

.grinta-output .grinta-badge {
  background: rgba(128, 128, 128, 0.12);
  border: 1px solid currentColor;
  border-radius: 8px;
  font-size: var(--jp-ui-font-size0);
  font-weight: 600;
  padding: 0 6px;
  text-transform: uppercase;
}

.grinta-output .grinta-status-pending { color: var(--jp-warn-color1); }
.grinta-output .grinta-status-committed,
.grinta-output .grinta-end-finished { color: var(--jp-success-color1); }
.grinta-output .grinta-status-vetoed,
.grinta-output .grinta-status-refused { color: var(--jp-error-color1); }
.grinta-output .grinta-status-done,
.grinta-output .grinta-guard-action { color: var(--jp-brand-color1); }

.grinta-output .grinta-decision { color: var(--jp-content-font-color2); }

.grinta-output .grinta-session-id,
.grinta-output .grinta-muted {
  color: var(--jp-content-font-color3);
  font-size: var(--jp-ui-font-size0);
}

.grinta-output .grinta-card-header .grinta-session-id { margin-left: auto; }

.grinta-output .grinta-text,
.grinta-output .grinta-summary {
  margin: 4px 0;
  white-space: pre-wrap;
}

.grinta-output .grinta-summary { color: var(--jp-content-font-color2); }

.grinta-output .grinta-section { margin-top: 8px; }

.grinta-output .grinta-section > h4,
.grinta-output .grinta-observation > summary {
  color: var(--jp-content-font-color2);
  font-size: var(--jp-ui-font-size1);
  font-weight: 600;
  margin: 0 0 4px;
}

.grinta-output .grinta-pre,
.grinta-output .grinta-code,
.grinta-output .grinta-diff-table {
  font-family: var(--jp-code-font-family);
  font-size: var(--jp-code-font-size);
}

.grinta-output .grinta-pre {
  background: var(--jp-layout-color2);
  border-radius: var(--grinta-radius);
  margin: 2px 0;
  max-height: 32em;
  overflow: auto;
  padding: 4px 6px;
  white-space: pre-wrap;
  word-break: break-word;
}

.grinta-output .grinta-code {
  background: var(--jp-layout-color2);
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
  color: var(--jp-content-font-color2);
  font-family: var(--jp-code-font-family);
}
.grinta-output .grinta-fields > dd > .grinta-pre { margin: 0; }

.grinta-output .grinta-list { margin: 2px 0; padding-left: 20px; }

.grinta-output .grinta-fold > summary {
  color: var(--jp-content-font-color2);
  cursor: pointer;
  user-select: none;
}

.grinta-output .grinta-fold-preview {
  font-family: var(--jp-code-font-family);
  font-size: var(--jp-code-font-size);
  white-space: pre-wrap;
}

.grinta-output .grinta-unresolved { color: var(--jp-error-color1); }

/* Diff */

.grinta-output .grinta-diff-block {
  border: var(--jp-border-width) solid var(--jp-border-color2);
  border-radius: var(--grinta-radius);
  margin: 4px 0;
  overflow-x: auto;
}

.grinta-output .grinta-diff-file {
  align-items: baseline;
  background: var(--jp-layout-color2);
  border-bottom: var(--jp-border-width) solid var(--jp-border-color2);
  display: flex;
  gap: 8px;
  padding: 2px 8px;
}

.grinta-output .grinta-diff-path { font-family: var(--jp-code-font-family); font-weight: 600; }
.grinta-output .grinta-diff-status { color: var(--jp-content-font-color2); font-style: italic; }
.grinta-output .grinta-diff-added { color: var(--jp-success-color1); font-family: var(--jp-code-font-family); }
.grinta-output .grinta-diff-removed { color: var(--jp-error-color1); font-family: var(--jp-code-font-family); }

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
  color: var(--jp-content-font-color3);
  min-width: 3ch;
  text-align: right;
  user-select: none;
  width: 1%;
}

.grinta-output .grinta-diff-new { border-right: 1px solid var(--jp-border-color2); }

.grinta-output .grinta-diff-mark {
  color: var(--jp-content-font-color3);
  user-select: none;
  width: 1%;
}

.grinta-output .grinta-diff-code {
  color: var(--jp-mirror-editor-variable-color, var(--jp-content-font-color1));
  white-space: pre-wrap;
  word-break: break-all;
}

.grinta-output .grinta-diff-add td { background: var(--grinta-add-bg); }
.grinta-output .grinta-diff-del td { background: var(--grinta-del-bg); }
.grinta-output .grinta-diff-add .grinta-diff-mark { color: var(--grinta-add-strong); }
.grinta-output .grinta-diff-del .grinta-diff-mark { color: var(--grinta-del-strong); }
.grinta-output .grinta-diff-note td { color: var(--jp-content-font-color3); font-style: italic; }

.grinta-output .grinta-diff-hunk-header {
  background: var(--grinta-hunk-bg);
  color: var(--jp-content-font-color2);
}

.grinta-output .grinta-diff tr[hidden] { display: none; }

.grinta-output .grinta-toggle {
  background: var(--jp-layout-color2);
  border: var(--jp-border-width) solid var(--jp-border-color1);
  border-radius: var(--grinta-radius);
  color: var(--jp-content-font-color1);
  cursor: pointer;
  font-family: var(--jp-ui-font-family);
  font-size: var(--jp-ui-font-size1);
  margin: 2px 0;
  padding: 2px 10px;
}

.grinta-output .grinta-toggle:hover { background: var(--jp-layout-color3); }

.grinta-output .grinta-note {
  color: var(--jp-content-font-color3);
  font-size: var(--jp-ui-font-size0);
  font-style: italic;
  padding: 2px 8px;
}

/* A control or invisible character shown as an escape (src/visible.ts): boxed, in the
   theme's warning colour, so it never reads as the same characters typed literally. */

.grinta-output .grinta-escape {
  border: 1px solid currentColor;
  border-radius: 3px;
  color: var(--jp-warn-color0);
  font-family: var(--jp-code-font-family);
  font-style: normal;
  font-weight: normal;
  padding: 0 1px;
}

/* Highlighting, from the editor's own palette */

.grinta-output .grinta-tok-keyword { color: var(--jp-mirror-editor-keyword-color); font-weight: bold; }
.grinta-output .grinta-tok-builtin { color: var(--jp-mirror-editor-builtin-color); }
.grinta-output .grinta-tok-string { color: var(--jp-mirror-editor-string-color); }
.grinta-output .grinta-tok-comment { color: var(--jp-mirror-editor-comment-color); font-style: italic; }
.grinta-output .grinta-tok-number { color: var(--jp-mirror-editor-number-color); }

/* Validation, observation, guards */

.grinta-output .grinta-valid { color: var(--jp-success-color1); font-size: var(--jp-ui-font-size1); margin-top: 6px; }

.grinta-output .grinta-invalid {
  background: rgba(248, 81, 73, 0.08);
  border-radius: var(--grinta-radius);
  padding: 4px 8px;
}

.grinta-output .grinta-invalid > h4 { color: var(--jp-error-color1); }
.grinta-output .grinta-error-code { font-family: var(--jp-code-font-family); }
.grinta-output .grinta-error-message { white-space: pre-wrap; }
.grinta-output .grinta-candidates { margin: 4px 0; padding-left: 20px; }
.grinta-output .grinta-candidate-head { align-items: baseline; display: flex; flex-wrap: wrap; gap: 6px; }

.grinta-output .grinta-observation > summary { cursor: pointer; }
.grinta-output .grinta-observation.grinta-failed > summary .grinta-summary-title { color: var(--jp-error-color1); }

/* Session */

.grinta-output .grinta-metrics { border-collapse: collapse; font-size: var(--jp-ui-font-size1); }

.grinta-output .grinta-metrics th,
.grinta-output .grinta-metrics td {
  border-bottom: var(--jp-border-width) solid var(--jp-border-color2);
  padding: 1px 12px 1px 0;
  text-align: left;
  vertical-align: top;
}

.grinta-output .grinta-metrics th { color: var(--jp-content-font-color2); font-weight: normal; white-space: nowrap; }
.grinta-output .grinta-metrics td { font-family: var(--jp-code-font-family); }

.grinta-output .grinta-footer { margin-top: 6px; }

.grinta-output .grinta-end-running { color: var(--jp-brand-color1); }

/* A live trace: the session card holds its step cards. */
.grinta-output .grinta-steps > .grinta-card { margin: 6px 0; }
.grinta-output .grinta-steps .grinta-session-id { display: none; }

/* Problems */

.grinta-output .grinta-problem-message { color: var(--jp-error-color1); font-weight: 600; }
.grinta-output .grinta-session-error .grinta-error { color: var(--jp-error-color1); }
`,""]),o.d(r,{},{A:e})},314(t){t.exports=function(t){var r=[];return r.toString=function(){return this.map(function(r){var o="",a=void 0!==r[5];return r[4]&&(o+="@supports (".concat(r[4],") {")),r[2]&&(o+="@media ".concat(r[2]," {")),a&&(o+="@layer".concat(r[5].length>0?" ".concat(r[5]):""," {")),o+=t(r),a&&(o+="}"),r[2]&&(o+="}"),r[4]&&(o+="}"),o}).join("")},r.i=function(t,o,a,n,i){"string"==typeof t&&(t=[[null,t,void 0]]);var e={};if(a)for(var p=0;p<this.length;p++){var u=this[p][0];null!=u&&(e[u]=!0)}for(var d=0;d<t.length;d++){var g=[].concat(t[d]);a&&e[g[0]]||(void 0!==i&&(void 0===g[5]||(g[1]="@layer".concat(g[5].length>0?" ".concat(g[5]):""," {").concat(g[1],"}")),g[5]=i),o&&(g[2]&&(g[1]="@media ".concat(g[2]," {").concat(g[1],"}")),g[2]=o),n&&(g[4]?(g[1]="@supports (".concat(g[4],") {").concat(g[1],"}"),g[4]=n):g[4]="".concat(n)),r.push(g))}},r}},601(t){t.exports=function(t){return t[1]}},72(t){var r=[];function o(t){for(var o=-1,a=0;a<r.length;a++)if(r[a].identifier===t){o=a;break}return o}function a(t,a){for(var n={},i=[],e=0;e<t.length;e++){var p=t[e],u=a.base?p[0]+a.base:p[0],d=n[u]||0,g="".concat(u," ").concat(d);n[u]=d+1;var l=o(g),s={css:p[1],media:p[2],sourceMap:p[3],supports:p[4],layer:p[5]};if(-1!==l)r[l].references++,r[l].updater(s);else{var c=function(t,r){var o=r.domAPI(r);return o.update(t),function(r){r?(r.css!==t.css||r.media!==t.media||r.sourceMap!==t.sourceMap||r.supports!==t.supports||r.layer!==t.layer)&&o.update(t=r):o.remove()}}(s,a);a.byIndex=e,r.splice(e,0,{identifier:g,updater:c,references:1})}i.push(g)}return i}t.exports=function(t,n){var i=a(t=t||[],n=n||{});return function(t){t=t||[];for(var e=0;e<i.length;e++){var p=o(i[e]);r[p].references--}for(var u=a(t,n),d=0;d<i.length;d++){var g=o(i[d]);0===r[g].references&&(r[g].updater(),r.splice(g,1))}i=u}}},659(t){var r={};t.exports=function(t,o){var a=function(t){if(void 0===r[t]){var o=document.querySelector(t);if(window.HTMLIFrameElement&&o instanceof window.HTMLIFrameElement)try{o=o.contentDocument.head}catch(t){o=null}r[t]=o}return r[t]}(t);if(!a)throw Error("Couldn't find a style target. This probably means that the value for the 'insert' parameter is invalid.");a.appendChild(o)}},540(t){t.exports=function(t){var r=document.createElement("style");return t.setAttributes(r,t.attributes),t.insert(r,t.options),r}},56(t,r,o){t.exports=function(t){var r=o.nc;r&&t.setAttribute("nonce",r)}},825(t){t.exports=function(t){if("u"<typeof document)return{update:function(){},remove:function(){}};var r=t.insertStyleElement(t);return{update:function(o){var a,n,i;a="",o.supports&&(a+="@supports (".concat(o.supports,") {")),o.media&&(a+="@media ".concat(o.media," {")),(n=void 0!==o.layer)&&(a+="@layer".concat(o.layer.length>0?" ".concat(o.layer):""," {")),a+=o.css,n&&(a+="}"),o.media&&(a+="}"),o.supports&&(a+="}"),(i=o.sourceMap)&&"u">typeof btoa&&(a+="\n/*# sourceMappingURL=data:application/json;base64,".concat(btoa(unescape(encodeURIComponent(JSON.stringify(i))))," */")),t.styleTagTransform(a,r,t.options)},remove:function(){var t;null===(t=r).parentNode||t.parentNode.removeChild(t)}}}},113(t){t.exports=function(t,r){if(r.styleSheet)r.styleSheet.cssText=t;else{for(;r.firstChild;)r.removeChild(r.firstChild);r.appendChild(document.createTextNode(t))}}},579(t,r,o){var a=o(72),n=o.n(a),i=o(825),e=o.n(i),p=o(659),u=o.n(p),d=o(56),g=o.n(d),l=o(540),s=o.n(l),c=o(113),f=o.n(c),v=o(475),m={};m.styleTagTransform=f(),m.setAttributes=g(),m.insert=u().bind(null,"head"),m.domAPI=e(),m.insertStyleElement=s(),n()(v.A,m),v.A&&v.A.locals&&v.A.locals}}]);