"""The store's tables, as SQLAlchemy 2.0 declarative classes (the single source of truth for alembic).

Engine identifiers (``context_id``, ``candidate_id``) are the strings of the user's file; here they
are ``key`` columns, and every relation uses integer primary keys. Every foreign key cascades on
delete so that deleting a dataset removes its runs, comparisons and judgements in the database
itself (SQLite needs ``PRAGMA foreign_keys=ON``, which ``db.connection`` sets on every connection),
and every foreign key column leads an index, so that a delete finds the referencing rows without
scanning a whole table once per deleted row.

This module must never issue SQL or hold a connection: it only describes tables. A change here
needs a new migration in ``db/migrations/versions`` (``alembic -c db/alembic.ini revision
--autogenerate``); ``tests/db/test_store.py`` fails when the two disagree.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Annotated, Any

from sqlalchemy import (JSON, BigInteger, Boolean, DateTime, Float, ForeignKey, Index, Integer,
                        MetaData, String, Text, UniqueConstraint)
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column
from sqlalchemy.types import TypeDecorator

#: Constraint names are fixed so that later migrations (batch mode on SQLite) can address them.
NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

#: Run states written by the run loop (``compassess_core.runner``) and the store.
RUN_STATUSES = ("pending", "running", "completed", "cancelled", "failed")

#: Longest dataset or run name (the width of their name columns).
MAX_NAME_LENGTH = 255


class UTCDateTime(TypeDecorator):
    """A timestamp that is always timezone-aware UTC in Python, whatever the backend keeps.

    SQLite has no time zones and returns naive values; PostgreSQL returns aware ones. Naive values
    written by callers are taken to be UTC.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc) if dialect.name != "sqlite" else value
        value = value.astimezone(timezone.utc)
        # SQLite stores the text verbatim: keep it naive so string order is time order.
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=timezone.utc)
        return value.astimezone(timezone.utc)


def utcnow() -> datetime:
    return datetime.now(timezone.utc)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {datetime: UTCDateTime(), float: Float(), dict[str, Any]: JSON(),
                           list[str]: JSON()}


# The column declarations the tables share (SQLAlchemy's ``Annotated`` declarations); a plain
# ``Mapped[int]``, ``Mapped[float | None]`` is an Integer, a Float column.
#: An integer primary key.
IntKey = Annotated[int, mapped_column(Integer, primary_key=True, autoincrement=True)]
#: When the row was written (created, updated, added), timezone-aware UTC.
Timestamp = Annotated[datetime, mapped_column(UTCDateTime(), default=utcnow)]


def cascade(table: str, **options: Any) -> Any:
    """A column referencing ``table``'s id, whose rows go when the referenced row is deleted;
    ``index=True`` (an index ``ix_<table>_<column>``) where no other index leads with it."""
    return mapped_column(ForeignKey(f"{table}.id", ondelete="CASCADE"), **options)


class JudgeAnswer:
    """The columns a stored comparison and absolute comparison end with: how much of the
    next-token probability the label words took (NULL: NaN), how long the answer took, the
    prompt's hash (the cache's key) and when it was stored."""

    label_mass: Mapped[float | None]
    latency_ms: Mapped[float | None]
    prompt_hash: Mapped[str] = mapped_column(String(128), index=True)
    #: Last: a table's own columns that follow ``prompt_hash`` say ``sort_order=1``.
    created_at: Mapped[Timestamp] = mapped_column(sort_order=2)


class DatasetRow(Base):
    """One saved candidate file. ``content_hash`` identifies its content (saving is idempotent)."""

    __tablename__ = "datasets"
    # Ids are never reused after a delete: the store caches id -> key maps per dataset.
    __table_args__ = {"sqlite_autoincrement": True}

    id: Mapped[IntKey]
    name: Mapped[str] = mapped_column(String(MAX_NAME_LENGTH), unique=True)
    content_hash: Mapped[str] = mapped_column(String(128), unique=True)
    source: Mapped[str] = mapped_column(Text, default="")
    score_columns: Mapped[list[str]] = mapped_column(JSON, default=list)
    #: The file's names of its context and text columns: they say the task (story, instruction,
    #: ...) the prompts are worded for. NULL for datasets stored before they were kept.
    text_columns: Mapped[list[str] | None] = mapped_column(JSON, nullable=True)
    n_contexts: Mapped[int]
    n_candidates: Mapped[int]
    created_at: Mapped[Timestamp]


class ContextRow(Base):
    """A context (source text) of a dataset; ``position`` keeps file order."""

    __tablename__ = "contexts"
    __table_args__ = (UniqueConstraint("dataset_id", "key"),
                      UniqueConstraint("dataset_id", "position"))

    id: Mapped[IntKey]
    dataset_id: Mapped[int] = cascade("datasets")
    key: Mapped[str] = mapped_column(String(255))
    position: Mapped[int]
    text: Mapped[str] = mapped_column(Text)


class CandidateRow(Base):
    """A candidate text of a context; ``dataset_id`` is repeated so a dataset's ids load in one query."""

    __tablename__ = "candidates"
    __table_args__ = (UniqueConstraint("context_id", "key"),
                      UniqueConstraint("context_id", "position"))

    id: Mapped[IntKey]
    dataset_id: Mapped[int] = cascade("datasets", index=True)
    context_id: Mapped[int] = cascade("contexts")
    key: Mapped[str] = mapped_column(String(255))
    position: Mapped[int]
    text: Mapped[str] = mapped_column(Text)
    system: Mapped[str | None] = mapped_column(String(255))
    source_row: Mapped[int | None]


class ReferenceScoreRow(Base):
    """A reference (human) score of a candidate in one score column. NULL stands for NaN."""

    __tablename__ = "reference_scores"

    candidate_id: Mapped[int] = cascade("candidates", primary_key=True)
    name: Mapped[str] = mapped_column(String(255), primary_key=True)
    value: Mapped[float | None]


class RunRow(Base):
    """A run of any kind: all settings as JSON, the ones pages filter on as columns, live status.

    ``model_key`` is not a setting: it is the identity of the judge that executed the run
    (``Store.record_judge``), NULL until a worker has loaded the model. With ``label_words`` it
    is the key under which other runs find this run's results in the cache.
    """

    __tablename__ = "runs"
    __table_args__ = (
        Index("ix_runs_model_key_label_words", "model_key", "label_words"),
        {"sqlite_autoincrement": True},
    )

    id: Mapped[IntKey]
    name: Mapped[str] = mapped_column(String(MAX_NAME_LENGTH), unique=True)
    dataset_id: Mapped[int] = cascade("datasets", index=True)
    settings: Mapped[dict[str, Any]] = mapped_column(JSON)
    model: Mapped[str | None] = mapped_column(String(1024))
    model_key: Mapped[str | None] = mapped_column(String(1024))
    # json.dumps(list(label_words)), the key compassess_core.runs.settings.label_words_key makes.
    label_words: Mapped[str | None] = mapped_column(String(255))
    aspect: Mapped[str | None] = mapped_column(Text)
    template_name: Mapped[str | None] = mapped_column(String(255))
    strategy: Mapped[str | None] = mapped_column(String(64))
    budget: Mapped[int | None]
    seed: Mapped[int | None]
    status: Mapped[str] = mapped_column(String(32), default="pending")
    done: Mapped[int] = mapped_column(Integer, default=0)
    total: Mapped[int | None]
    message: Mapped[str | None] = mapped_column(Text)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    worker_pid: Mapped[int | None]
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    # The worker's speed (run units per second of judging) and what planning found.
    rate: Mapped[float | None]
    plan: Mapped[dict[str, Any] | None] = mapped_column(JSON)
    # Seconds of judging from the first judged batch of the worker's session (judge loading
    # excluded), and the prompt tokens the judge processed per second of it: what a finished run
    # shows, and what the plan of a later run estimates its time from.
    judge_s: Mapped[float | None]
    token_rate: Mapped[float | None]
    # What the worker does now (starting, loading, planning, judging) and since when: what the
    # Run page shows with its elapsed time.
    phase: Mapped[str | None] = mapped_column(String(32))
    phase_at: Mapped[datetime | None] = mapped_column(UTCDateTime())
    created_at: Mapped[Timestamp]


class ComparisonRow(JudgeAnswer, Base):
    """One stored judgement of an ordered pair (a first, b second). NULL floats stand for NaN."""

    __tablename__ = "comparisons"
    __table_args__ = (UniqueConstraint("run_id", "a_id", "b_id"),)

    id: Mapped[IntKey]
    run_id: Mapped[int] = cascade("runs")
    # Every foreign key column is indexed (migration 0008): deleting a candidate or a
    # context looks its referencing rows up, a full scan of this table per row without one.
    context_id: Mapped[int] = cascade("contexts", index=True)
    a_id: Mapped[int] = cascade("candidates", index=True)
    b_id: Mapped[int] = cascade("candidates", index=True)
    p: Mapped[float | None]
    logp_a: Mapped[float | None]
    logp_b: Mapped[float | None]


class HumanJudgementRow(Base):
    """A person's A/B judgement of a pair as shown (left = A).

    One person judges one unordered pair once per aspect (``revision`` 0); judging it again on
    purpose (the annotate page's "show pairs I already judged again") adds revision 1, 2, ...
    beside the earlier answers, and agreement reads the newest. The unique key makes a second
    import of the same file, two tabs answering the same pair, or two imports at once store each
    judgement once. ``pair_low_id``/``pair_high_id`` are the pair's candidates in key order (the
    key must not depend on which one was shown on the left). An answer is only ever removed by
    its own annotator (undo).
    """

    __tablename__ = "human_judgements"
    __table_args__ = (
        Index("ix_human_judgements_dataset_id_aspect", "dataset_id", "aspect"),
        UniqueConstraint("pair_low_id", "pair_high_id", "annotator", "aspect", "revision",
                         name="uq_human_judgements_pair"),
    )

    id: Mapped[IntKey]
    dataset_id: Mapped[int] = cascade("datasets")
    context_id: Mapped[int] = cascade("contexts", index=True)
    left_id: Mapped[int] = cascade("candidates", index=True)
    right_id: Mapped[int] = cascade("candidates", index=True)
    # The unordered pair: min and max of left_id and right_id.
    pair_low_id: Mapped[int]
    pair_high_id: Mapped[int]
    # 0 for a person's first judgement of the pair (and aspect), then 1, 2, ... when asked again.
    revision: Mapped[int] = mapped_column(Integer, default=0, server_default="0")
    # "ab": left is the pair's first candidate as sampled, "ba": the display swapped them.
    shown_order: Mapped[str | None] = mapped_column(String(8))
    # compassess_core.types.Outcome values, seen from the left candidate: A, B, tie, skip.
    winner: Mapped[str] = mapped_column(String(8))
    annotator: Mapped[str] = mapped_column(String(255), default="", index=True)
    aspect: Mapped[str] = mapped_column(String(255), default="")
    seconds: Mapped[float | None]
    source: Mapped[str] = mapped_column(String(32), default="app")
    created_at: Mapped[Timestamp]
    # The annotation campaign the answer was given in (None: the free annotate page or an
    # import); the campaign's own rows are its labels (migration 0009).
    campaign_id: Mapped[int | None] = cascade("campaigns", nullable=True, index=True)
    # What the person wrote beside their answer (campaigns), None when nothing.
    comment: Mapped[str | None] = mapped_column(Text, nullable=True)


class GuidelineRow(Base):
    """Annotation guidelines shown on the annotate page, one text per dataset."""

    __tablename__ = "guidelines"

    dataset_id: Mapped[int] = cascade("datasets", primary_key=True)
    text: Mapped[str] = mapped_column(Text, default="")
    updated_at: Mapped[Timestamp]


# ------------------------------------------------------------------ prompt scoring (migration 0002)

class CandidateScoreRow(Base):
    """One prompt-scoring judgement of a candidate (a ``kind="scoring"`` run), paper §4.3.2.

    ``probabilities`` is the renormalised distribution over the scores 1..10 (a JSON list of ten
    floats); ``score_expected`` is its mean (G-Eval). NULL floats stand for NaN.
    """

    __tablename__ = "candidate_scores"
    __table_args__ = (UniqueConstraint("run_id", "candidate_id"),)

    id: Mapped[IntKey]
    run_id: Mapped[int] = cascade("runs")
    context_id: Mapped[int] = cascade("contexts", index=True)
    candidate_id: Mapped[int] = cascade("candidates", index=True)
    prompt_hash: Mapped[str] = mapped_column(String(128), index=True)
    score_argmax: Mapped[float | None]
    score_expected: Mapped[float | None]
    probabilities: Mapped[list[float]] = mapped_column(JSON, default=list)
    label_mass: Mapped[float | None]
    latency_ms: Mapped[float | None]
    created_at: Mapped[Timestamp]


# ------------------------------------------------------------------ absolute scores (migration 0003)

class SyntheticReferenceRow(Base):
    """A reference text of known quality ``level`` (1..N) for a context and aspect.

    ``reference_set`` names where the texts come from: the generating model's identity (texts
    written once per context, aspect and model, then reused) or ``upload`` (a user's anchors).
    ``source`` is generated, edited or uploaded; ``generation`` records prompt, decoding and seed.
    """

    __tablename__ = "synthetic_references"
    __table_args__ = (UniqueConstraint("context_id", "aspect", "reference_set", "level"),)

    id: Mapped[IntKey]
    context_id: Mapped[int] = cascade("contexts")
    aspect: Mapped[str] = mapped_column(String(255))
    reference_set: Mapped[str] = mapped_column(String(512))
    level: Mapped[int]
    text: Mapped[str] = mapped_column(Text)
    source: Mapped[str] = mapped_column(String(16), default="generated")
    generation: Mapped[dict[str, Any]] = mapped_column(JSON, default=dict)
    updated_at: Mapped[Timestamp]


class AbsoluteComparisonRow(JudgeAnswer, Base):
    """A target candidate compared with the reference of ``level`` (a ``kind="absolute"`` run).

    ``target_first``: the candidate was shown first (else the reference). ``p_better`` etc. are
    the answer about the text shown first, normalised over the label words; NULL stands for NaN.
    """

    __tablename__ = "absolute_comparisons"
    __table_args__ = (UniqueConstraint("run_id", "candidate_id", "level", "target_first"),)

    id: Mapped[IntKey]
    run_id: Mapped[int] = cascade("runs")
    context_id: Mapped[int] = cascade("contexts", index=True)
    candidate_id: Mapped[int] = cascade("candidates", index=True)
    level: Mapped[int]
    target_first: Mapped[bool] = mapped_column(Boolean)
    p_better: Mapped[float | None]
    p_worse: Mapped[float | None]
    p_similar: Mapped[float | None]
    logp_better: Mapped[float | None]
    logp_worse: Mapped[float | None]
    logp_similar: Mapped[float | None]
    reference_hash: Mapped[str] = mapped_column(String(64), sort_order=1)


class PersonRow(Base):
    """A person who may use a shared app, and their role.

    ``identity`` is what the identity provider says the person is (the e-mail address, lower-case,
    or the provider's subject when it gives no address); ``added_by`` is the admin who gave the
    role, or ``configuration`` for the first admins (``COMPASSESS_ADMINS``).
    """

    __tablename__ = "people"

    id: Mapped[IntKey]
    identity: Mapped[str] = mapped_column(String(255), unique=True)
    role: Mapped[str] = mapped_column(String(16))
    added_by: Mapped[str] = mapped_column(String(255), default="")
    created_at: Mapped[Timestamp]
    updated_at: Mapped[Timestamp]


class SignOutRow(Base):
    """When a person last signed out of a shared app, as the newest ID-token issue time
    (``iat``, seconds since the epoch) that no longer signs them in
    (``compassess_core.people.access.signed_out_through``): Streamlit's sign-in cookie outlives a
    sign-out, so the app refuses a cookie whose token was issued at or before it. One row per
    identity that ever signed out; a person without a role may have one too."""

    __tablename__ = "sign_outs"

    identity: Mapped[str] = mapped_column(String(255), primary_key=True)
    signed_out_through: Mapped[int] = mapped_column(BigInteger)
    updated_at: Mapped[Timestamp]


# ------------------------------------------------------------ annotation campaigns (migration 0009)

#: States of a campaign: annotators label an open one only.
CAMPAIGN_STATUSES = ("open", "closed")
#: How a campaign's pairs were chosen when it was created.
CAMPAIGN_SELECTIONS = ("all", "sample", "informative")


class CampaignRow(Base):
    """Work handed to named people: one dataset and aspect, guidelines, how many people label
    each pair (``overlap``) and a pair list fixed when it is created (``campaign_pairs``)."""

    __tablename__ = "campaigns"
    id: Mapped[IntKey]
    name: Mapped[str] = mapped_column(String(MAX_NAME_LENGTH), unique=True)
    dataset_id: Mapped[int] = cascade("datasets", index=True)
    aspect: Mapped[str] = mapped_column(String(255))
    guidelines: Mapped[str] = mapped_column(Text, default="")
    overlap: Mapped[int] = mapped_column(Integer, default=2)
    selection: Mapped[str] = mapped_column(String(16), default="all")
    seed: Mapped[int] = mapped_column(Integer, default=0)
    created_by: Mapped[str] = mapped_column(String(255), default="")
    created_at: Mapped[Timestamp]
    status: Mapped[str] = mapped_column(String(16), default="open")


class CampaignAnnotatorRow(Base):
    """A person assigned to a campaign: only they label its pairs, and see it."""

    __tablename__ = "campaign_annotators"
    __table_args__ = (UniqueConstraint("campaign_id", "identity",
                                       name="uq_campaign_annotators_campaign_id"),)

    id: Mapped[IntKey]
    campaign_id: Mapped[int] = cascade("campaigns")
    identity: Mapped[str] = mapped_column(String(255), index=True)
    added_by: Mapped[str] = mapped_column(String(255), default="")
    added_at: Mapped[Timestamp]


class CampaignPairRow(Base):
    """One unordered pair of a campaign (``low_id`` < ``high_id``), in the order it was chosen."""

    __tablename__ = "campaign_pairs"
    __table_args__ = (UniqueConstraint("campaign_id", "low_id", "high_id",
                                       name="uq_campaign_pairs_campaign_id"),)

    id: Mapped[IntKey]
    campaign_id: Mapped[int] = cascade("campaigns")
    position: Mapped[int]
    context_id: Mapped[int] = cascade("contexts", index=True)
    low_id: Mapped[int] = cascade("candidates", index=True)
    high_id: Mapped[int] = cascade("candidates", index=True)


class PanelRow(Base):
    """A panel of judges: two or more runs on one dataset and aspect combined into one verdict
    per pair (``compassess_core.stats.panel``). Only its definition is stored: the combined
    probabilities are computed when read, like a threshold or a calibration.

    ``combine`` is ``poe`` or ``vote``; ``weights`` is ``"equal"``, ``"learnt"`` or one number per
    member in the members' order; ``scaling`` how each member's p is debiased (``balanced``,
    ``calibrated``, ``auto``)."""

    __tablename__ = "panels"
    id: Mapped[IntKey]
    name: Mapped[str] = mapped_column(String(MAX_NAME_LENGTH), unique=True)
    dataset_id: Mapped[int] = cascade("datasets", index=True)
    aspect: Mapped[str] = mapped_column(String(255))
    combine: Mapped[str] = mapped_column(String(16), default="poe")
    weights: Mapped[Any] = mapped_column(JSON)
    scaling: Mapped[str] = mapped_column(String(16), default="balanced")
    created_by: Mapped[str] = mapped_column(String(255), default="")
    created_at: Mapped[Timestamp]


class PanelMemberRow(Base):
    """A run on a panel, in the panel's order (the order of hand-set weights). A run on a panel
    is not deleted (``db.manage`` refuses: delete the panel first); deleting the dataset removes
    its panels with its runs."""

    __tablename__ = "panel_members"
    __table_args__ = (UniqueConstraint("panel_id", "run_id", name="uq_panel_members_panel_id"),)

    id: Mapped[IntKey]
    panel_id: Mapped[int] = cascade("panels")
    run_id: Mapped[int] = cascade("runs", index=True)
    position: Mapped[int]


# ----------------------------------------- tuned wordings and the judge's reasons (migration 0015)

class TemplateRow(Base):
    """A named comparison template (``{context} {a} {b} {aspect}``) kept in the store: what
    ``compassess run --template NAME``, the Run page and the API accept by name. ``noun`` is the
    answer's noun (the primer "Answer: <noun>"); ``tuning`` the name of the tuning that saved it
    (None: saved by hand), which may replace it when resumed; ``source`` says in words where it
    came from. It outlives the dataset it was tuned on."""

    __tablename__ = "templates"

    id: Mapped[IntKey]
    name: Mapped[str] = mapped_column(String(MAX_NAME_LENGTH), unique=True)
    text: Mapped[str] = mapped_column(Text)
    noun: Mapped[str] = mapped_column(String(64))
    tuning: Mapped[str | None] = mapped_column(String(MAX_NAME_LENGTH), nullable=True)
    source: Mapped[str] = mapped_column(Text, default="")
    created_by: Mapped[str] = mapped_column(String(255), default="")
    created_at: Mapped[Timestamp]
    updated_at: Mapped[Timestamp]


class TuningRow(Base):
    """A tuning of the judge's instruction (``compassess_core.runs.tuning``): its options and the
    wordings it tried or will try (a JSON list, in order; paraphrases a writer wrote are added
    as they are written, so a resumed tuning judges the same texts). Each wording is judged by a
    run of its own (``tune-<name>-<key>``); the table of scores is computed from those runs when
    read. ``status``, ``message``, ``heartbeat_at`` and ``cancel_requested`` as a run's."""

    __tablename__ = "tunings"
    id: Mapped[IntKey]
    name: Mapped[str] = mapped_column(String(MAX_NAME_LENGTH), unique=True)
    dataset_id: Mapped[int] = cascade("datasets", index=True)
    aspect: Mapped[str] = mapped_column(Text)
    options: Mapped[dict[str, Any]] = mapped_column(JSON)
    wordings: Mapped[list[Any]] = mapped_column(JSON, default=list)
    status: Mapped[str] = mapped_column(String(32), default="pending")
    message: Mapped[str | None] = mapped_column(Text, nullable=True)
    cancel_requested: Mapped[bool] = mapped_column(Boolean, default=False)
    heartbeat_at: Mapped[datetime | None] = mapped_column(UTCDateTime(), nullable=True)
    created_by: Mapped[str] = mapped_column(String(255), default="")
    created_at: Mapped[Timestamp]


class ExplanationRow(Base):
    """The judge's reasons for one stored verdict: what the judge (``judge_key``, the identity a
    run records) wrote when asked why it answered as it did to the prompt ``prompt_hash`` (one
    order of a pair), at most ``max_tokens`` tokens. Keyed like the comparison cache (judge and
    prompt), so every run of that judge on that prompt shows the same text; ``verdict`` (``A`` or
    ``B``) and ``p`` are the verdict it was asked to explain. It never changes a comparison."""

    __tablename__ = "explanations"
    __table_args__ = (
        UniqueConstraint("prompt_hash", "judge_key", "max_tokens",
                         name="uq_explanations_prompt_hash"),
    )

    id: Mapped[IntKey]
    context_id: Mapped[int] = cascade("contexts", index=True)
    a_id: Mapped[int] = cascade("candidates", index=True)
    b_id: Mapped[int] = cascade("candidates", index=True)
    prompt_hash: Mapped[str] = mapped_column(String(128))
    judge_key: Mapped[str] = mapped_column(String(1024))
    max_tokens: Mapped[int]
    verdict: Mapped[str] = mapped_column(String(8))
    p: Mapped[float | None]
    text: Mapped[str] = mapped_column(Text)
    created_at: Mapped[Timestamp]
