"""Typed errors of the engine. The CLI maps them to exit code 2 (bad input) and the UI to messages.

Never raise a bare ``ValueError`` for a user's mistake: raise one of these, naming what and where.
"""

from __future__ import annotations

from dataclasses import dataclass


class CompAssessError(Exception):
    """Base class of every error the engine raises on purpose."""


class InputError(CompAssessError):
    """The user gave something unusable (a file, an option, a template). CLI exit code 2."""


@dataclass(frozen=True)
class Problem:
    """One validation problem, located as precisely as the input allows.

    ``row`` is the 1-based data row as a spreadsheet shows it (the header is row 1, so the first data
    row of a CSV is row 2; for JSONL it is the line number). ``None`` where the problem is not about
    one row (e.g. a missing column). ``cause`` is ``"file"`` when the file must change and
    ``"mapping"`` when choosing other columns for the canonical names would solve it.
    """

    file: str
    message: str
    row: int | None = None
    column: str | None = None
    cause: str = "file"

    def __str__(self) -> str:
        where = self.file
        if self.row is not None:
            where += f", row {self.row}"
        if self.column is not None:
            where += f", column '{self.column}'"
        return f"{where}: {self.message}"


class ValidationError(InputError):
    """A file failed validation. ``problems`` lists every problem found, not just the first."""

    def __init__(self, problems: list[Problem]):
        self.problems = list(problems)
        shown = "\n".join(f"  - {p}" for p in self.problems[:50])
        more = f"\n  ... and {len(self.problems) - 50} more" if len(self.problems) > 50 else ""
        super().__init__(f"{len(self.problems)} problem(s) found:\n{shown}{more}")


class TemplateError(InputError):
    """A prompt template is malformed (unknown or missing placeholder, bad braces)."""


class ModelLoadError(InputError):
    """A judge model could not be found or loaded."""


class RunNotFoundError(InputError):
    """No run (or dataset) of the given name exists in the store."""


class ObjectChanged(InputError):
    """What a page showed (or a script named) is no longer what the store holds: the object
    was renamed or deleted since, so a write aimed at it is refused and nothing is written."""


class LengthMismatchError(CompAssessError):
    """Arrays that must be aligned have different lengths (a programming error, not a user one)."""


class RunCancelled(CompAssessError):
    """A run was stopped on request; everything computed so far is stored."""


class RunInterrupted(KeyboardInterrupt):
    """A run stopped by Ctrl-C, SIGTERM or a notebook's stop button: everything computed so far
    is stored, the run is marked cancelled, and running it again resumes it. A
    ``KeyboardInterrupt``, so it stops a script or a notebook cell as Ctrl-C does."""
