"""Figure builders (one module per study) and export; every public name is re-exported here.

Builders take tidy DataFrames (or an Evaluation) and return a ``plotly.graph_objects.Figure``;
they never show it.
"""

from memlab.output.figures.answers import rate_bars, replies_table, turn_time_bars
from memlab.output.figures.benchmark import SYSTEM_COLOURS, stage_bars, stage_frame
from memlab.output.figures.drift import DRIFT_METRICS, SYSTEM_SYMBOLS, budget_curves, difference_curves
from memlab.output.figures.explain import candidate_bars, candidate_frame
from memlab.output.figures.export import (
    export_figure,
    export_static_batch,
    find_browser,
    plotly_js_path,
    static_export,
    write_html,
    write_static,
)
from memlab.output.figures.retrieval import (
    DATASET_PATTERNS,
    RETRIEVER_METRICS,
    TEXT_FORMATS,
    fusion_landscape_figure,
    retriever_bars,
)
from memlab.output.figures.scale import robustness_ends, scale_curve
from memlab.output.figures.style import (
    BROWSER_NAMES,
    DIVERGING,
    FEASIBLE_SCALE,
    FONT,
    KIND_COLOURS,
    OKABE_ITO,
    SEQUENTIAL,
    STATIC_FORMATS,
    days,
    fit_titles,
    html_text,
    legend_below,
    marked_line,
    short_text,
    style,
    text_width,
    threshold_line,
    wrap_label,
)
from memlab.output.figures.tuning import (
    bonus_curve,
    feasibility_heatmap,
    headroom_heatmap,
    margin_bars,
    margin_frame,
    question_bars,
    question_frame,
    question_labels,
    threshold_bonus_plane,
)

__all__ = [
    "BROWSER_NAMES",
    "DATASET_PATTERNS",
    "DIVERGING",
    "DRIFT_METRICS",
    "FEASIBLE_SCALE",
    "FONT",
    "KIND_COLOURS",
    "OKABE_ITO",
    "RETRIEVER_METRICS",
    "SEQUENTIAL",
    "STATIC_FORMATS",
    "SYSTEM_COLOURS",
    "SYSTEM_SYMBOLS",
    "TEXT_FORMATS",
    "bonus_curve",
    "budget_curves",
    "candidate_bars",
    "candidate_frame",
    "days",
    "difference_curves",
    "export_figure",
    "export_static_batch",
    "feasibility_heatmap",
    "find_browser",
    "fit_titles",
    "fusion_landscape_figure",
    "headroom_heatmap",
    "html_text",
    "legend_below",
    "margin_bars",
    "margin_frame",
    "marked_line",
    "plotly_js_path",
    "question_bars",
    "question_frame",
    "question_labels",
    "rate_bars",
    "replies_table",
    "retriever_bars",
    "robustness_ends",
    "scale_curve",
    "short_text",
    "stage_bars",
    "stage_frame",
    "static_export",
    "style",
    "text_width",
    "threshold_bonus_plane",
    "threshold_line",
    "turn_time_bars",
    "wrap_label",
    "write_html",
    "write_static",
]
