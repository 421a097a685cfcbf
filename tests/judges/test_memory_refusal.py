"""A judge that cannot fit in this machine's memory is refused before it loads, with the reason:
the Run page's plan says what it needs against what is available and Start stays disabled; the
API, the CLI and the worker refuse to load it (``runs.executor.load_run_judge``). The available memory
is simulated small; nothing is loaded."""

from __future__ import annotations

import pytest

from compassess_core.judges import memory as mem
from compassess_core.judges import model_catalog as mc
from compassess_core.runs import executor
from compassess_core.errors import InputError
from compassess_core.runs.settings import RunSettings
from tests.app.test_app_pages import app_env, open_page  # noqa: F401


@pytest.fixture
def small_machine(monkeypatch):
    monkeypatch.setattr(mem, "available_memory", lambda device="cpu": 200 * 2**20)


def _bundled_settings() -> RunSettings:
    from compassess_core.judges.models import BUNDLED_MODEL
    from compassess_core.runs.prompts import Aspect, builtin_template
    t, a = builtin_template("t1", "summary"), Aspect.from_name("coherence")
    return RunSettings(dataset="d", aspect=a.name, aspect_adjective=a.adjective,
                       template_name=t.name, template_text=t.text, primer=t.primer,
                       model=BUNDLED_MODEL)


def test_loading_a_judge_that_does_not_fit_is_refused_with_the_reason(small_machine):
    if mc.memory_plan(_bundled_settings().model).need is None:
        pytest.skip("the bundled model's header is not on this machine")
    with pytest.raises(InputError, match=r"needs about .* GB of memory .* 0\.2 GB of memory available"):
        executor.load_run_judge(_bundled_settings())


def test_the_run_page_shows_the_memory_line_and_disables_start_when_it_does_not_fit(
        app_env, small_machine):
    from compassess_core import api
    api.open_store(app_env).add_dataset("assets/sample_summeval.csv")
    at = open_page("run")
    if mc.memory_plan(_bundled_settings().model).need is None:
        pytest.skip("the bundled model's header is not on this machine")
    assert not at.exception, at.exception
    assert any("Memory: about" in str(c.value) for c in at.caption)
    assert any("needs about" in str(e.value) for e in at.error)
    assert next(b for b in at.button if b.label == "Start").disabled
