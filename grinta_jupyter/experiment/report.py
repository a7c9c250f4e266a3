"""The results of an eval as one self-contained HTML page (report.html).

Readable in any browser without Jupyter, a server or a network: inline CSS,
inline SVG charts, no script. It shows what notebook 05 plots (each metric per
toolset, a mean with its 95% bootstrap interval), the difference between the
toolsets with its interval, the results table, and each task's passes per
toolset. The charts are drawn here, as SVG text, so the notebook shows the
same pictures (``charts_html``) and the package needs no plotting library.
"""

from __future__ import annotations

import math
from collections import defaultdict
from html import escape
from typing import Any

from grinta_jupyter.experiment.stats import Estimate

# What notebook 05 plots, and what the report puts first.
CHART_METRICS = [
    "pass_rate",
    "tool_entropy_bits",
    "steps",
    "validation_failure_total",
    "edit_retries",
    "redundant_calls",
    "tokens",
    "cost",
]
COLOURS = ["#1a7f37", "#9a6700", "#0969da", "#8250df", "#cf222e"]
_W, _H, _PAD = 200, 150, 28  # one chart: width, height, room for labels


def _estimate(value: Any) -> Estimate:
    if isinstance(value, Estimate):
        return value

    def bound(key: str) -> float:  # results.json holds null where there is no value
        return math.nan if value[key] is None else float(value[key])

    return Estimate(bound("mean"), bound("low"), bound("high"), value["n"])


def _number(value: float) -> str:
    if math.isnan(value):
        return "n/a"
    return f"{value:.3g}"


def metric_chart(table: dict[str, Any], metric: str) -> str:
    """One metric, one bar per toolset with its interval, as an SVG element."""
    toolsets = list(table["toolsets"])
    estimates = [_estimate(table["toolsets"][t][metric]) for t in toolsets]
    known = [e for e in estimates if e.n and not math.isnan(e.mean)]
    top = max([e.high for e in known] + [e.mean for e in known] + [0.0])
    bottom = min([e.low for e in known] + [0.0])
    if top == bottom:  # all zero (or nothing known): zero at the bottom, not mid-air
        top = bottom + 1.0
    span = top - bottom
    plot_h = _H - 2 * _PAD

    def y(value: float) -> float:
        return _PAD + plot_h * (top - value) / span

    slot = (_W - 20) / max(1, len(toolsets))
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{_W}" height="{_H}" '
        f'viewBox="0 0 {_W} {_H}" role="img" aria-label="{escape(metric)}">',
        f'<text x="{_W / 2}" y="14" text-anchor="middle" class="title">{escape(metric)}</text>',
        f'<line x1="10" x2="{_W - 10}" y1="{y(0):.1f}" y2="{y(0):.1f}" class="axis"/>',
    ]
    for i, (toolset, e) in enumerate(zip(toolsets, estimates, strict=True)):
        cx = 10 + slot * (i + 0.5)
        colour = COLOURS[i % len(COLOURS)]
        if e.n and not math.isnan(e.mean):
            y0, y1 = sorted((y(0), y(e.mean)))
            parts.append(
                f'<rect x="{cx - slot * 0.3:.1f}" y="{y0:.1f}" width="{slot * 0.6:.1f}" '
                f'height="{max(y1 - y0, 0.5):.1f}" fill="{colour}" opacity="0.85"/>'
            )
            parts.append(
                f'<line x1="{cx:.1f}" x2="{cx:.1f}" y1="{y(e.low):.1f}" y2="{y(e.high):.1f}" class="whisker"/>'
                f'<line x1="{cx - 6:.1f}" x2="{cx + 6:.1f}" y1="{y(e.low):.1f}" y2="{y(e.low):.1f}" class="whisker"/>'
                f'<line x1="{cx - 6:.1f}" x2="{cx + 6:.1f}" y1="{y(e.high):.1f}" y2="{y(e.high):.1f}" class="whisker"/>'
            )
        label = f"{_number(e.mean)} [{_number(e.low)}, {_number(e.high)}]" if e.n else "n/a"
        parts.append(
            f'<text x="{cx:.1f}" y="{_H - 16}" text-anchor="middle">{escape(toolset)}</text>'
            f'<text x="{cx:.1f}" y="{_H - 4}" text-anchor="middle" class="small">{escape(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def difference_chart(table: dict[str, Any]) -> str:
    """Each metric's difference between the toolsets with its interval; each row on its own scale."""
    diff = table.get("difference") or {}
    metrics = [m for m in diff if m != "of"]
    if not metrics:
        return ""
    row_h, label_w, width = 22, 210, 640
    plot_w = width - label_w - 190
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{row_h * (len(metrics) + 1)}" '
        f'role="img" aria-label="differences">',
        f'<text x="{label_w + plot_w / 2}" y="14" text-anchor="middle" class="title">'
        f"{escape(diff['of'])} (0 marked; each row on its own scale)</text>",
    ]
    zero = label_w + plot_w / 2
    for i, metric in enumerate(metrics):
        e = _estimate(diff[metric])
        cy = row_h * (i + 1) + 8
        parts.append(
            f'<text x="{label_w - 8}" y="{cy + 4}" text-anchor="end">{escape(metric)}</text>'
        )
        parts.append(f'<line x1="{zero}" x2="{zero}" y1="{cy - 8}" y2="{cy + 8}" class="axis"/>')
        if e.n and not math.isnan(e.mean):
            scale = max(abs(e.low), abs(e.high), abs(e.mean)) or 1.0

            def x(value: float, scale: float = scale) -> float:
                return zero + (plot_w / 2 - 6) * value / scale

            parts.append(
                f'<line x1="{x(e.low):.1f}" x2="{x(e.high):.1f}" y1="{cy}" y2="{cy}" class="whisker"/>'
                f'<circle cx="{x(e.mean):.1f}" cy="{cy}" r="4" fill="{COLOURS[2]}"/>'
            )
        label = f"{_number(e.mean)} [{_number(e.low)}, {_number(e.high)}]" if e.n else "n/a"
        parts.append(
            f'<text x="{label_w + plot_w + 10}" y="{cy + 4}" class="small">{escape(label)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def charts_html(table: dict[str, Any], metrics: list[str] | None = None) -> str:
    """The per-toolset charts (and the differences), as an HTML fragment: what notebook 05 shows."""
    charts = "".join(
        f'<figure class="chart">{metric_chart(table, m)}</figure>'
        for m in (metrics or CHART_METRICS)
        if m in next(iter(table["toolsets"].values()), {})
    )
    return f"<style>{_CSS}</style><div class='charts'>{charts}</div>{difference_chart(table)}"


def html_report(
    results: list[dict[str, Any]], toolsets: list[str], table: dict[str, Any], title: str = ""
) -> str:
    """The whole page: what was run, the charts, the table, and each task's passes."""
    from grinta_jupyter.experiment.suite import markdown_table

    models = sorted({r["spec"]["model"] for r in results})
    tasks = sorted({r["spec"]["task"] for r in results})
    seeds = sorted({r["spec"]["seed"] for r in results})
    offline = any(m.startswith("scripted") for m in models)
    heading = title or "grinta eval: " + " vs ".join(toolsets)
    caveat = (
        "<p class='warn'>These runs used the offline solver (a scripted model that plays each "
        "task's reference fix). They exercise the pipeline; they are not evidence about real "
        "models (docs/experiment.md).</p>"
        if offline
        else ""
    )
    crashed = sum(1 for r in results if r.get("end_reason") == "crashed")
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(heading)}</title>
<style>{_CSS}</style></head><body>
<h1>{escape(heading)}</h1>
<p>{len(results)} runs: {len(tasks)} tasks &times; {len(toolsets)} toolsets &times; {len(seeds)} seeds;
model {escape(", ".join(models) or "none")}{f"; {crashed} runs crashed" if crashed else ""}.
Each chart shows the mean per toolset with its 95% percentile-bootstrap interval (2,000 resamples);
the differences are {escape(str((table.get("difference") or {}).get("of", "not computed")))},
with groups resampled independently. Lower is better for every metric but the pass rate.</p>
{caveat}
<div class="charts">{"".join(f'<figure class="chart">{metric_chart(table, m)}</figure>' for m in CHART_METRICS)}</div>
{difference_chart(table)}
<h2>Every metric</h2>
{_table_html(markdown_table(table))}
<h2>Tasks</h2>
{_tasks_html(results, toolsets)}
</body></html>
"""


def _table_html(markdown: str) -> str:
    """The results table (the markdown one, same cells) as an HTML table."""
    rows = [line for line in markdown.splitlines() if line.startswith("|")]
    if len(rows) < 2:
        return ""
    cells = [[c.strip() for c in row.strip("|").split("|")] for row in rows]
    head = "".join(f"<th>{escape(c)}</th>" for c in cells[0])
    body = "".join(
        "<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in cells[2:]
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _tasks_html(results: list[dict[str, Any]], toolsets: list[str]) -> str:
    passes: dict[tuple[str, str], list[bool]] = defaultdict(list)
    for r in results:
        passes[(r["spec"]["task"], r["spec"]["toolset"])].append(bool(r["passed"]))
    tasks = sorted({task for task, _ in passes})
    head = "<th>task</th>" + "".join(f"<th>{escape(t)}</th>" for t in toolsets)
    rows = []
    for task in tasks:
        cells = []
        for toolset in toolsets:
            runs = passes.get((task, toolset), [])
            share = sum(runs) / len(runs) if runs else 0.0
            shade = "pass" if runs and share == 1 else "fail" if runs and share == 0 else "mixed"
            cells.append(f'<td class="{shade}">{sum(runs)}/{len(runs)}</td>')
        rows.append(f"<tr><td>{escape(task)}</td>{''.join(cells)}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


_CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #1f2328; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 1.6em; }
.charts { display: flex; flex-wrap: wrap; gap: 0.6em; }
figure.chart { margin: 0; border: 1px solid #d0d7de; border-radius: 6px; padding: 4px; }
svg text { font: 11px system-ui, sans-serif; fill: #1f2328; }
svg text.title { font-weight: 600; } svg text.small { font-size: 9px; fill: #57606a; }
svg .axis { stroke: #8c959f; stroke-width: 1; } svg .whisker { stroke: #1f2328; stroke-width: 1.4; }
table { border-collapse: collapse; margin: 0.6em 0; }
th, td { border: 1px solid #d0d7de; padding: 3px 8px; text-align: left; font-size: 13px; }
td.pass { background: #dafbe1; } td.fail { background: #ffebe9; } td.mixed { background: #fff8c5; }
p.warn { background: #fff8c5; border: 1px solid #d4a72c; padding: 0.5em 0.8em; border-radius: 6px; }
"""
