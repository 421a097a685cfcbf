"""``compassess tune`` end to end with the real bundled SmolLM2 judge on the bundled sample:
every wording gets a fairness interval, T1 is kept unless a wording beats it outside the paired
interval, and ``--writer`` names a served model (a local OpenAI-protocol server whose writer is
FAKE: it rewrites the instruction it is sent by fixed rules, so the test does not rest on what
a small model happens to write)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "assets" / "sample_summeval.csv"
sys.path.insert(0, str(ROOT / "tests"))
from tests.openai_server import FakeBackend, OpenAIServer  # noqa: E402
from tests import warm_cli  # noqa: E402

#: The FAKE writer's rewordings of the question, picked by the request's seed.
LEADS = ("Of the two texts, which", "Weighing both with care, which", "Overall, which")


class FakeInstructionWriter(FakeBackend):
    """FAKE writer for tests: asked to paraphrase an instruction (``tuning.paraphrase_request``),
    it answers the whole instruction back with another heading and its question reworded by
    the seed; every other request is answered as :class:`FakeBackend` does. Records the
    paraphrase requests in ``asked``."""

    def __init__(self):
        super().__init__(0.0)
        self.asked: list[str] = []

    def generate(self, text, *, max_tokens, temperature, n, top, seed, chat):
        if "Paraphrase the following instruction" not in text:
            return super().generate(text, max_tokens=max_tokens, temperature=temperature, n=n,
                                    top=top, seed=seed, chat=chat)
        self.asked.append(text)
        instruction = text.split("Instruction:\n", 1)[1].rsplit("\nassistant:", 1)[0].strip()
        lead = LEADS[int(seed or 0) % len(LEADS)]
        new = instruction.replace("Passage:", "The article:")
        new = re.sub(r"Which Summary", lead + " Summary", new)
        return [[(f"New instruction: {new}", 0.0, [])] for _ in range(n)]


@pytest.mark.model
@pytest.mark.slow
def test_cli_tune_on_the_sample_reports_intervals_keeps_t1_and_takes_a_served_writer(
        bundled_model, db_url, short_summeval):
    writer = FakeInstructionWriter()
    with OpenAIServer(writer, model_name="writer") as srv:
        out = warm_cli.run(
            # 3 contexts, one pair in both orders each, one written paraphrase; the sample with
            # its articles cut to their opening sentences (tests/conftest.py: short_articles):
            # what is checked is the tuning, not what the articles say, and a comparison of a
            # whole article costs seconds on a shared CPU
            "tune", str(short_summeval), "--aspect",
            "coherence", "--contexts", "3", "--pairs", "2", "--rounds", "1", "--per-round", "1",
            "--name", "sample", "--writer", f"openai:{srv.base_url}#writer", "--json",
            "--db", db_url, model=True, cwd=ROOT, timeout=3600)
    assert out.returncode == 0, out.stderr[-3000:]
    result = json.loads(out.stdout)
    rows = result["wordings"]
    # the seven starting wordings, then what the served writer wrote (whole instructions)
    assert [r["label"] for r in rows[:2]] == ["t1", "t2"]
    written = [r for r in rows if r["origin"] == "written by the writer"]
    assert written and len(writer.asked) == 1  # one round: one request per paraphrase asked
    assert result["writer"].startswith("openai:")
    # an interval on every wording's fairness, from 3 contexts x 2 ordered pairs
    for r in rows:
        if r["decisions_tune"] == 0:
            continue  # p = 0.5 everywhere: no decision, no fairness (said as NaN)
        assert r["fairness_low"] is not None and r["fairness_high"] is not None
        assert r["fairness_low"] <= r["fairness"] + 1e-9 <= r["fairness_high"] + 2e-9
        assert r["comparisons_tune"] == 6
    # a wording other than T1 only when it beats T1 outside the paired interval
    picked = next(r for r in rows if r["picked"])
    if picked["wording"] == "w1":
        assert result["reason"].startswith("T1 kept") and not any(r["beats_t1"] for r in rows)
    else:
        assert picked["beats_t1"] and picked["vs_t1_low"] > 0
    assert result["vs_t1"]["mcnemar"]["p_value"] is not None
    # 3 contexts are below the minimum sample: the tuning says so
    assert any("only 3 tuning context(s)" in w for w in result["warnings"])
    print(json.dumps({r["wording"]: [r["label"], r["fairness"], r["fairness_low"],
                                     r["fairness_high"], r["vs_t1"], r["saturation"]]
                      for r in rows}), result["reason"], sep="\n")
    # the written wordings are whole instructions: the heading changed, not only the question
    from compassess_core import api
    texts = {w.key: w.text for w in api.open_store(db_url).tuning("sample").wordings}
    for r in written:
        assert texts[r["wording"]].startswith("The article:\n{context}")


def test_cli_tune_writer_is_a_served_model_not_the_judge(db_url, monkeypatch, capsys):
    """``--writer openai:...`` with a FAKE judge that cannot write (the wiring is the point):
    the paraphrases come from the served writer, whole instructions, and are judged."""
    from compassess_core import api
    from compassess_core.runs import executor
    from compassess_core.cli import main
    from tests.fakes import FakeLengthJudge
    monkeypatch.setattr(executor, "load_run_judge", lambda settings: FakeLengthJudge())
    writer = FakeInstructionWriter()
    with OpenAIServer(writer, model_name="writer") as srv:
        code = main(["tune", str(SAMPLE), "--aspect", "coherence", "--contexts", "1",
                     "--rounds", "1", "--per-round", "3", "--name", "served", "--writer",
                     f"openai:{srv.base_url}#writer", "--db", db_url])
    out = capsys.readouterr().out
    assert code == 0
    assert len(writer.asked) == 3 and all("[[TEXT A]]" in a for a in writer.asked)
    tuning = api.open_store(db_url).tuning("served")
    written = [w for w in tuning.wordings if w.round == 1]
    assert written and all(w.text.startswith("The article:\n{context}") for w in written)
    result = tuning.result(n_boot=50)
    assert len(result.table) == 7 + len(written)
    assert "writer: openai:" in out and "fairness [95%]" in out and "why: " in out
    assert "warning: only 1 tuning context(s)" in out
