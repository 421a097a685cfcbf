"""Missing values show as empty cells, never as the word "None": a candidate no comparison judged
has no score, and Streamlit's tables print "None" for a missing value unless told otherwise.
Every table of the pages says so (checked in the source), and the Rankings page of a run that
left a candidate unjudged is an AppTest on a real store."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np

from compassess_core.data.candidates import load_candidates
from compassess_core.types import ComparisonResult, Judgement, PairKey
from db.store import Store
from tests.app.test_app_pages import SAMPLE, app_env, open_page, settings_for  # noqa: F401

ROOT = Path(__file__).resolve().parents[2]


def test_every_table_of_the_pages_shows_a_missing_value_empty():
    missing = []
    for path in sorted((ROOT / "pages").glob("*.py")) + [ROOT / "app.py"]:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "dataframe"):
                given = {k.arg: k.value for k in node.keywords}
                if not (isinstance(given.get("placeholder"), ast.Constant)
                        and given["placeholder"].value == ""):
                    missing.append(f"{path.name}:{node.lineno}")
    assert not missing, f"st.dataframe without placeholder=\"\" (shows 'None'): {missing}"


def test_an_unjudged_candidates_score_is_an_empty_cell(app_env):
    store = Store(app_env)
    dataset = load_candidates(SAMPLE, name="sample_summeval", file_label="sample_summeval.csv")
    run_id = store.create_run("partial", store.save_dataset(dataset),
                              settings_for(dataset.name).to_dict())
    ctx = dataset.contexts[0]
    left_out = ctx.candidates[-1].candidate_id
    results = [ComparisonResult(PairKey(ctx.context_id, x.candidate_id, y.candidate_id),
                                Judgement(0.6, float(np.log(0.36)), float(np.log(0.24)), 0.6),
                                f"h-{x.candidate_id}-{y.candidate_id}")
               for x in ctx.candidates for y in ctx.candidates
               if x is not y and left_out not in (x.candidate_id, y.candidate_id)]
    store.add_results(run_id, "comparative", results)
    store.set_run_status(run_id, "completed", done=len(results), total=len(results))
    at = open_page("rankings")
    table = next(d for d in at.dataframe if "n_comparisons" in d.value.columns)
    row = table.value[table.value["candidate_id"] == left_out]
    assert int(row["n_comparisons"].iloc[0]) == 0 and row["score"].isna().all()
    assert table.proto.HasField("placeholder") and table.proto.placeholder == ""
