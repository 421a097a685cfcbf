"""The audit report: one self-contained HTML file of one or several pairwise runs, for a reader who
was not there (a paper's appendix, a model release, a procurement decision).

What it holds, per run: the setup (data, judge, template, aspect, pair selection and budget, every
setting, the CompAssess version and the date), the leaderboard of systems with its intervals (the
per-context rankings where the candidates have no system), the positional bias raw and at the
threshold used, the length bias, the agreement with human labels and the calibration on them where
labels exist, the evaluation against reference scores where the dataset has them, and the most
order-dependent and most human-disputed comparisons with their exact prompts; with several runs,
the runs compared on the same data; and a methods paragraph naming the equations.

Every number comes from the Python API (``api.Run.audit`` gathers them into :class:`RunAudit`);
this module lays them out (it only bins the histogram of p and thins a large length scatter), so
the report says what the CLI, the app and a notebook say.

Two properties a report handed to a stranger must have:

* **Offline.** Nothing is fetched: plotly.js is inlined once (the figures reference it), there is
  no web font, no image URL and no stylesheet link, and a Content-Security-Policy
  (``default-src 'none'``) stops the browser from fetching anything even if something were.
* **Inert.** Every string that came from a person or a file (dataset, context, candidate and
  system ids, texts, names, aspects, templates, annotators, messages) goes through :func:`inert`:
  bidirectional and control characters are shown as code points and the text is HTML-escaped, in
  tables, headings, prompts, chart labels and hover texts (plotly reads labels as HTML).

Pure: no I/O, no UI, no store. plotly is imported when a report is rendered.
"""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from ..runs.explanations import REASONS_LABEL, REASONS_NOTE
from ..limits import visible
from ..types import ComparisonPrompt, Dataset
from ..report_text import counted

__all__ = ["ShownComparison", "RunAudit", "RunsCompared", "inert", "render_report",
           "EXAMPLES", "CONTENT_SECURITY_POLICY"]

#: Comparisons shown with their exact prompts in each list (order-dependent, human-disputed).
EXAMPLES = 5
#: Most points of the length scatter: a report of a large run stays small enough to open; the
#: points kept are evenly spaced over the comparisons in their stored order.
MAX_SCATTER_POINTS = 3000
#: The browser may run the inline scripts and styles of the file itself and fetch nothing at all
#: (``data:`` and ``blob:`` images: plotly's own icons and its PNG download).
CONTENT_SECURITY_POLICY = ("default-src 'none'; script-src 'unsafe-inline'; "
                           "style-src 'unsafe-inline'; img-src data: blob:; font-src data:; "
                           "base-uri 'none'; form-action 'none'")
#: Plotly's options in the report: no link to plotly's site, no math typesetting (a label is text).
PLOTLY_CONFIG = {"displaylogo": False, "typesetMath": False,
                 "responsive": True}

_BLUE, _ORANGE, _GREEN, _GREY = "#3b5bdb", "#e8590c", "#2b8a3e", "#868e96"


# --------------------------------------------------------------------------- what is reported

@dataclass(frozen=True)
class ShownComparison:
    """One comparison shown with the exact prompt the judge was given.

    ``row`` is the comparison's row of ``Run.order_dependence`` (``context_id, first, second,
    p_first_second, p_second_first, inconsistency, flips``) or of the agreement's disagreements
    (``context_id, x, y, human, n_x, n_y, n_tie, verdict, p_xy, p_yx, ...``); ``prompt`` is
    ``Run.prompt(context_id, first, second)``, ``first`` in position A (an order the run judged);
    ``truncated_chars`` the characters of the context kept when the run cut it to fit the judge
    (None: not cut).
    """

    row: Mapping[str, Any]
    first: str
    second: str
    prompt: ComparisonPrompt | None
    truncated_chars: int | None = None
    #: A panel's comparison has no prompt of its own (each member had one): instead, each
    #: member's p of ``first`` beating ``second``, debiased at its own tau* (None: not judged).
    members: Mapping[str, float | None] | None = None
    #: The judge's stored reasons for its verdicts on the pair (``explanations.Explanation``,
    #: ``Run.explanation``), None when none were asked for.
    explanation: Any | None = None


@dataclass(frozen=True)
class RunAudit:
    """Everything the report shows of one pairwise run, as the Python API computed it.

    ``position`` is ``Run.positional_bias(debias)``, ``diagnosis`` ``Run.position_diagnosis(debias)``,
    ``bias_raw``/``bias_at_tau`` ``Run.bias`` at tau = 0.5 and at the threshold used, ``length``
    ``Run.length_bias(debias)`` with ``length_points``/``length_curve`` from ``Run.length_points``;
    ``leaderboard`` is ``Run.leaderboard`` (None without systems, ``no_systems`` saying why, and
    ``rankings`` the per-context ``Run.rankings`` instead); ``evaluations`` one
    ``Run.evaluation`` per reference column; ``agreement`` ``Run.agreement`` and ``calibration``
    ``Run.calibrate`` (None with the reason in ``no_labels``/``no_calibration``).
    """

    name: str
    status: str
    partial_note: str | None
    dataset: Dataset
    settings: Mapping[str, Any]
    judge_key: str | None
    done: int
    total: int | None
    truncated_contexts: Mapping[str, int]
    method: str
    debias: str
    tau: float
    n_boot: int
    n_comparisons: int
    n_contexts: int
    position: Any
    diagnosis: Any
    bias_raw: pd.DataFrame
    bias_at_tau: pd.DataFrame
    probabilities: np.ndarray
    length: Any
    length_points: pd.DataFrame
    length_curve: pd.DataFrame
    leaderboard: Any | None = None
    no_systems: str | None = None
    rankings: pd.DataFrame | None = None
    evaluations: Sequence[Any] = ()
    agreement: Any | None = None
    no_labels: str | None = None
    calibration: Any | None = None
    no_calibration: str | None = None
    order_dependent: Sequence[ShownComparison] = ()
    n_order_pairs: int = 0
    disputed: Sequence[ShownComparison] = ()
    n_disputed: int = 0
    #: The threshold in words (``tau = 0.4123``; under per-context balancing ``tau`` is NaN and
    #: this gives the range of the contexts' tau*); "" reads ``tau``.
    threshold: str = ""
    #: A panel of judges (``Panel.definition()`` with each member's model and template): the
    #: report's setup shows the panel and its members instead of one judge and template.
    panel: Mapping[str, Any] | None = None


@dataclass(frozen=True)
class RunsCompared:
    """Two runs of the report side by side: ``Run.compare`` (A = ``run_a``), or None with the
    reason they were not compared (another dataset, no pair judged by both)."""

    run_a: str
    run_b: str
    comparison: Any | None = None
    reason: str | None = None
    #: Each run's threshold in words when it is not one tau (per-context balancing), else "".
    thresholds: str = ""


# ------------------------------------------------------------------------------- inert text

def inert(value: Any) -> str:
    """A string a person or a file controls, as HTML text that displays exactly what is stored
    and does nothing: invisible characters shown as code points (:func:`limits.visible`), then
    HTML-escaped, quotes included (so it is inert in attributes and in plotly's labels too)."""
    return html.escape(visible("" if value is None else str(value)), quote=True)


def _num(value: Any, spec: str = ".3f", missing: str = "n/a") -> str:
    """A number as the report prints it (``missing`` for None or NaN)."""
    if value is None:
        return missing
    try:
        x = float(value)
    except (TypeError, ValueError):
        return inert(value)
    if not np.isfinite(x):
        return missing
    return format(x, spec)


def _count(value: Any) -> str:
    return "n/a" if value is None or pd.isna(value) else f"{int(value):,}"


def _table(head: Sequence[str], rows: Sequence[Sequence[str]], *, caption: str = "",
           cls: str = "") -> str:
    """A table of cells that are HTML already (headers are the report's own words; every user
    string in a cell went through :func:`inert`)."""
    attr = f' class="{cls}"' if cls else ""
    out = [f"<table{attr}>"]
    if caption:
        out.append(f"<caption>{caption}</caption>")
    out.append("<thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>")
    for row in rows:
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def _pairs(rows: Sequence[tuple[str, str]]) -> str:
    """A two-column table of (what, value) rows."""
    return ('<table class="facts"><tbody>'
            + "".join(f"<tr><th>{k}</th><td>{v}</td></tr>" for k, v in rows)
            + "</tbody></table>")


def _because(reason: str | None, default: str) -> str:
    """A reason (a message that may name what a person named) as one inert sentence's end."""
    return inert((reason or default).strip().rstrip(".")) + "."


def _note(text: str, kind: str = "note") -> str:
    return f'<p class="{kind}">{text}</p>'


def _missing(heading: str, why: str) -> str:
    """A section whose result is missing: its heading and a note saying why."""
    return heading + _note(why)


# ------------------------------------------------------------------------------------ charts

class _Charts:
    """The report's figures: each one a ``<div>`` and the script that draws it with the one
    inlined plotly.js; ids are fixed by position so the same report is the same bytes."""

    def __init__(self) -> None:
        self.n = 0

    def html(self, fig, height: int) -> str:
        self.n += 1
        fig.update_layout(height=height, template="plotly_white",
                          margin=dict(l=10, r=10, t=max(30, fig.layout.margin.t or 0), b=10),
                          font=dict(family="system-ui, sans-serif"))
        return ('<div class="chart">'
                + fig.to_html(full_html=False, include_plotlyjs=False, div_id=f"chart-{self.n}",
                              config=PLOTLY_CONFIG, default_width="100%",
                              default_height=f"{height}px")
                + "</div>")


def _leaderboard_figure(frame: pd.DataFrame, strength_unit: str, level: float):
    import plotly.graph_objects as go

    systems = [inert(s) for s in frame["system"]]
    s, lo, hi = (frame[c].to_numpy(dtype=float) for c in
                 ("strength", "strength_ci_low", "strength_ci_high"))
    fig = go.Figure(go.Scatter(
        x=s, y=systems, mode="markers", marker=dict(size=9, color=_BLUE),
        error_x=dict(type="data", symmetric=False, array=np.nan_to_num(hi - s),
                     arrayminus=np.nan_to_num(s - lo), color=_BLUE),
        customdata=np.stack([lo, hi], axis=1),
        hovertemplate=("system %{y}<br>strength %{x:.3f}<br>"
                       f"{int(level * 100)}% interval [%{{customdata[0]:.3f}}, "
                       "%{customdata[1]:.3f}]<extra></extra>")))
    fig.update_layout(xaxis_title=inert(strength_unit), yaxis_title="system",
                      yaxis=dict(type="category", autorange="reversed"))
    return fig


def _histogram_figure(p: np.ndarray, tau: float, tau_star: float):
    import plotly.graph_objects as go

    counts, edges = np.histogram(p[np.isfinite(p)], bins=40, range=(0.0, 1.0))
    centres = (edges[:-1] + edges[1:]) / 2
    fig = go.Figure(go.Bar(x=centres, y=counts, width=edges[1] - edges[0], marker_color=_BLUE,
                           customdata=np.stack([edges[:-1], edges[1:]], axis=1),
                           hovertemplate=("p in [%{customdata[0]:.3f}, %{customdata[1]:.3f}): "
                                          "%{y} comparisons<extra></extra>")))
    lines = ((0.5, "0.5", "black", 0), (tau_star, "tau*", _GREEN, 1),
             (tau, "tau in use", _ORANGE, 2))
    # one threshold per context (tau NaN) is no single line
    for x, name, color, row in (line for line in lines if np.isfinite(line[0])):
        fig.add_vline(x=x, line_dash="dash", line_color=color)
        # Above the plot area, one row each: a label never sits on the bars.
        fig.add_annotation(x=x, y=1.0, xref="x", yref="paper", yanchor="bottom",
                           yshift=2 + 16 * row, text=name, showarrow=False, xanchor="left",
                           xshift=4, font=dict(color=color))
    fig.update_layout(xaxis_title="p = P(first position wins) (eq. 3)",
                      yaxis_title="comparisons", xaxis_range=[0, 1], bargap=0.05,
                      margin=dict(t=60))
    return fig


def _per_context_figure(raw: pd.DataFrame, at: pd.DataFrame, threshold: str):
    import plotly.graph_objects as go

    ids = [inert(c) for c in raw["context_id"]]
    fig = go.Figure()
    for frame, name, color in ((raw, "P(A) at tau = 0.5", _GREY),
                               (at, f"P(A) at {inert(threshold)}", _BLUE)):
        fig.add_trace(go.Bar(x=ids, y=frame["p_a"].to_numpy(dtype=float), name=name,
                             marker_color=color,
                             customdata=frame["n_comparisons"].to_numpy(),
                             hovertemplate=("context %{x}<br>" + name + " %{y:.3f}<br>"
                                            "on %{customdata} comparisons<extra></extra>")))
    fig.add_hline(y=0.5, line_dash="dash", line_color="black")
    fig.update_layout(barmode="group", xaxis=dict(type="category", title="context"),
                      yaxis=dict(range=[0, 1], title="P(A): share won by the first position"),
                      legend=dict(orientation="h", y=1.12))
    return fig


def _length_figure(points: pd.DataFrame, curve: pd.DataFrame, tau: float):
    import plotly.graph_objects as go

    if len(points) > MAX_SCATTER_POINTS:
        points = points.iloc[np.linspace(0, len(points) - 1, MAX_SCATTER_POINTS).astype(int)]
    fig = go.Figure(go.Scatter(x=points["log2_ratio"], y=points["p"], mode="markers",
                               name="comparisons",
                               marker=dict(size=5, opacity=0.4, color=_BLUE),
                               hovertemplate="log2 ratio %{x:.2f}<br>p %{y:.3f}<extra></extra>"))
    fig.add_trace(go.Scatter(x=curve["log2_ratio"], y=curve["p"], mode="lines",
                             name="logistic fit", line=dict(color=_ORANGE)))
    if np.isfinite(tau):  # one threshold per context is no single line
        fig.add_hline(y=tau, line_dash="dash", line_color=_ORANGE)
    fig.update_layout(showlegend=False, yaxis_range=[0, 1],
                      xaxis_title="log2(len A / len B), characters: > 0 when the first text is longer",
                      yaxis_title="p = P(first wins)")
    return fig


def _reliability_figure(reliability: Mapping[str, pd.DataFrame]):
    import plotly.graph_objects as go

    fig = go.Figure(go.Scatter(x=[0, 1], y=[0, 1], mode="lines", name="calibrated judge",
                               line=dict(color="black", dash="dash")))
    for key, name, color in (("raw", "raw p", _GREY), ("calibrated", "calibrated p (held out)",
                                                       _BLUE)):
        table = reliability.get(key)
        if table is None or len(table) == 0:
            continue
        used = table[table["n"] > 0]
        fig.add_trace(go.Scatter(x=used["mean_p"], y=used["frequency"], mode="lines+markers",
                                 name=name, line=dict(color=color), customdata=used["n"],
                                 hovertemplate=(name + ": mean p %{x:.3f}, share A wins "
                                                "%{y:.3f}, %{customdata} comparisons"
                                                "<extra></extra>")))
    fig.update_layout(xaxis=dict(range=[0, 1], title="mean predicted p in the bin"),
                      yaxis=dict(range=[0, 1], title="share of comparisons the humans gave A"),
                      legend=dict(orientation="h", y=1.12))
    return fig


# ----------------------------------------------------------------------------------- sections

def _judge_warning(audit: RunAudit) -> str:
    """The degenerate- or biased-judge warning with its numbers and remedy, or ''."""
    message = audit.diagnosis.message()
    if message is None:
        return ""
    remedy = audit.diagnosis.remedy()
    return ('<div class="warning"><strong>Judge warning.</strong> ' + inert(message)
            + (" " + inert(remedy) if remedy else "")
            + " Every result of this run rests on this judge.</div>")


def _at(audit: RunAudit, digits: int = 4) -> str:
    """The threshold the audit read the run at, in words (``tau = 0.4123`` or the per-context
    range of tau*)."""
    return audit.threshold or f"tau = {audit.tau:.{digits}f}"


def _with_ci(numbers: Mapping[str, Any], key: str) -> str:
    """A share or a kappa of the agreement summary with its 95% interval when it has one."""
    lo_hi = numbers.get(f"{key}_ci95")
    if not lo_hi:
        return _num(numbers[key])
    return f"{_num(numbers[key])} [{_num(lo_hi[0])}, {_num(lo_hi[1])}]"


def _rests_on(audit: RunAudit) -> str:
    """The line a result section carries when the judge warning applies."""
    if audit.diagnosis.message() is None:
        return ""
    return _note("This result rests on a judge that answers by position (see the judge warning "
                 "above and the positional bias below).", "caution")


def _settings_value(value: Any) -> str:
    if isinstance(value, str):
        return inert(value)
    return inert(json.dumps(value, sort_keys=True, default=str))


def _setup(audit: RunAudit, version: str, generated: str) -> str:
    ds, st = audit.dataset, audit.settings
    systems = sorted({c.system for ctx in ds.contexts for c in ctx.candidates if c.system})
    budget = st.get("budget")
    planned = "n/a" if audit.total is None else f"{int(audit.total):,}"
    rows = [
        ("Dataset", inert(ds.name)),
        ("Source", inert(ds.source) or "n/a"),
        ("Content hash", inert(ds.content_hash) or "n/a"),
        ("Contexts", f"{len(ds.contexts):,} in the dataset; {audit.n_contexts:,} with stored "
                     "comparisons"),
        ("Candidates", f"{ds.n_candidates:,} ({counted(len(systems), 'system')})"),
        ("Reference columns", ", ".join(inert(c) for c in ds.score_columns) or "none"),
    ]
    judge = [
        ("Model", inert(st.get("model"))),
        ("Judge key", inert(audit.judge_key) if audit.judge_key else
         "not recorded (no worker executed this run's comparisons)"),
        ("Label words", inert(json.dumps(st.get("label_words"), ensure_ascii=False))),
    ]
    template = [
        ("Template", inert(st.get("template_name"))),
        ("Aspect", f"{inert(st.get('aspect'))} (asked as &ldquo;more "
                   f"{inert(st.get('aspect_adjective'))}&rdquo;)"),
        ("Answer primer", f"<code>{inert(st.get('primer'))}</code>"),
    ]
    selection = [
        ("Pair selection", inert(st.get("strategy"))),
        ("Budget", "every ordered pair of each context" if budget is None
         else f"{int(budget):,} comparisons per context"),
        ("Seed", inert(st.get("seed"))),
        ("Run", f"{inert(audit.name)}, {inert(audit.status)}: {audit.done:,} of {planned} planned "
                f"comparisons; {audit.n_comparisons:,} match the dataset"),
        ("Contexts cut to fit the judge",
         ", ".join(f"{inert(c)} (first {n:,} characters kept)"
                   for c, n in sorted(audit.truncated_contexts.items())) or "none"),
    ]
    reading = [
        ("Ranking method", inert(audit.method)),
        ("Decision threshold", f"{inert(audit.debias)}: {inert(_at(audit))} (tau* = "
                               f"{audit.position.tau_star:.4f}, the balanced threshold over "
                               "all comparisons)"),
        ("Bootstrap", f"{audit.n_boot:,} replicates, 95% percentile intervals"),
        ("CompAssess", inert(version)),
        ("Report made", inert(generated)),
    ]
    if audit.panel is not None:
        return _panel_setup(audit, rows, reading)
    everything = _table(["setting", "value"],
                        [(inert(k), _settings_value(v)) for k, v in sorted(st.items())],
                        cls="settings")
    return ("<h3>Setup</h3>"
            '<div class="grid">'
            f"<div><h4>Data</h4>{_pairs(rows)}</div>"
            f"<div><h4>Judge</h4>{_pairs(judge)}</div>"
            f"<div><h4>Template and aspect</h4>{_pairs(template)}</div>"
            f"<div><h4>Selection and budget</h4>{_pairs(selection)}</div>"
            f"<div><h4>How the results are read</h4>{_pairs(reading)}</div>"
            "</div>"
            "<h4>Template text</h4>"
            f'<pre class="prompt">{inert(st.get("template_text"))}</pre>'
            "<details><summary>Every setting of the run, as stored</summary>"
            f"{everything}</details>")


def _leaderboard(audit: RunAudit, charts: _Charts) -> str:
    out = ["<h3>Leaderboard</h3>", _rests_on(audit)]
    board = audit.leaderboard
    if board is None:
        return "".join(out) + _rankings_summary(audit)
    info = board.to_dict()
    pct = int(board.level * 100)
    ref = board.reference
    frame = board.frame
    head = ["rank", "system", f"strength [{pct}% interval]",
            f"win rate [{pct}% interval] (share of comparisons won)",
            "P(best) (share of replicates ranked first)", "comparisons", "contexts",
            "mean length (characters)", "length-adjusted strength (joint GLM)",
            "length-adjusted win rate (joint GLM, against the field)"]
    if ref is not None:
        head.append(f"mean reference score ({inert(ref)})")
    baseline = board.baseline
    if baseline is not None:  # AlpacaEval's headline numbers, beside the system
        head[2:2] = [f"win rate vs {inert(baseline)} [{pct}% interval] (share of the comparisons "
                     "with the baseline won)", f"comparisons with {inert(baseline)}",
                     f"length-controlled win rate vs {inert(baseline)} (AlpacaEval 2.0's GLM, "
                     "&plusmn; its standard error)"]
    rows = []
    for r in frame.to_dict(orient="records"):
        against = ([f'{_num(r["win_rate_vs_baseline"])} [{_num(r["win_rate_vs_baseline_low"])}, '
                    f'{_num(r["win_rate_vs_baseline_high"])}]', _count(r["n_vs_baseline"]),
                    _lc_cell(r)] if baseline is not None else [])
        row = ["" if pd.isna(r["rank"]) else str(int(r["rank"])), inert(r["system"]), *against,
               f'{_num(r["strength"])} [{_num(r["strength_ci_low"])}, '
               f'{_num(r["strength_ci_high"])}]',
               f'{_num(r["win_rate"])} [{_num(r["win_rate_ci_low"])}, '
               f'{_num(r["win_rate_ci_high"])}]',
               _num(r["p_best"]), _count(r["n_comparisons"]), _count(r["n_contexts"]),
               _num(r["mean_length"], ".1f"), _num(r["lc_strength"]), _num(r["lc_win_rate"])]
        if ref is not None:
            row.append(_num(r.get("mean_reference")))
        rows.append(row)
    caption = (f"{counted(len(frame), 'system')}, {counted(board.n_comparisons, 'comparison')} "
               "over "
               f"{counted(board.n_contexts, 'context')}; strength = {inert(info['strength_unit'])} "
               f"at {inert(_at(audit))}; {pct}% percentile intervals of {board.n_boot:,} "
               "bootstrap replicates (contexts resampled, then the comparisons within each).")
    if baseline is not None:
        caption += (f" Against the baseline {inert(baseline)}: the share of a system's comparisons "
                    "with it that the system won (both orders, every context where both "
                    "appear), its interval from the same bootstrap; the baseline's own row is "
                    "blank (a system is not compared with itself).")
    out.append(_table(head, rows, caption=caption))
    if board.system_spearman_x100 is not None:
        out.append(_note(f"System-level Spearman x100 of strength against the mean "
                         f"&lsquo;{inert(ref)}&rsquo;: {_num(board.system_spearman_x100, '.1f')} "
                         f"(Kendall x100 {_num(board.system_kendall_x100, '.1f')}) over "
                         f"{counted(len(frame), 'system')}."))
    for note in board.notes:
        out.append(_note(inert(note)))
    out.append(charts.html(_leaderboard_figure(frame, info["strength_unit"], board.level),
                           max(220, 60 + 28 * len(frame))))
    out.append(_note(f"Each point is a system's strength; the bars are its {pct}% interval."))
    return "".join(out)


def _rankings_summary(audit: RunAudit) -> str:
    """Without systems: one row per context, its first- and last-ranked candidates."""
    out = [_note(f"No leaderboard: {_because(audit.no_systems, 'the candidates have no system')} "
                 f"Per-context rankings by {inert(audit.method)} at {inert(_at(audit))} "
                 "instead (rank 1 = best).")]
    frame = audit.rankings
    if frame is None or frame.empty:
        return "".join(out) + _note("No ranking: no context has stored comparisons.")
    rows = []
    for context_id, group in frame.groupby("context_id", sort=False):
        group = group[group["rank"].notna()].sort_values("rank", kind="stable")  # ranked only
        if group.empty:
            continue
        best, worst = group.iloc[0], group.iloc[-1]
        rows.append([inert(context_id), f"{len(group):,}",
                     f"{inert(best['candidate_id'])} ({_num(best['score'])})",
                     f"{inert(worst['candidate_id'])} ({_num(worst['score'])})"])
    out.append(_table(["context", "candidates ranked", "ranked first (score)",
                       "ranked last (score)"], rows,
                      caption=f"Scores: {inert(audit.method)} at {inert(_at(audit))}, per "
                              "context."))
    return "".join(out)


def _positional_bias(audit: RunAudit, charts: _Charts) -> str:
    pb = audit.position
    out = ["<h3>Positional bias</h3>",
           _note(f"P(A): share of {counted(pb.n_comparisons, 'comparison')} won by the first "
                 "position "
                 "(eq. 8); P(B) = 1 &minus; P(A); 0.5 = no positional bias. Flip rate: share of "
                 f"the {counted(pb.n_pairs_both_orders, 'pair')} judged in both orders whose "
                 "verdict "
                 "changes with the order.")]
    diagnosis = audit.diagnosis
    out.append(_table(
        ["threshold", "P(A)", "P(B)", "flip rate"],
        [["tau = 0.5 (raw, eq. 3)", _num(pb.p_a_raw), _num(pb.p_b_raw),
          _num(diagnosis.flip_rate_raw)],
         [f"{inert(_at(audit))} ({inert(audit.debias)}; eq. 9-10)", _num(pb.p_a), _num(pb.p_b),
          _num(pb.flip_rate)]],
        caption=f"tau* = {pb.tau_star:.4f}: the balanced threshold (the median of p), at which "
                "P(A) = P(B) = 0.5."))
    if diagnosis.message() is not None:
        out.append(_note(inert(diagnosis.message()), "caution"))
    else:
        out.append(_note("No judge warning: P(A) and P(B) at tau = 0.5 are within the bounds a "
                         "content-reading judge stays in, and the verdicts mostly hold in both "
                         "orders."))
    out.append(charts.html(_histogram_figure(audit.probabilities, pb.tau, pb.tau_star), 320))
    out.append(_note(f"Histogram of the {len(audit.probabilities):,} p; right of a line the "
                     "first position wins at that threshold."))
    raw, at = audit.bias_raw, audit.bias_at_tau
    rows = []
    for r, a in zip(raw.to_dict(orient="records"), at.to_dict(orient="records")):
        rows.append([inert(r["context_id"]), _count(r["n_comparisons"]), _num(r["p_a"]),
                     _num(r["p_b"]), _num(a["p_a"]), _num(a["p_b"]), _num(r["flip_rate"]),
                     _num(a["flip_rate"]), _count(r["n_pairs_both_orders"])])
    out.append("<h4>Per context</h4>")
    out.append(_table(["context", "comparisons", "P(A) raw", "P(B) raw",
                       f"P(A) at {inert(_at(audit, 3))}", f"P(B) at {inert(_at(audit, 3))}",
                       "flip rate raw", f"flip rate at {inert(_at(audit, 3))}",
                       "pairs judged in both orders"], rows))
    if len(raw):
        out.append(charts.html(_per_context_figure(raw, at, _at(audit, 3)), 320))
    return "".join(out)


def _length_bias(audit: RunAudit, charts: _Charts) -> str:
    lb = audit.length
    out = ["<h3>Length bias</h3>", _pairs([
        ("Longer text wins", f"{_num(lb.longer_wins)} (share of the {lb.n_length_differs:,} "
                             f"comparisons whose texts differ in length, at "
                             f"{inert(_at(audit))})"),
        ("Slope", f"{_num(lb.slope_per_doubling, '+.3f')} log-odds of &lsquo;A wins&rsquo; per "
                  "doubling of len(A) / len(B) (logistic fit of p)"),
        ("Position at equal length", f"{_num(lb.position_log_odds, '+.3f')} log-odds of "
                                     "&lsquo;A wins&rsquo; (the same fit's intercept)"),
        ("Lengths", f"characters; mean |log2 length ratio| {_num(lb.mean_log2_ratio_abs, '.2f')} "
                    f"over {counted(lb.n_comparisons, 'comparison')}"),
    ])]
    board = audit.leaderboard
    if board is not None:
        lc = board.length_controlled
        out.append(_note(f"Joint length-adjusted GLM of the systems (CompAssess's, one shared "
                         f"length slope; not AlpacaEval's estimator): length term "
                         f"{_num(lc.length_coef, '+.3f')} log-odds, position term "
                         f"{_num(lc.position_coef, '+.3f')} log-odds; the length-adjusted "
                         "strengths and win rates are in the leaderboard."))
        if board.alpaca_lc is not None:
            out.append(_note("The length-controlled win rate against the baseline is "
                             f"{inert(board.alpaca_lc.estimator)}."))
    if len(audit.length_points):
        out.append(charts.html(_length_figure(audit.length_points, audit.length_curve,
                                              lb.tau), 300))
        shown = min(len(audit.length_points), MAX_SCATTER_POINTS)
        out.append(_note(f"{shown:,} of {counted(len(audit.length_points), 'comparison')} shown "
                         "(evenly "
                         "spaced in stored order when there are more); the curve is the logistic "
                         f"fit; dashed: {inert(_at(audit))}."))
    return "".join(out)


def _agreement(audit: RunAudit, charts: _Charts) -> str:
    heading, found = "<h3>Agreement with human labels</h3>", audit.agreement
    if found is None:
        return _missing(heading,
                        f"No human labels: {_because(audit.no_labels, 'none are stored')}")
    out = [heading, _rests_on(audit)]
    s = found.summary
    llm = s["llm_vs_human"]
    out.append(_note(f"Labels: {inert(found.labels)}; {counted(llm['n_pairs_matched'], 'pair')} "
                     "judged by "
                     f"both the judge and people ({llm['n_judgements']:,} human judgements, "
                     f"{llm['n_skipped']:,} skips left out); the judge's verdict on a pair is its "
                     "order-averaged p at the threshold, the humans' their majority."))
    rows = []
    for at, label in (("raw", "raw"), ("debiased", "at tau")):
        m = llm[at]
        tau_text = f"tau = {m['tau']:.4f}"
        where = (m.get("threshold") or tau_text) if at == "debiased" else tau_text
        rows.append([f"{label} ({inert(where)})",
                     _with_ci(m, "accuracy_without_ties"), _with_ci(m, "kappa_without_ties"),
                     _count(m["n_without_ties"]), _with_ci(m, "accuracy_with_ties"),
                     _with_ci(m, "kappa_with_ties"), _count(m["n_with_ties"]),
                     _count(m["n_human_ties"])])
    out.append(_table(["judge read", "raw agreement without ties (share)",
                       "Cohen's kappa without ties", "pairs", "raw agreement with ties (share)",
                       "Cohen's kappa with ties", "pairs", "human ties"], rows,
                      caption="[low, high]: 95% intervals, "
                              + inert(s["intervals"]["method"]) + ". Kappa counts every pair "
                              "in both orientations (the candidates' names cannot change it): "
                              + inert(s.get("kappa_chance_model", "")) + "."))
    for line in s.get("caution", []):
        out.append(_note(f"Small sample: {inert(line)}.", "caution"))
    pb, hh, rc = s["positional_bias"], s["human_human"], s["ranking_correlation"]
    facts = [("People's positional bias", f"{_num(pb['human_share_left'])} share of "
                                          f"{_count(pb['human_n'])} decisive judgements went to "
                                          "the left text")]
    if hh["n_items"]:
        facts.append(("Human vs human", f"{counted(hh['n_items'], 'pair')} with several "
                                        "annotators: "
                                        f"raw agreement {_num(hh['percent_agreement'])} "
                                        "(share), "
                                        f"Krippendorff's alpha {_num(hh['krippendorff_alpha'])}"
                      + (f", Cohen's kappa {_num(hh['cohen_kappa'])}"
                         if hh["cohen_kappa"] is not None else "")))
    if rc["n_used"]:
        facts.append(("Judge vs human-only ranking", f"Spearman x100 {_num(rc['spearman_x100'], '.1f')}"
                                                     f" (Bradley-Terry, mean over {rc['n_used']:,} "
                                                     "contexts)"))
    out.append(_pairs(facts))
    for note in llm.get("notes", []):
        out.append(_note(inert(str(note))))
    out.append(_calibration(audit, charts))
    return "".join(out)


def _calibration(audit: RunAudit, charts: _Charts) -> str:
    heading, report = "<h4>Calibration on the human labels</h4>", audit.calibration
    if report is None:
        return _missing(heading, f"No calibration: {_because(audit.no_calibration, 'no fit')}")
    out = [heading]
    cal, raw, deb, held = report.calibration, report.raw, report.debiased, report.calibrated
    out.append(_note(f"p_cal = sigmoid((logit p &minus; b) / T), fitted on {cal.n_comparisons:,} "
                     f"comparisons of {cal.n_pairs:,} labelled pairs: bias b = "
                     f"{_num(cal.bias)} log-odds, temperature T = {_num(cal.temperature)}. "
                     f"&lsquo;calibrated&rsquo; is scored on held-out folds ({report.folds} folds "
                     f"by pair, seed {report.seed})."))
    rows = [
        ["accuracy (share of comparisons, p &gt; 0.5)", *(_num(x.accuracy) for x in (raw, deb, held))],
        ["log-loss (nats per comparison)", *(_num(x.log_loss) for x in (raw, deb, held))],
        ["expected calibration error", *(_num(x.ece) for x in (raw, deb, held))],
        [f"pair accuracy, ties left out (pairs: {held.n_pairs:,})",
         *(_num(x.pair_accuracy) for x in (raw, deb, held))],
        ["pair Cohen's kappa, ties left out", *(_num(x.pair_kappa) for x in (raw, deb, held))],
    ]
    out.append(_table(["measure", "raw p", f"tau* = {report.tau:.3f} (no labels)",
                       "calibrated (held out)"], rows))
    for note in report.notes:
        out.append(_note(inert(str(note))))
    out.append(charts.html(_reliability_figure(report.reliability), 320))
    out.append(_note("Reliability diagram: each point is a bin of p; on the dashed diagonal the "
                     "judge's p is the share the humans confirm."))
    return "".join(out)


def _evaluation(audit: RunAudit) -> str:
    heading = "<h3>Evaluation against reference scores</h3>"
    if not audit.evaluations:
        return _missing(heading, "The dataset has no reference-score column: no evaluation "
                                 "against reference scores.")
    out = [heading, _rests_on(audit)]
    rows = []
    for report in audit.evaluations:
        for at, label in ((report.raw, "raw"), (report.debiased, "at tau")):
            where = (inert(_at(audit)) if at is report.debiased
                     else f"tau = {at.tau:.4f}")
            rows.append([inert(report.reference), f"{label} ({where})",
                         _num(at.spearman_x100, ".1f"), _num(at.kendall_x100, ".1f"),
                         _num(at.system_spearman_x100, ".1f"), _num(at.pooled_spearman_x100, ".1f"),
                         f"{_num(at.pairwise_accuracy)} ({counted(at.n_pairs_accuracy, 'pair')})",
                         f"{at.contexts_used:,} used, {at.contexts_skipped:,} skipped"])
    first = audit.evaluations[0]
    out.append(_table(["reference column", "judge read", "Spearman x100 (mean per context)",
                       "Kendall x100 (mean per context)", "system-level Spearman x100",
                       "pooled Spearman x100", "pairwise accuracy (share)", "contexts"], rows,
                      caption=f"Scores by {inert(first.method)} on {first.n_comparisons:,} "
                              f"comparisons over {first.n_contexts:,} context(s)."))
    notes = sorted({str(n) for report in audit.evaluations for n in report.notes})
    for note in notes:
        out.append(_note(inert(note)))
    return "".join(out)


def _kind(audit: RunAudit) -> str:
    return "Run" if audit.panel is None else "Panel of judges"


def _panel_setup(audit: RunAudit, data_rows: list, reading: list) -> str:
    """The setup of a panel's section: the data, how the members are combined, the members
    (each with its model, template and weight) and how the results are read."""
    pd_ = audit.panel
    combine = {"poe": "product of experts on the members' debiased log-odds",
               "vote": "weighted majority vote of the members' debiased verdicts"}
    panel_rows = [
        ("Panel", f"{inert(audit.name)}, {inert(audit.status)}: {audit.n_comparisons:,} ordered "
                  "comparisons judged by at least one member"),
        ("Aspect", inert(pd_.get("aspect"))),
        ("Combination", inert(combine.get(pd_.get("combine"), pd_.get("combine")))),
        ("Weights", inert(str(pd_.get("weights")))),
        ("Each member's p", inert(pd_.get("scaling")) + " (balanced: debiased at the member's "
                            "own tau*; calibrated: on the stored human labels)"),
    ]
    members = _table(["member run", "model", "template", "weight (sums to 1)", "comparisons"],
                     [(inert(m["run"]), inert(m.get("model")), inert(m.get("template")),
                       _num(m["weight"]), f"{int(m['n_comparisons']):,}")
                      for m in pd_.get("members", [])])
    return ("<h3>Setup</h3>"
            '<div class="grid">'
            f"<div><h4>Data</h4>{_pairs(data_rows)}</div>"
            f"<div><h4>Panel of judges</h4>{_pairs(panel_rows)}</div>"
            f"<div><h4>How the results are read</h4>{_pairs(reading)}</div>"
            "</div>"
            f"<h4>Members</h4>{members}"
            + _note("Each member's template, prompts and settings are in its own run's report."))


def _prompt_block(shown: ShownComparison) -> str:
    if shown.prompt is None:  # a panel's comparison: its members' p, each with its own prompt
        members = shown.members or {}
        return ("<details><summary>Each member's p of " + inert(shown.first) + " (position A) "
                "beating " + inert(shown.second) + ", debiased at the member's own tau*</summary>"
                + _pairs([(inert(name), "not judged" if p is None else _num(p))
                          for name, p in members.items()])
                + _note("The exact prompts are in the members' own reports.") + "</details>")
    cut = ("" if shown.truncated_chars is None else
           _note(f"The context was cut to its first {shown.truncated_chars:,} characters to fit the "
                 "judge; this is the prompt it was given."))
    return (f"<details><summary>The exact prompt with {inert(shown.first)} in position A and "
            f"{inert(shown.second)} in position B</summary>{cut}"
            f'<pre class="prompt">{inert(shown.prompt.text)}</pre>'
            f'<p class="label">Answer primer the judge continues:</p>'
            f'<pre class="prompt">{inert(shown.prompt.primer)}</pre></details>'
            + _reasons_block(shown.explanation))


def _lc_cell(r: Mapping[str, Any]) -> str:
    """AlpacaEval's length-controlled win rate against the baseline with its standard error."""
    se = r.get("lc_win_rate_vs_baseline_se")
    if se is None or not np.isfinite(se):
        return _num(r["lc_win_rate_vs_baseline"])
    return f'{_num(r["lc_win_rate_vs_baseline"])} &plusmn; {_num(se)}'


def _reasons_block(explanation: Any | None) -> str:
    """The judge's stored reasons for its verdicts on a pair, each order (none: "")."""
    orders = [o for o in (explanation.orders if explanation is not None else ())
              if o.text is not None]
    if not orders:
        return ""
    parts = "".join(f'<p class="label">{inert(explanation.summary(o))}:</p>'
                    f'<pre class="prompt">{inert(o.text)}</pre>' for o in orders)
    flag = ("" if explanation.contradiction is None else
            f'<div class="warning"><strong>Contradiction.</strong> '
            f'{inert(explanation.contradiction)}</div>')
    return (f"<details><summary>The judge's {REASONS_LABEL} (they never change p)</summary>"
            f"{_note(REASONS_NOTE)}{flag}{parts}</details>")


def _order_dependent(audit: RunAudit) -> str:
    heading = "<h3>Most order-dependent comparisons</h3>"
    if not audit.order_dependent:
        return _missing(heading, "No pair was judged in both orders, so order dependence "
                                 "cannot be measured.")
    out = [heading]
    out.append(_note(f"The {len(audit.order_dependent)} most order-dependent of "
                     f"{counted(audit.n_order_pairs, 'pair')} judged in both orders: inconsistency "
                     "= "
                     "|p(first beats second) &minus; (1 &minus; p(second beats first))|, 0 for a "
                     "judge that ignores the order."))
    for k, shown in enumerate(audit.order_dependent, 1):
        r = shown.row
        verdict = (f"the verdict flips with the order at {inert(_at(audit))}" if r["flips"]
                   else f"the same winner in both orders at {inert(_at(audit))}")
        out.append(f'<div class="example"><h4>{k}. Context {inert(r["context_id"])}: '
                   f'{inert(r["first"])} vs {inert(r["second"])}</h4>'
                   + _pairs([("p(first beats second)", _num(r["p_first_second"])),
                             ("p(second beats first)", _num(r["p_second_first"])),
                             ("inconsistency", _num(r["inconsistency"])),
                             ("verdict", verdict)])
                   + _prompt_block(shown) + "</div>")
    return "".join(out)


def _disputed(audit: RunAudit) -> str:
    heading = "<h3>Most human-disputed comparisons</h3>"
    if audit.agreement is None:
        return _missing(heading, "No human labels: nothing to dispute.")
    if not audit.disputed:
        return _missing(heading, f"The judge at {inert(_at(audit))} agrees with the humans' "
                                 "majority on every labelled pair it judged.")
    out = [heading]
    out.append(_note(f"The {len(audit.disputed)} of {counted(audit.n_disputed, 'pair')} where the "
                     f"humans' "
                     f"majority differs from the judge at {inert(_at(audit))}, the judge's most "
                     "confident first."))
    for k, shown in enumerate(audit.disputed, 1):
        r = shown.row
        out.append(f'<div class="example"><h4>{k}. Context {inert(r["context_id"])}: '
                   f'{inert(r["x"])} vs {inert(r["y"])}</h4>'
                   + _pairs([("people's majority", f"{inert(r['human'])} (votes: "
                                                   f"{inert(r['x'])} {_count(r['n_x'])}, "
                                                   f"{inert(r['y'])} {_count(r['n_y'])}, tie "
                                                   f"{_count(r['n_tie'])})"),
                             ("judge's verdict", inert(r["verdict"])),
                             (f"p({inert(r['x'])} first beats {inert(r['y'])})", _num(r["p_xy"])),
                             (f"p({inert(r['y'])} first beats {inert(r['x'])})", _num(r["p_yx"]))])
                   + _prompt_block(shown) + "</div>")
    return "".join(out)


def _run_section(k: int, audit: RunAudit, charts: _Charts, version: str, generated: str) -> str:
    partial = _note(inert(audit.partial_note), "caution") if audit.partial_note else ""
    return (f'<section id="run-{k}"><h2>{_kind(audit)} {k}: {inert(audit.name)}</h2>'
            + _judge_warning(audit) + partial
            + _setup(audit, version, generated)
            + _leaderboard(audit, charts)
            + _positional_bias(audit, charts)
            + _length_bias(audit, charts)
            + _agreement(audit, charts)
            + _evaluation(audit)
            + _order_dependent(audit)
            + _disputed(audit)
            + "</section>")


def _comparisons(compared: Sequence[RunsCompared]) -> str:
    out = ['<section id="compare"><h2>The runs compared</h2>']
    for c in compared:
        a, b = inert(c.run_a), inert(c.run_b)
        out.append(f"<h3>{a} (A) and {b} (B)</h3>")
        result = c.comparison
        if result is None:
            out.append(_note(f"Not compared: {_because(c.reason, 'no reason given')}"))
            continue
        out.append(_pairs([
            ("Ordered pairs judged by both", f"{result.n_shared:,} (of {result.n_a:,} and "
                                             f"{counted(result.n_b, 'comparison')})"),
            ("Thresholds", inert(c.thresholds) if c.thresholds
             else f"A: tau = {result.tau_a:.4f}; B: tau = {result.tau_b:.4f}"),
            ("Verdict agreement", f"{_num(result.agreement)} (share of shared pairs)"),
            ("Cohen's kappa of the verdicts", _num(result.kappa)),
            ("Pearson r of p on shared pairs", _num(result.p_pearson)),
            ("P(A) at each run's tau", f"A: {_num(result.p_a_first)}; B: {_num(result.p_b_first)}"),
            (f"Rank Spearman x100 ({inert(result.method)})",
             f"{_num(result.rank_spearman_x100, '.1f')} (mean over {result.n_contexts_ranked:,} "
             "contexts)"),
            ("System-level Spearman x100", f"{_num(result.system_spearman_x100, '.1f')} "
                                           f"({counted(result.n_systems, 'system')})"),
        ]))
        dis = result.disagreements
        if len(dis):
            rows = [[inert(r["context_id"]), inert(r["first"]), inert(r["second"]),
                     _num(r["p_a"]), _num(r["p_b"]), inert(r["winner_a"]), inert(r["winner_b"])]
                    for r in dis.head(10).to_dict(orient="records")]
            out.append(_table(["context", "first", "second", "p in A", "p in B", "winner in A",
                               "winner in B"], rows,
                              caption=f"The {min(len(dis), 10)} most confident of {len(dis):,} "
                                      "pairs with different verdicts."))
    out.append("</section>")
    return "".join(out)


METHODS_TEXT = (
    "<p>A judge LLM is shown a context and two candidate texts, A and B, and asked which is better "
    "for the aspect; the probability that A wins is read from its next-token distribution over the "
    "two label words, p = P(w<sub>A</sub>) / (P(w<sub>A</sub>) + P(w<sub>B</sub>)): the "
    "prompt-based classifier of eq. 3 of Liusie, Manakul &amp; Gales, &ldquo;LLM Comparative "
    "Assessment: Zero-shot NLG Evaluation through Pairwise Comparisons using Large Language "
    "Models&rdquo;, EACL 2024. A comparison is won by A when p &gt; tau. The win ratio of a "
    "candidate is the share of its comparisons it won (eq. 6). The positional bias is P(A), the "
    "share of comparisons won by the first position, and P(B) = 1 &minus; P(A) (eq. 8); it is "
    "removed by reweighting the probabilities (eq. 9) and deciding at the balanced threshold "
    "tau*, the median of p, at which P(A) = P(B) = 0.5 (eq. 10). The flip rate is the share of "
    "pairs judged in both orders whose verdict changes with the order.</p>"
    "<p>Scores beyond the win ratio: the average probability of winning; Bradley-Terry strengths "
    "fitted to the soft outcomes (Bradley &amp; Terry, 1952; P(s beats t) = 1 / (1 + "
    "exp(t &minus; s))); and the closed-form Gaussian product of experts of Liusie, Raina, "
    "Fathullah &amp; Gales, &ldquo;Efficient LLM Comparative Assessment: a Product of Experts "
    "Framework for Pairwise Comparisons&rdquo;, 2024. The leaderboard pools the comparisons of "
    "each pair of systems over the contexts; its 95% percentile intervals come from a two-stage "
    "bootstrap that resamples contexts, then the comparisons within each.</p>"
    "<p>Length bias is the share of comparisons won by the longer text, and the slope of a "
    "logistic fit of p on log2(len A / len B). The length-controlled win rate against a "
    "baseline is AlpacaEval 2.0's (Dubois, Galambosi, Liang &amp; Hashimoto, "
    "&ldquo;Length-Controlled AlpacaEval: A Simple Way to Debias Automatic Evaluators&rdquo;, "
    "2024): one GLM per system against the baseline, logit pref = w<sub>len</sub> "
    "tanh(&Delta;len / sd) + w<sub>diff</sub> &middot; difficulty + w<sub>system</sub>, L1 and "
    "5-fold cross-validated as alpaca_eval's glm_winrate, predicted at equal length and averaged "
    "over the system's contexts, regularised toward the baseline (AlpacaEval's weight 0.2) only "
    "when the run holds verbose and concise rewrites of the baseline. The "
    "length-adjusted strengths are CompAssess's own joint GLM over all systems: logit p = "
    "theta<sub>A</sub> &minus; theta<sub>B</sub> + gamma &middot; tanh(d / sd(d)) + b with d = "
    "log(len A / len B), read with the length and position terms set to zero.</p>"
    "<p>Against human A/B labels the judge's order-averaged verdict on each pair is compared with "
    "the humans' majority (accuracy and Cohen's kappa, with and without ties); the calibration "
    "fits a bias and a temperature of the judge's log-odds on the labels (Platt scaling), scored "
    "on held-out folds of pairs. Against reference scores, each context's ranking is correlated "
    "with the reference (Spearman and Kendall x100, mean over contexts), at system level and "
    "pooled; pairwise accuracy is the share of comparisons whose verdict agrees with the "
    "reference order.</p>")

_CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:0 auto;max-width:1100px;
padding:1rem 1.5rem 4rem;color:#212529;line-height:1.45}
h1{font-size:1.7rem}h2{border-bottom:2px solid #dee2e6;padding-bottom:.2rem;margin-top:2.5rem}
h3{margin-top:2rem}h4{margin:1rem 0 .4rem}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.9rem}
table:not(.facts){display:block;max-width:100%;overflow-x:auto}
th,td{border:1px solid #dee2e6;padding:.25rem .5rem;text-align:left;vertical-align:top}
thead th{background:#f1f3f5}caption{caption-side:bottom;text-align:left;color:#495057;
font-size:.85rem;padding-top:.3rem}
table.facts{width:100%;table-layout:fixed}
table.facts th{background:#f8f9fa;font-weight:600;width:11rem}
td{overflow-wrap:anywhere}
table.settings td{font-family:ui-monospace,monospace;font-size:.8rem;white-space:pre-wrap;
word-break:break-word}
.grid{display:grid;grid-template-columns:repeat(auto-fit,minmax(440px,1fr));gap:0 1.5rem}
pre.prompt{white-space:pre-wrap;word-break:break-word;background:#f8f9fa;border:1px solid #dee2e6;
padding:.6rem;font-size:.85rem;max-height:28rem;overflow:auto}
.warning{background:#fff4e6;border:2px solid #e8590c;padding:.6rem .8rem;margin:1rem 0}
p.caution{background:#fff9db;border-left:4px solid #f08c00;padding:.3rem .6rem}
p.note{color:#343a40}p.label{margin:.3rem 0;font-size:.85rem;color:#495057}
.example{border-top:1px solid #e9ecef;padding-top:.3rem}
.chart{margin:.5rem 0 1rem}
nav ol{columns:2}
"""


def _what_is_assessed(audits: Sequence[RunAudit]) -> str:
    """The report's subject counted right: "1 run", "2 runs", "a panel of 2 members", "1 run
    and a panel of 3 members"."""
    runs = sum(1 for a in audits if a.panel is None)
    panels = [len(a.panel.get("members", ())) for a in audits if a.panel is not None]
    parts = ([f"{runs} run" + ("s" if runs != 1 else "")] if runs else []) + [
        f"a panel of {n} member" + ("s" if n != 1 else "") for n in panels]
    return " and ".join(parts)


def render_report(audits: Sequence[RunAudit], compared: Sequence[RunsCompared] = (), *,
                  version: str, generated_at: datetime) -> str:
    """The report of ``audits`` (one section per run, in order) and ``compared`` (the pairs of
    them compared on the same data) as one HTML document, made at ``generated_at`` by CompAssess
    ``version``. The same arguments give the same text."""
    from plotly.offline import get_plotlyjs

    if not audits:
        raise ValueError("an audit report needs at least one run")
    when = generated_at.astimezone(timezone.utc) if generated_at.tzinfo else \
        generated_at.replace(tzinfo=timezone.utc)
    generated = when.strftime("%Y-%m-%d %H:%M:%S UTC")
    charts = _Charts()
    names = ", ".join(inert(a.name) for a in audits)
    sections = [_run_section(k, a, charts, version, generated) for k, a in enumerate(audits, 1)]
    toc = "".join(f'<li><a href="#run-{k}">{_kind(a)} {k}: {inert(a.name)}</a></li>'
                  for k, a in enumerate(audits, 1))
    if compared:
        toc += '<li><a href="#compare">The runs compared</a></li>'
        sections.append(_comparisons(compared))
    toc += '<li><a href="#methods">Methods</a></li>'
    warned = [a for a in audits if a.diagnosis.message() is not None]
    summary = (f'<div class="warning"><strong>Judge warning</strong> for '
               f'{", ".join(inert(a.name) for a in warned)}: its verdicts follow the position of '
               "the texts; see the run's positional bias.</div>") if warned else ""
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>CompAssess audit report: {names}</title><style>{_CSS}</style>"
        "<script>window.PlotlyConfig = {MathJaxConfig: 'local'};</script>"
        f"<script>{get_plotlyjs()}</script></head><body>"
        f"<header><h1>Audit report: {names}</h1>"
        f"<p>LLM comparative assessment of {_what_is_assessed(audits)}, made {inert(generated)} "
        f"by CompAssess {inert(version)}. This file is self-contained: it fetches nothing, and "
        "every text from the data is shown as stored, never run.</p>"
        f"{summary}<nav><ol>{toc}</ol></nav></header>"
        + "".join(sections)
        + f'<section id="methods"><h2>Methods</h2>{METHODS_TEXT}</section>'
        "</body></html>\n")
