"""The hostile-input corpus (``corpus.py``) through the Python API on both
backends: every case ends in its typed error (or its documented
acceptance), and after an error the store is exactly as it was (its export
and everything the public API says about it)."""

from __future__ import annotations

import datetime as _dt
import io
import re
from pathlib import Path
from typing import Any

import pytest

import chronomem
from chronomem import InvalidInputError, InvalidTimeError, LimitExceededError, Memory, errors
from chronomem.core import limits
from chronomem.core.time import Precision, TimePoint, period_end
from chronomem.io import export_jsonl, import_jsonl
from contract._helpers import MemoryFactory, snapshot
from hostile import corpus
from hostile.corpus import CASES, OPS, Case


def call(mem: Memory, case: Case) -> Any:
    """Run one case's operation (the Python method of that name)."""
    return getattr(mem, case.op)(**case.args)


def state(mem: Memory) -> tuple[str, dict[str, Any], list[Any]]:
    """Everything stored in ``mem``'s namespace, for "unchanged" checks."""
    buf = io.StringIO()
    export_jsonl(mem, buf)
    body = buf.getvalue().split("\n", 1)[1]  # the header line carries the export's own time
    episodes = sorted((e.id, e.text, e.session, e.speaker, e.source) for e in mem.episodes())
    return body, snapshot(mem), episodes


def outcome(mem: Memory, case: Case) -> str:
    """``"accept"``, the name of the :class:`ChronomemError` raised, or
    ``"other:<type>"`` for anything else."""
    try:
        call(mem, case)
    except chronomem.ChronomemError as exc:
        return type(exc).__name__
    except Exception as exc:  # noqa: BLE001 - an untyped error is what this corpus hunts
        return f"other:{type(exc).__name__}"
    return "accept"


def matches(got: str, expect: str) -> bool:
    """Whether outcome ``got`` is what ``expect`` promises (an error of that class or a subclass)."""
    if expect == "accept" or got == "accept" or got.startswith("other:"):
        return got == expect
    return issubclass(getattr(errors, got), getattr(errors, expect))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_case(prepared: Memory, case: Case) -> None:
    before = state(prepared)
    got = outcome(prepared, case)
    assert matches(got, case.expect), f"{case.id}: expected {case.expect}, got {got}"
    if got != "accept":
        assert state(prepared) == before, f"{case.id}: the store changed on {got}"


def test_corpus_limits_are_the_documented_ones() -> None:
    """The corpus writes the limits out; they must be the library's."""
    for name in ("MAX_NAME_CHARS", "MAX_EPISODE_CHARS", "MAX_QUERY_CHARS", "MAX_SOURCE_CHARS", "MAX_ID_CHARS",
                 "MAX_SESSION_CHARS", "MAX_SPEAKER_CHARS", "MAX_REASON_CHARS", "MAX_LITERAL_CHARS",
                 "MAX_JSON_BYTES", "MAX_JSON_DEPTH", "MAX_JSON_KEYS", "MAX_INT", "MAX_FACTS_LIMIT", "MAX_K",
                 "MAX_BUDGET_TOKENS"):
        assert getattr(corpus, name) == getattr(limits, name), name


def test_corpus_is_large_and_covers_every_op() -> None:
    assert len(CASES) >= 300
    assert {c.op for c in CASES} == set(OPS)
    assert {c.expect for c in CASES} >= {"accept", "InvalidInputError", "InvalidTimeError", "LimitExceededError"}


def test_docs_list_every_limit_with_its_value() -> None:
    """docs/limits.md has one table row per limit of the module, with its value."""
    text = (Path(__file__).resolve().parents[2] / "docs" / "limits.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `([A-Z_]+)` \| (-?\d+) \|", text, flags=re.MULTILINE))
    assert {name: int(value) for name, value in rows.items()} == limits.LIMITS


@pytest.mark.parametrize("make", [
    lambda: TimePoint(0, 99),  # type: ignore[arg-type]
    lambda: TimePoint(0, 0),  # type: ignore[arg-type]
    lambda: TimePoint(0, True),  # type: ignore[arg-type]
    lambda: TimePoint(-(2**63), Precision.DAY),
    lambda: TimePoint(2**63 - 1, Precision.DAY),
    lambda: TimePoint(1.5, Precision.DAY),  # type: ignore[arg-type]
    lambda: period_end("9999"),
    lambda: period_end(_dt.datetime.max),
    lambda: period_end("9999-12-31T23:59:59.999999Z"),
], ids=["precision_99", "precision_0", "precision_bool", "us_min", "us_max", "us_float", "period_end_9999",
        "period_end_datetime_max", "period_end_last_microsecond"])
def test_time_points_check_themselves(make: Any) -> None:
    with pytest.raises(InvalidTimeError):
        make()


def test_a_time_point_with_an_int_precision_is_normalised() -> None:
    assert TimePoint(0, 3).precision is Precision.DAY  # type: ignore[arg-type]


@pytest.mark.parametrize("reason", [{"a": 1}, 5, ["x"], "a\x00b", "\ud800", "x" * (limits.MAX_REASON_CHARS + 1)])
def test_every_reason_is_checked(prepared: Memory, reason: Any) -> None:
    fid = prepared.facts("Acme", "works_with")[0].id
    before = state(prepared)
    for write in (lambda: prepared.invalidate_fact(fid, "2024-06-01", reason=reason),
                  lambda: prepared.retract(fid, reason),
                  lambda: prepared.correct(fid, reason=reason, confidence=0.5),
                  lambda: prepared.erase(fid, confirm=True, reason=reason)):
        with pytest.raises(InvalidInputError):
            write()
    assert state(prepared) == before


@pytest.mark.parametrize("item", [
    {"subject": "A", "predicate": "p", "object": "B", "literal": "no"},
    {"subject": "A", "predicate": "p", "object": "B", "properties": {"x": float("nan")}},
    {"subject": "A\ud800", "predicate": "p", "object": "B"},
    ("A", "p", 2**70),
])
def test_a_bad_batch_item_writes_nothing(prepared: Memory, item: Any) -> None:
    before = state(prepared)
    with pytest.raises(InvalidInputError, match="item 1"):
        prepared.add_facts([("X", "p", "Y"), item])
    assert state(prepared) == before


def test_batches_are_bounded(prepared: Memory, monkeypatch: pytest.MonkeyPatch) -> None:
    from chronomem.service import facts as fact_service
    from chronomem.service.evidence import episodes as episode_service

    monkeypatch.setattr(fact_service, "MAX_BATCH", 3)
    monkeypatch.setattr(episode_service, "MAX_BATCH", 3)
    before = state(prepared)
    with pytest.raises(LimitExceededError) as info:
        prepared.add_facts(("X", "p", f"Y{i}") for i in range(4))
    assert info.value.limit == 3
    with pytest.raises(LimitExceededError):
        prepared.add_episodes([f"turn {i}" for i in range(4)])
    assert state(prepared) == before
    assert len(prepared.add_facts(("X", "p", f"Y{i}") for i in range(3))) == 3


def test_the_error_names_the_field_and_the_limit(prepared: Memory) -> None:
    with pytest.raises(LimitExceededError) as info:
        prepared.add_fact("Acme", "p", "x", source="s" * (limits.MAX_SOURCE_CHARS + 1))
    assert (info.value.field, info.value.limit, info.value.actual) == ("source", limits.MAX_SOURCE_CHARS,
                                                                       limits.MAX_SOURCE_CHARS + 1)
    assert "source" in str(info.value) and str(limits.MAX_SOURCE_CHARS) in str(info.value)


def test_plain_import_skips_and_counts_bad_rows(prepared: Memory) -> None:
    lines = [
        '{"subject": "Ann", "predicate": "knows", "object": "Bo"}',
        '{"subject": "Ann\\ud800", "predicate": "knows", "object": "Cy"}',  # a lone surrogate, JSON-escaped
        '{"subject": "Ann", "predicate": "knows", "object": "Di", "source": "a\\u0000b"}',
        '{"subject": "Ann", "predicate": "knows", "object": "Ed", "properties": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"subject": "Ann", "predicate": "knows", "object": "Fa", "literal": "no"}',
        '{"subject": "Ann", "predicate": "age", "object": 100000000000000000000000}',
        '{"subject": "Ann", "predicate": "knows", "object": "Gus"}',
    ]
    result = import_jsonl(prepared, io.StringIO("\n".join(lines) + "\n"))
    assert (result.rows, result.added, result.skipped) == (7, 2, 5)
    assert sorted(str(f.object) for f in prepared.facts("Ann")) == ["Bo", "Gus"]


@pytest.mark.parametrize("poison", ["Ac\\u0000me", "Acme\\ud800"])
def test_a_restore_with_poison_text_writes_nothing(make_memory: MemoryFactory, prepared: Memory,
                                                  poison: str) -> None:
    buf = io.StringIO()
    export_jsonl(prepared, buf)
    text = buf.getvalue().replace('"name":"Acme"', f'"name":"{poison}"', 1)
    assert poison in text
    target = make_memory("restored")
    with pytest.raises(InvalidInputError, match="line"):
        import_jsonl(target, io.StringIO(text))
    assert target.entities() == [] and target.stats().facts == 0


@pytest.mark.parametrize("confirm", ["no", "yes", 1, None, False])
def test_erasure_needs_a_real_true(prepared: Memory, confirm: Any) -> None:
    fid = prepared.facts("Acme", "works_with")[0].id
    episode = prepared.episodes()[0].id
    before = state(prepared)
    expected = chronomem.ConfirmationRequiredError if confirm is False else InvalidInputError
    with pytest.raises(expected):
        prepared.erase(fid, confirm=confirm)
    with pytest.raises(expected):
        prepared.erase_episode(episode, confirm=confirm)
    assert state(prepared) == before
