"""The judge's reasons for a stored verdict, on demand.

A comparison's p comes from the label words' probabilities (eq. 3); it says which text the judge
prefers, not why. To see why, the same judge is shown the same prompt, told the answer it gave
(``A`` when ``p > 0.5``, else ``B``) and asked for its reasons in a few sentences, bounded in
tokens; asked in both orders of a pair, the two answers show whether the reasons follow the
texts or the positions. The reasons are what the judge writes afterwards (every view labels
them :data:`REASONS_LABEL`): a window on how it reads the texts, not the computation behind p,
which they never change. When the judge chose the same position in both orders it preferred a
different text in each: :attr:`Explanation.same_position` flags that it contradicts itself.

This module holds the pure parts (the request, the verdict, the reply cleaned, whether a judge
can write at all); the Python API (``Run.explain``) loads the judge, asks it and stores the
text with the judge's key and the prompt's hash. It must never load a model, store anything or
import a UI.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..judges.base import TextGenerator
from .settings import GenerationOptions
from ..types import ComparisonPrompt

#: What an explanation is, the label every view shows beside it: the judge is told the answer it
#: gave, then asked for reasons, so they are written after the verdict and did not produce it.
REASONS_LABEL = "reasons written after the verdict"
#: The sentence that goes with :data:`REASONS_LABEL` where there is room for one.
REASONS_NOTE = ("The judge was shown its prompt, told the answer it gave and asked for its "
                "reasons: they are written after the verdict, not the computation behind p, and "
                "never change it.")

#: Tokens the judge may write for one order's reasons (a few sentences).
EXPLAIN_TOKENS = 150
#: The most tokens anyone may ask for: an explanation is a few sentences, not an essay.
MAX_EXPLAIN_TOKENS = 512


def verdict(p: float) -> str:
    """The answer a judge gave with probability ``p`` of the first position: ``A`` above 0.5,
    else ``B`` (eq. 3's natural threshold: the judge's own answer, before any debiasing)."""
    return "A" if p > 0.5 else "B"


def explanation_request(prompt: ComparisonPrompt, p: float) -> str:
    """What the judge is asked: its own prompt, the answer it gave (``"Summary A"``), and a
    request for the reasons in two or three sentences."""
    noun = prompt.primer.removeprefix("Answer: ").strip() or "Summary"
    answer = f"{noun} {verdict(p)}"
    return (f"{prompt.text}\n\nYour answer was: {answer}. In two or three sentences, give the "
            f"reasons for this answer, naming what in {noun} A and {noun} B decided it.")


def generation_options(max_tokens: int) -> GenerationOptions:
    """How an explanation is written: greedy (the same judge writes the same text again),
    at most ``max_tokens`` new tokens."""
    return GenerationOptions(max_new_tokens=int(max_tokens), sample=False)


def clean_reply(text: str) -> str:
    """The judge's reply as stored: surrounding space removed (the text itself is kept as
    written; pages show it as plain text)."""
    return str(text or "").strip()


def cannot_write(judge) -> str | None:
    """Why ``judge`` cannot write reasons (None when it can): a judge without text generation
    (an encoder-decoder classifier, a served judge asked for label probabilities only)."""
    if not isinstance(judge, TextGenerator):
        return (f"the judge {getattr(judge, 'description', type(judge).__name__)} cannot write "
                "text: it only gives the probabilities of its label words, so it has no reasons "
                "to show (use a causal chat model or a served chat or completions model)")
    return None


def decided(p: float, tau: float) -> str:
    """The run's verdict at the decision threshold ``tau`` (eq. 10): ``A`` when ``p > tau``,
    else ``B`` (what its rankings read at that threshold)."""
    return "A" if p > tau else "B"


def threshold_words(tau: float, debias: str | float) -> str:
    """The threshold a verdict was read at, in words: ``the run's balanced tau* = 0.9731 (as
    its rankings)``, ``tau = 0.5 (no debiasing)``, ``tau = 0.6``."""
    if debias == "balanced":
        return f"the run's balanced tau* = {tau:.4f} (as its rankings)"
    if debias == "balanced-per-context":
        return f"this context's tau* = {tau:.4f}"
    if debias == "none":
        return "tau = 0.5 (no debiasing)"
    return f"tau = {tau:.4g}"


@dataclass(frozen=True)
class OrderReasons:
    """The judge's reasons for one order of a pair: ``first`` in position A, ``p`` its stored
    probability, ``verdict`` the answer it gave (``A``/``B``, eq. 3 at 0.5: the answer its
    reasons explain), ``text`` what it wrote (None: not asked yet), ``at_tau`` the run's verdict
    at the explanation's threshold (:attr:`Explanation.tau`, the balanced tau* by default: what
    the rankings read; None: not given)."""

    first: str
    second: str
    p: float
    verdict: str
    text: str | None
    at_tau: str | None = None


@dataclass(frozen=True)
class Explanation:
    """The judge's reasons for its verdicts on a pair, in both orders: ``forward`` (``first``
    in position A) and ``reverse`` (``second`` in position A; None when the run did not judge
    that order). ``judge_key`` is the judge that wrote them (the run's), ``max_tokens`` their
    bound; ``complete`` when every judged order has its text. ``tau`` is the threshold each
    order's ``at_tau`` verdict was read at and ``debias`` what named it (the run's balanced tau*
    by default, the threshold its rankings read at)."""

    context_id: str
    first: str
    second: str
    judge_key: str
    max_tokens: int
    forward: OrderReasons
    reverse: OrderReasons | None
    tau: float = 0.5
    debias: str | float = "none"

    @property
    def threshold(self) -> str:
        """The threshold of the ``at_tau`` verdicts, in words (:func:`threshold_words`)."""
        return threshold_words(self.tau, self.debias)

    def summary(self, order: OrderReasons) -> str:
        """One order in one sentence: p, the run's verdict at :attr:`threshold` and the answer
        the judge gave (at 0.5), which its reasons explain."""
        at = order.at_tau if order.at_tau is not None else decided(order.p, self.tau)
        winner = order.first if at == "A" else order.second
        return (f"{order.first} in position A, {order.second} in B: p = {order.p:.3f}; verdict "
                f"at {self.threshold}: {at} ({winner}); the judge's own answer at tau = 0.5, "
                f"which its reasons explain: {order.verdict}")

    @property
    def orders(self) -> tuple[OrderReasons, ...]:
        return (self.forward,) if self.reverse is None else (self.forward, self.reverse)

    @property
    def complete(self) -> bool:
        return all(o.text is not None for o in self.orders)

    @property
    def same_position(self) -> str | None:
        """The position (``A`` or ``B``) the judge chose in both orders, None when it chose the
        same text in both (or only one order was judged). The same position in both orders
        means it preferred ``first`` in one order and ``second`` in the other: it contradicts
        itself on this pair, so its reasons for the two answers cannot both hold."""
        if self.reverse is None or self.forward.verdict != self.reverse.verdict:
            return None
        return self.forward.verdict

    @property
    def contradiction(self) -> str | None:
        """A sentence saying the judge contradicts itself (:attr:`same_position`), or None."""
        pos = self.same_position
        if pos is None:
            return None
        return (f"The judge contradicts itself on this pair: it answered {pos} in both orders, "
                f"so it preferred {self.first if pos == 'A' else self.second} in one order and "
                f"{self.second if pos == 'A' else self.first} in the other (it follows the "
                "position, not the texts); its reasons for the two answers cannot both hold.")

    def to_dict(self) -> dict:
        return dict(context_id=self.context_id, first=self.first, second=self.second,
                    judge_key=self.judge_key, max_tokens=self.max_tokens, kind=REASONS_LABEL,
                    tau=self.tau, debias=self.debias, threshold=self.threshold,
                    same_position_in_both_orders=self.same_position,
                    contradiction=self.contradiction,
                    orders=[dict(first=o.first, second=o.second, p=o.p, verdict=o.verdict,
                                 verdict_at_tau=(o.at_tau if o.at_tau is not None
                                                 else decided(o.p, self.tau)),
                                 text=o.text) for o in self.orders])
