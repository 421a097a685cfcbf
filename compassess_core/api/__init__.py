"""The Python API: everything ``compassess`` does, for notebooks and scripts.

    import compassess_core as ca

    store = ca.open_store(":memory:")          # or a .db path, a URL, or None for the default store
    run = store.run("assets/sample_summeval.csv", aspect="coherence", contexts=1)
    run.rankings(method="bradley-terry", debias="balanced")      # a DataFrame
    run.evaluation().debiased.spearman_x100                       # a typed report

One module per object: :class:`Store` (``store``) mirrors the store and the CLI's verbs that
write (``run``, ``score``, ``import-labels``...); :class:`Verdicts` (``verdicts``) what a run and
a panel read back as (``rank``, ``evaluate``, ``leaderboard``, ``export``, ``agreement``,
``report``); :class:`Run` (``run``) a stored run of one judge and its execution
(:meth:`Run.execute`); :class:`Panel` (``panel``), :class:`Campaign` (``campaign``), the
leaderboard of judges (``judges_board``), the settings of a run (``settings``) and its progress
bar (``progress``), a tuning of the judge's instruction (``tuning``: :class:`Tuning`). The CLI and the app's pages call this package, so the three give the same
numbers by construction. Walkthrough: docs/python.md.

This package is wiring, like ``worker`` and ``cli``: it computes nothing itself (the run kinds,
``analysis``, ``agreement``, ``panel`` and ``judges_board`` do) and reaches the store only
through ``sink.open_store`` (the ``compassess.stores`` entry point), never by importing ``db``.
It must not import a judge backend at import time (``import compassess_core`` stays free of
torch and transformers).
"""

from __future__ import annotations

from ..runs.absolute import AbsoluteEvaluation
from ..stats.analysis import Evaluation, EvaluationReport
from ..people.annotation import MODES, PairOnScreen, ShownPair
from ..stats.calibration import Calibration, CalibrationReport
from ..stats.compare import RunComparison
from ..data.candidates import load_candidates
from ..runs.explanations import Explanation, OrderReasons
from ..errors import (CompAssessError, InputError, ObjectChanged, Problem, RunCancelled,
                      RunInterrupted, ValidationError)
from ..stats.fusion import FusedRanking
from ..stats.leaderboard import Leaderboard, NoSystemsError
from ..runs.options import AbsoluteOptions, ComparativeOptions, ModelOptions, ScoringOptions
from ..stats.ranking import METHODS
from ..report.audit import RunAudit
from ..runs.run_loop import Progress, RunSummary
from ..runs.scoring import ScoringEvaluation
from ..runs.selection import STRATEGIES
from ..runs.settings import GenerationOptions, RunSettings
from ..runs.tuning import TuningOptions, Wording
from ..types import Dataset
from ..runs.executor import Reporter
from .campaign import Campaign, CampaignExport
from .jobs import JOB_KINDS as _JOB_KINDS, Job, JobStatus
from .judges_board import JUDGE_COLUMNS, JudgesLeaderboard
from .panel import Panel, PanelMember
from .planning import (DataAspect, JudgeCatalog, JudgeServers, PromptPreview, RunDefaults, RunPlan,
                       judge_servers)
from .progress import ProgressBar, RunProgress, has_live_worker
from .run import Run
from .settings import run_settings, score_settings
from .records import Deleted, LabelsImported
from .store import Store, open_store
from .uploads import DatasetSaved, LabelsCheck, UploadCheck
from .tuning import Tuning, TuningPlan, TuningResult
from .verdicts import Agreement, ExportFile, PositionalBias, Verdicts
# What a page or a notebook needs beside the objects: an own template from its text (checked:
# ``TemplateError`` names what is wrong) and the upload limit (``COMPASSESS_MAX_UPLOAD_MB``).
from ..limits import max_upload_bytes, max_upload_mb
from ..runs.prompts import custom_template as template_from_text
# How a text a person controls is shown inert (bidirectional and control characters as code
# points), and how a download is named from such names (``export.file_name``).
from ..limits import visible
from ..data.export import FORMATS as EXPORT_FORMATS, file_name, sidecar_name
# How a count is written in a sentence ("1 context", "3 contexts"), the same on every page, in
# the command line and in the report.
from ..report_text import counted

#: Ranking methods of ``Run.rankings(method=...)`` (``compassess rank --method``).
RANKING_METHODS: tuple[str, ...] = tuple(METHODS)
#: The kinds of background job of ``Store.job(KIND, target)`` (``compassess job ... KIND``).
JOB_KINDS: tuple[str, ...] = tuple(_JOB_KINDS)
#: How the next pair to label is chosen (``Store.next_pair(mode=...)``).
ANNOTATION_MODES: tuple[str, ...] = tuple(MODES)
#: Pair-selection strategies of ``Store.run(strategy=...)`` (``compassess run --strategy``).
SELECTION_STRATEGIES: tuple[str, ...] = tuple(STRATEGIES)

__all__ = [
    "open_store", "Store", "load_candidates", "Dataset", "LabelsImported", "Deleted",
    "Campaign", "CampaignExport", "Panel", "PanelMember", "JudgesLeaderboard", "JUDGE_COLUMNS",
    "Verdicts", "Run", "RunSettings", "run_settings", "score_settings", "ProgressBar",
    "Reporter", "Progress", "RunSummary", "RANKING_METHODS", "SELECTION_STRATEGIES", "ANNOTATION_MODES", "ShownPair", "PairOnScreen",
    "ModelOptions", "ComparativeOptions", "ScoringOptions", "AbsoluteOptions",
    "GenerationOptions", "EvaluationReport", "Evaluation", "ScoringEvaluation",
    "AbsoluteEvaluation", "Agreement", "PositionalBias", "ExportFile", "Leaderboard",
    "RunComparison", "Calibration", "CalibrationReport", "FusedRanking", "RunAudit",
    "CompAssessError", "InputError", "ObjectChanged", "ValidationError", "Problem", "RunCancelled",
    "RunInterrupted", "NoSystemsError", "Tuning", "TuningPlan", "TuningResult", "TuningOptions",
    "Wording", "Explanation", "OrderReasons",
    # checking files, planning runs, watching workers
    "UploadCheck", "DatasetSaved", "LabelsCheck", "DataAspect", "RunDefaults", "RunPlan", "PromptPreview",
    "JudgeCatalog", "JudgeServers", "judge_servers", "RunProgress", "has_live_worker",
    "Job", "JobStatus", "JOB_KINDS",
    "template_from_text",
    "max_upload_mb", "max_upload_bytes", "visible", "file_name", "sidecar_name", "counted",
    "EXPORT_FORMATS",
]
