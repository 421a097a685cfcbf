"""The leaderboard of judges through the API (``Store.judges``, ``compassess judges``): each run
and panel on a dataset and aspect read through its own API (:class:`Run`, :class:`Panel`), then
ranked by ``compassess_core.stats.judges_board``. Wiring only: it computes nothing itself."""

from __future__ import annotations

import pandas as pd

from ..stats import panel
from ..errors import InputError
from ..stats.judges_board import JUDGE_COLUMNS, JudgeEntry, JudgesLeaderboard, rank_judges
from .panel import Panel
from .settings import _check_at_least
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


class JudgesBoard:
    """The leaderboard of judges of a :class:`Store` (its mixin): ``compassess judges``."""

    def judges(self, dataset: str | int, aspect: str, *, reference: str | None = None,
               n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> JudgesLeaderboard:
        """The leaderboard of judges (``compassess judges``): every pairwise run and panel on
        ``dataset`` and ``aspect``, best first: by Cohen's kappa with the people's labels when
        the aspect has human labels, else by Spearman x100 with the ``reference`` column
        (default: the column named like the aspect). See :class:`JudgesLeaderboard`.

        Raises
        ------
        InputError
            No such dataset, no judge on it and the aspect, neither human labels nor a reference
            column, ``n_boot < 1``.
        """
        _check_at_least("n_boot", n_boot, 1)
        if n_boot > panel.MAX_BOOT:
            raise InputError(f"n_boot must be at most {panel.MAX_BOOT:,}, not {n_boot:,}")
        dataset_id, ds = self._stored_dataset(dataset)
        if reference is None and aspect in ds.score_columns:
            reference = aspect
        if reference is not None and reference not in ds.score_columns:
            raise InputError(f"dataset '{ds.name}' has no reference column '{reference}' "
                             f"(it has: {', '.join(ds.score_columns) or 'none'})")
        human = self.backend.human_judgements_frame(dataset_id, aspect)
        if len(human) == 0 and reference is None:
            raise InputError(f"dataset '{ds.name}' has neither human labels for aspect "
                             f"'{aspect}' nor a reference-score column to rank judges by")
        judges: list[Verdicts] = [r for r in self.list_runs(dataset_id)
                                  if r.run_kind.is_pairwise and r.settings.aspect == aspect]
        judges = [r for r in judges if r.n_comparisons > 0]
        notes = []
        for info in self.backend.list_panels(dataset_id):
            if info.aspect != aspect:
                continue
            try:
                judges.append(Panel(self, info))
            except InputError as e:
                notes.append(f"panel '{info.name}' left out: {e}")
        if not judges:
            raise InputError(f"no pairwise run or panel on dataset '{ds.name}' and aspect "
                             f"'{aspect}'")
        return judges_board(judges, human, dataset=ds.name, aspect=aspect, reference=reference,
                            n_boot=n_boot, level=level, seed=seed, notes=notes)
