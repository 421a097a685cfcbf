"""The leaderboard of judges through the API (``Store.judges``, ``compassess judges``): each run
and panel on a dataset and aspect read through its own API (:class:`Run`, :class:`Panel`), then
ranked by ``compassess_core.judges_board``. Wiring only: it computes nothing itself."""

from __future__ import annotations

import pandas as pd

from ..judges_board import JUDGE_COLUMNS, JudgeEntry, JudgesLeaderboard, rank_judges
from .panel import Panel
from .verdicts import Verdicts

__all__ = ["JUDGE_COLUMNS", "JudgesLeaderboard", "judge_entry", "judges_board"]


def judge_entry(judge: Verdicts, reference: str | None) -> JudgeEntry:
    """What the leaderboard needs of one run or panel, from its own reads."""
    is_panel = isinstance(judge, Panel)
    uses_labels = is_panel and (judge.weights_mode == "learnt"
                                or judge.panel_info.scaling != "balanced")
    spearman = (judge.evaluation(reference=reference).debiased.spearman_x100
                if reference is not None else None)
    position = judge.positional_bias("none")
    length = judge.length_bias("balanced")
    return JudgeEntry(
        name=judge.name, kind="panel" if is_panel else "run",
        model=None if is_panel else judge.settings.model,
        template=None if is_panel else judge.settings.template_name,
        members=", ".join(judge.panel_info.run_names) if is_panel else None,
        n_comparisons=(sum(r.n_comparisons for r in judge.member_runs) if is_panel
                       else judge.n_comparisons),
        table=judge.results, held_out=judge.held_out if uses_labels else None,
        spearman_x100=None if spearman is None else float(spearman),
        p_a_raw=position.p_a_raw, flip_rate_raw=position.flip_rate,
        longer_wins=length.longer_wins, length_slope_per_doubling=length.slope_per_doubling,
        comparisons_per_s=judge.info.rate or None,
        tokens_per_comparison=judge.prompt_tokens_per_comparison, partial_note=judge.partial_note)


def judges_board(judges: list[Verdicts], human: pd.DataFrame, *, dataset: str,
                 aspect: str, reference: str | None, n_boot: int, level: float, seed: int,
                 notes: list[str]) -> JudgesLeaderboard:
    """``judges`` ranked (``judges_board.rank_judges``)."""
    return rank_judges([judge_entry(j, reference) for j in judges], human, dataset=dataset,
                       aspect=aspect, reference=reference, n_boot=n_boot, level=level, seed=seed,
                       notes=notes)
