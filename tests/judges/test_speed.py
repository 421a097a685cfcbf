"""A model's speed from the rates earlier runs recorded (what estimates before Start use)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from compassess_core.judges.speed import measured_speed


def run(model, rate, kind="comparative", device="auto"):
    return SimpleNamespace(settings=dict(model=model, kind=kind, device=device), rate=rate)


def test_median_of_the_model_kind_and_device():
    runs = [run("m", 2.0), run("m", 4.0), run("m", 100.0), run("m", None), run("other", 50.0),
            run("m", 9.0, kind="scoring"), run("m", 30.0, device="cuda")]
    s = measured_speed(runs, "m", device="auto")
    assert (s.rate, s.n_runs) == (4.0, 3)
    assert s.seconds_for(60) == pytest.approx(15.0)
    assert measured_speed(runs, "m", kind="scoring").rate == 9.0
    assert measured_speed(runs, "never-run") is None
