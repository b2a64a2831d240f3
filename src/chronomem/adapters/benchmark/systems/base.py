"""The one interface a memory system implements to be benchmarked (``docs/benchmark.md``).

An adapter is one file: a :class:`System` subclass that writes a scenario's
ops through the system's own public API and answers its questions. What the
system cannot express raises :class:`Unsupported` (its answers then count as
"unsupported", never as wrong); any other exception counts as a failure.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any

from ..scenario import Op, Question, Scenario

__all__ = ["System", "Unsupported"]


class Unsupported(Exception):
    """The system has no way to express this op or question (the reason says which part)."""


class System(ABC):
    """A memory system under test.

    The runner calls :meth:`start` before each scenario (a fresh, empty memory),
    :meth:`apply` for each op in order, then :meth:`ask` for each question, then
    :meth:`finish`; :meth:`close` once at the end. Each op carries its system
    time ``op.at``: a system with a settable clock writes at that time; one
    without may map the scenario's times onto its own (the ``known_at`` of a
    question names the state after every op with ``at <= known_at``).

    :meth:`ask` returns the raw answer in the form of the question's kind
    (``scenario.canonical_answer`` says which): objects for ``values``,
    ``[object, valid_from, valid_to]`` for ``intervals`` (``None`` for an
    unknown start or open end), episode refs for ``evidence``, ``[start, end]``
    pairs for ``mentions``.
    """

    #: the name ``--systems`` selects it by
    name: str = ""

    @abstractmethod
    def version(self) -> str:
        """What is measured: the package and its version, and the backend."""

    @abstractmethod
    def start(self, scenario: Scenario) -> None:
        """Begin a scenario on an empty memory."""

    @abstractmethod
    def apply(self, op: Op) -> None:
        """Write one op (raise :class:`Unsupported` if the system cannot express it)."""

    @abstractmethod
    def ask(self, question: Question) -> Any:
        """Answer one question (raise :class:`Unsupported` if the system cannot)."""

    def finish(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """End the scenario (release what :meth:`start` opened)."""

    def close(self) -> None:  # noqa: B027 - an optional hook, empty by default
        """Release everything (called once, after the last scenario)."""
