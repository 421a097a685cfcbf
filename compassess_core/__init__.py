"""CompAssess: LLM comparative assessment (Liusie et al.), from Python.

    import compassess_core as ca

    store = ca.open_store(":memory:")             # a throwaway store; a .db path or a URL persists
    run = store.run("assets/sample_summeval.csv", aspect="coherence", contexts=1)
    run.rankings(method="bradley-terry", debias="balanced")   # pandas DataFrame
    run.evaluation().debiased.spearman_x100                    # typed report

The public names are listed in ``__all__`` (walkthrough: docs/python.md); they live in
:mod:`compassess_core.api` (a package, one module per object) and are imported on first use, so ``import compassess_core`` stays
cheap (no pandas, torch or transformers until a name is used). ``RANKING_METHODS`` and
``SELECTION_STRATEGIES`` are the names ``Run.rankings(method=...)`` and ``Store.run(strategy=...)``
accept, ``JOB_KINDS`` the kinds of background job ``Store.job(KIND, target)`` starts. Its modules load on first use too (``ca.agreement.SMALL_SAMPLE_PAIRS``). Everything else
in the package is internal.

The engine modules of this package must never import ``streamlit`` or the ``db`` package:
results leave the engine only through the :class:`compassess_core.runs.sink.ResultSink` interface.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

__all__ = [
    # a store and the data in it
    "open_store", "Store", "load_candidates", "Dataset", "LabelsImported", "Deleted",
    # annotation campaigns
    "Campaign", "CampaignExport",
    # panels of judges and the leaderboard of judges
    "Panel", "PanelMember", "JudgesLeaderboard", "Verdicts",
    # runs: settings, execution, progress
    "Run", "RunSettings", "run_settings", "score_settings", "ProgressBar", "Reporter", "Progress",
    "RunProgress", "RunSummary", "RANKING_METHODS", "SELECTION_STRATEGIES",
    # background jobs (runs, tunings, the judge's reasons): Store.job(KIND, target)
    "Job", "JobStatus", "JOB_KINDS",
    # the judge's wording tuned without labels, and its reasons
    "Tuning", "TuningPlan", "TuningResult", "TuningOptions", "Wording", "Explanation",
    "OrderReasons",
    # what a run is asked to do, typed (run_settings, score_settings, Store.run, Store.score)
    "ModelOptions", "ComparativeOptions", "ScoringOptions", "AbsoluteOptions",
    "GenerationOptions",
    # what a run reads back as
    "EvaluationReport", "Evaluation", "ScoringEvaluation", "AbsoluteEvaluation", "Agreement",
    "Leaderboard", "RunComparison", "Calibration", "CalibrationReport", "FusedRanking", "RunAudit",
    # errors
    "CompAssessError", "InputError", "ObjectChanged", "ValidationError", "Problem", "RunCancelled",
    "RunInterrupted",
    "NoSystemsError",
]

if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names load on first use
    from .api import *  # noqa: F403


#: Modules that lived directly in this package before it was split into packages by concern:
#: ``ca.agreement`` (notebooks, docs of earlier versions) still finds ``ca.stats.agreement``.
_MOVED_MODULES: dict[str, str] = {
    'absolute': 'runs.absolute',
    'access': 'people.access',
    'agreement': 'stats.agreement',
    'agreement_stats': 'stats.agreement_stats',
    'analysis': 'stats.analysis',
    'annotation': 'people.annotation',
    'bias': 'stats.bias',
    'calibration': 'stats.calibration',
    'campaigns': 'people.campaigns',
    'comparative': 'runs.comparative',
    'compare': 'stats.compare',
    'context_window': 'runs.context_window',
    'data': 'data.candidates',
    'diagnosis': 'stats.diagnosis',
    'efficient': 'stats.efficient',
    'explanations': 'runs.explanations',
    'export': 'data.export',
    'fusion': 'stats.fusion',
    'judges_board': 'stats.judges_board',
    'labels': 'data.labels',
    'leaderboard': 'stats.leaderboard',
    'length_bias': 'stats.length_bias',
    'markup': 'data.markup',
    'memory': 'judges.memory',
    'metrics': 'stats.metrics',
    'model_catalog': 'judges.model_catalog',
    'models': 'judges.models',
    'options': 'runs.options',
    'pacing': 'runs.pacing',
    'paired': 'stats.paired',
    'panel': 'stats.panel',
    'prompts': 'runs.prompts',
    'ranking': 'stats.ranking',
    'report': 'report.audit',
    'run_kinds': 'runs.run_kinds',
    'run_loop': 'runs.run_loop',
    'scoring': 'runs.scoring',
    'selection': 'runs.selection',
    'settings': 'runs.settings',
    'sink': 'runs.sink',
    'solvers': 'stats.solvers',
    'speed': 'judges.speed',
    'tables': 'data.tables',
    'tuning': 'runs.tuning',
}


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import api
        value = getattr(api, name)
        globals()[name] = value
        return value
    # A module of the package by its attribute (``ca.agreement.SMALL_SAMPLE_PAIRS``), imported
    # on first use as ``import compassess_core.stats.agreement`` would.
    import importlib.util
    if name in _MOVED_MODULES:
        return importlib.import_module(f"{__name__}.{_MOVED_MODULES[name]}")
    if not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module 'compassess_core' has no attribute '{name}'")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
