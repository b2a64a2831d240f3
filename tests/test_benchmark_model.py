"""The benchmark's reference model of facts (``adapters/benchmark/model.py``): the examples of
``docs/concepts/time.md`` replayed through it, the ops it refuses, and properties of any history."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chronomem.adapters.benchmark.model import FactModel, ModelCorner, ModelError, answer
from chronomem.adapters.benchmark.scenario import Op, Question, canonical_answer, instant, load_scenarios
from chronomem.core.time import MAX_US, MIN_US

HANDWRITTEN = Path(__file__).parent.parent / "src/chronomem/adapters/benchmark/data/handwritten.jsonl"


class _Run:
    """Ops at one-hour steps of system time, as a scenario would state them."""

    def __init__(self) -> None:
        self.model = FactModel()
        self.hour = 0

    def op(self, kind: str, **args: Any) -> int:
        self.hour += 1
        at = instant(f"2025-01-01T{self.hour:02d}:00Z")
        self.model.apply(Op(kind, f"2025-01-01T{self.hour:02d}:00Z", args), at)
        return at

    def intervals(self, subject: str, predicate: str, known_at: str | None = None) -> Any:
        args: dict[str, Any] = {"subject": subject, "predicate": predicate}
        if known_at is not None:
            args["known_at"] = known_at
        return answer(self.model, Question("intervals", "duplicates", args, []))

    def values(self, subject: str, predicate: str, as_of: str, known_at: str | None = None) -> Any:
        args: dict[str, Any] = {"subject": subject, "predicate": predicate, "as_of": as_of}
        if known_at is not None:
            args["known_at"] = known_at
        return answer(self.model, Question("values", "duplicates", args, []))


def test_acme_ceo_splicing_and_known_at() -> None:
    r = _Run()
    r.op("define", predicate="ceo", cardinality="one")
    r.op("assert", ref="a", subject="Acme", predicate="ceo", object="Alice", valid_from="2015")
    bob_at = r.op("assert", ref="b", subject="Acme", predicate="ceo", object="Bob", valid_from="2022")
    assert r.intervals("Acme", "ceo") == [["Alice", "2015", "2022"], ["Bob", "2022", None]]
    r.op("assert", ref="c", subject="Acme", predicate="ceo", object="Carla", valid_from="2020")
    assert r.intervals("Acme", "ceo") == [["Alice", "2015", "2020"], ["Carla", "2020", "2022"], ["Bob", "2022", None]]
    assert r.values("Acme", "ceo", "2021-06") == ["Carla"]
    assert r.values("Acme", "ceo", "2021-06", known_at="2025-01-01T03:00Z") == ["Alice"]
    assert r.model.values("acme", "CEO", instant("2021-06"), bob_at) == ["Alice"]  # names by normalized key
    assert r.values("Acme", "ceo", "2022") == ["Bob"]  # half-open: Carla ends where Bob starts
    assert r.values("Acme", "ceo", "2021-12-31T23:59:59.999999Z") == ["Carla"]
    assert r.values("Acme", "ceo", "2014") == []
    assert r.intervals("Acme", "ceo", known_at="2025-01-01T00:30Z") == []  # before the first op


def test_dana_retraction_restores_berlin() -> None:
    r = _Run()
    r.op("define", predicate="lives in", cardinality="one")
    r.op("assert", ref="berlin", subject="Dana", predicate="lives in", object="Berlin", valid_from="2021-05")
    r.op("assert", ref="paris", subject="Dana", predicate="lives in", object="Paris", valid_from="2023-02")
    assert r.intervals("Dana", "lives in") == [["Berlin", "2021-05", "2023-02"], ["Paris", "2023-02", None]]
    r.op("retract", ref="paris")
    assert r.intervals("Dana", "lives in") == [["Berlin", "2021-05", None]]
    assert r.intervals("Dana", "lives in", known_at="2025-01-01T03:30Z") == [
        ["Berlin", "2021-05", "2023-02"], ["Paris", "2023-02", None]]
    with pytest.raises(ModelError, match="no longer believed"):
        r.op("retract", ref="paris")


def test_ann_coalescing() -> None:
    r = _Run()
    r.op("assert", ref="a", subject="Ann", predicate="member of", object="Club", valid_from="2020", valid_to="2021")
    r.op("assert", ref="b", subject="Ann", predicate="member of", object="Club", valid_from="2021", valid_to="2022")
    assert r.intervals("Ann", "member of") == [["Club", "2020", "2022"]]
    r.op("assert", ref="c", subject="ann", predicate="member of", object="club", valid_from="2020-06",
         valid_to="2020-09")
    assert r.intervals("Ann", "member of") == [["Club", "2020", "2022"]]  # contained: nothing added
    r.op("assert", ref="d", subject="Ann", predicate="member of", object="Club", valid_from="2023")
    assert r.intervals("Ann", "member of") == [["Club", "2020", "2022"], ["Club", "2023", None]]
    # the three first refs name one fact: ending it by any of them ends the union
    r.op("end", ref="c", ended="2021-06")
    assert r.intervals("Ann", "member of") == [["Club", "2020", "2021-06"], ["Club", "2023", None]]


def test_kafka_correction_to_sqs() -> None:
    r = _Run()
    r.op("define", predicate="queue", cardinality="one")
    r.op("assert", ref="rabbit", subject="Payments", predicate="queue", object="RabbitMQ", valid_from="2021")
    r.op("assert", ref="kafka", subject="Payments", predicate="queue", object="Kafka", valid_from="2023-04")
    at = r.op("correct", ref="kafka", set={"object": "Amazon SQS"})
    assert r.values("Payments", "queue", "2024") == ["Amazon SQS"]
    assert r.model.values("Payments", "queue", instant("2024"), at - 1) == ["Kafka"]
    r.op("correct", ref="kafka", set={"valid_from": "2023-10"})  # RabbitMQ gets its interval back, cut again
    assert r.intervals("Payments", "queue") == [["RabbitMQ", "2021", "2023-10"], ["Amazon SQS", "2023-10", None]]


def test_change_ends_a_value_and_is_not_undone_by_retracting_its_cutter() -> None:
    r = _Run()
    r.op("define", predicate="ceo", cardinality="one")
    r.op("assert", ref="a", subject="Acme", predicate="ceo", object="Alice", valid_from="2015")
    r.op("assert", ref="b", subject="Acme", predicate="ceo", object="Bob", valid_from="2022")
    r.op("end", ref="a", ended="2020")
    r.op("retract", ref="b")
    assert r.intervals("Acme", "ceo") == [["Alice", "2015", "2020"]]


def test_a_value_given_back_coalesces_with_a_statement_it_contains() -> None:
    """Retracting Oslo gives PG back over all time, containing the separate PG [2025, 2033): as if
    Oslo had never been written, that assert added nothing, so a later Oslo ends the one PG fact."""
    r = _Run()
    r.op("define", predicate="database", cardinality="one")
    r.op("assert", ref="a", subject="Atlas", predicate="database", object="PG")
    r.op("assert", ref="b", subject="Atlas", predicate="database", object="Oslo", valid_from="2024",
         valid_to="2025")
    r.op("assert", ref="c", subject="Atlas", predicate="database", object="PG", valid_from="2025", valid_to="2033")
    assert r.intervals("Atlas", "database") == [["PG", None, "2024"], ["Oslo", "2024", "2025"],
                                                 ["PG", "2025", "2033"]]
    r.op("retract", ref="b")
    assert r.intervals("Atlas", "database") == [["PG", None, None]]
    assert r.model.ref_fact("c") is None and r.model.ref_fact("a") is not None  # folded into the one given back
    r.op("assert", ref="d", subject="Atlas", predicate="database", object="Oslo", valid_from="2007",
         valid_to="2011")
    assert r.intervals("Atlas", "database") == [["PG", None, "2007"], ["Oslo", "2007", "2011"]]
    with pytest.raises(ModelError, match="no longer believed"):
        r.op("end", ref="c", ended="2030")


def test_a_value_given_back_keeps_its_id_and_ends_the_union() -> None:
    r = _Run()
    r.op("define", predicate="database", cardinality="one")
    r.op("assert", ref="c", subject="Atlas", predicate="database", object="PG", valid_from="2025", valid_to="2033")
    r.op("assert", ref="b", subject="Atlas", predicate="database", object="Oslo", valid_from="2024",
         valid_to="2025")
    r.op("assert", ref="a", subject="Atlas", predicate="database", object="PG", valid_to="2030")  # cut at 2024
    r.op("retract", ref="b")
    assert r.intervals("Atlas", "database") == [["PG", None, "2033"]]  # overlapping: the union
    assert r.model.ref_fact("a") is not None and r.model.ref_fact("c") is None  # the younger one given back
    r.op("end", ref="a", ended="2031")
    assert r.intervals("Atlas", "database") == [["PG", None, "2031"]]


def test_a_correction_cutting_a_union_it_gave_back_is_a_corner() -> None:
    """B replaced A [2016, …) at its start and cut A [2014, …) there; moving B to 2014 gives both
    A back (one statement) and replaces its first part: the whole union, or that part only?"""
    r = _Run()
    r.op("define", predicate="ceo", cardinality="one")
    r.op("assert", ref="z", subject="Acme", predicate="ceo", object="A", valid_from="2016")
    r.op("assert", ref="y", subject="Acme", predicate="ceo", object="B", valid_from="2016", valid_to="2020")
    r.op("assert", ref="x", subject="Acme", predicate="ceo", object="A", valid_from="2014")
    before = r.intervals("Acme", "ceo")
    assert before == [["A", "2014", "2016"], ["B", "2016", "2020"]]
    with pytest.raises(ModelCorner, match="union of values it gave back"):
        r.op("correct", ref="y", set={"valid_from": "2014"})
    assert r.intervals("Acme", "ceo") == before


def test_a_correction_that_changes_nothing_changes_nothing() -> None:
    """Written side by side before ``ceo`` was declared single-valued: a correction to the same
    object writes nothing (it is not rewritten under the new cardinality); a real one is."""
    r = _Run()
    r.op("assert", ref="a", subject="Acme", predicate="ceo", object="Alice", valid_from="2015")
    r.op("assert", ref="b", subject="Acme", predicate="ceo", object="Bob", valid_from="2018")
    r.op("define", predicate="ceo", cardinality="one")
    r.op("correct", ref="b", set={"object": "bob"})
    assert r.intervals("Acme", "ceo") == [["Alice", "2015", None], ["Bob", "2018", None]]
    r.op("correct", ref="b", set={"object": "Carl"})
    assert r.intervals("Acme", "ceo") == [["Alice", "2015", "2018"], ["Carl", "2018", None]]


def test_refused_ops() -> None:
    r = _Run()
    r.op("assert", ref="a", subject="Ada", predicate="speaks", object="French", valid_from="2020", valid_to="2022")
    before = r.intervals("Ada", "speaks")
    with pytest.raises(ModelError, match="inside the interval"):
        r.op("end", ref="a", ended="2020")  # its own start: nothing would be left
    with pytest.raises(ModelError, match="inside the interval"):
        r.op("end", ref="a", ended="2023")
    with pytest.raises(ModelError, match="names no fact"):
        r.op("retract", ref="zz")
    with pytest.raises(ModelError, match="after valid_from"):
        r.op("assert", ref="b", subject="Ada", predicate="speaks", object="German", valid_from="2022",
             valid_to="2022")
    with pytest.raises(ModelError, match="after valid_from"):
        r.op("correct", ref="a", set={"valid_from": "2023"})
    with pytest.raises(ModelError, match="used twice"):
        r.op("assert", ref="a", subject="Ada", predicate="speaks", object="German")
    with pytest.raises(ModelError, match="not after"):
        r.model.apply(Op("retract", "2025-01-01T00:00Z", {"ref": "a"}), 0)
    assert r.intervals("Ada", "speaks") == before  # a refused op changes nothing
    assert not issubclass(ModelError, ValueError) and issubclass(ModelCorner, ModelError)


def test_partial_precision_is_kept_per_bound() -> None:
    r = _Run()
    r.op("assert", ref="a", subject="Ada", predicate="lives in", object="London", valid_from="2019-06",
         valid_to="2024-03-05T10:30Z")
    assert r.intervals("Ada", "lives in") == [["London", "2019-06", "2024-03-05T10:30Z"]]
    assert r.model.intervals("Ada", "lives in") == [("London", instant("2019-06"), instant("2024-03-05T10:30Z"))]
    assert r.values("Ada", "lives in", "2019-05-31T23:59:59.999999Z") == []
    assert r.values("Ada", "lives in", "2019-06") == ["London"]


@pytest.mark.skipif(not HANDWRITTEN.exists(), reason="data/handwritten.jsonl is not written yet")
def test_the_model_agrees_with_every_handwritten_answer() -> None:
    checked = 0
    for scenario in load_scenarios(HANDWRITTEN):
        model = FactModel()
        for op in scenario.ops:
            model.apply(op, instant(op.at))
        for q in scenario.questions:
            if q.ask in ("values", "intervals"):
                assert answer(model, q) == canonical_answer(q.ask, q.expect), (scenario.id, q.args)
                checked += 1
    assert checked > 100


# -- properties of any history --------------------------------------------------------------

_TIMES = ["2010", "2012-03", "2014-07-15", "2016", "2018-02-01T10:30Z", "2020", "2022-11"]
_OBJECTS = ["Alice", "Bob", "Carla", "alice"]
_PREDICATES = ["ceo", "works at"]  # ceo single-valued, works at many-valued

_bound = st.one_of(st.none(), st.sampled_from(_TIMES))
_op = st.one_of(
    st.tuples(st.just("assert"), st.sampled_from(_PREDICATES), st.sampled_from(_OBJECTS), _bound, _bound),
    st.tuples(st.just("end"), st.integers(0, 30), st.sampled_from(_TIMES)),
    st.tuples(st.just("correct"), st.integers(0, 30), st.sampled_from(["object", "valid_from", "valid_to"]),
              st.sampled_from(_OBJECTS), _bound),
    st.tuples(st.just("retract"), st.integers(0, 30)),
)


def _replay(draws: list[tuple[Any, ...]]) -> tuple[FactModel, list[int]]:
    """Apply the drawn ops (skipping those the rules refuse); returns the model and the system times."""
    model = FactModel()
    model.apply(Op("define", "2025-01-01T00:00Z", {"predicate": "ceo", "cardinality": "one"}), instant("2025"))
    times = [instant("2025")]
    refs: list[str] = []
    for i, draw in enumerate(draws):
        at = instant("2025") + (i + 1) * 3_600_000_000
        kind = draw[0]
        if kind == "assert":
            args: dict[str, Any] = {"ref": f"r{i}", "subject": "Acme", "predicate": draw[1], "object": draw[2],
                                    "valid_from": draw[3], "valid_to": draw[4]}
        elif not refs:
            continue
        elif kind == "end":
            args = {"ref": refs[draw[1] % len(refs)], "ended": draw[2]}
        elif kind == "correct":
            value = draw[3] if draw[2] == "object" else draw[4]
            args = {"ref": refs[draw[1] % len(refs)], "set": {draw[2]: value}}
        else:
            args = {"ref": refs[draw[1] % len(refs)]}
        try:
            model.apply(Op(kind, "x", args), at)
        except ModelError:
            continue
        times.append(at)
        if kind == "assert":
            refs.append(f"r{i}")
    return model, times


_PROBES = sorted({instant(t) for t in _TIMES} | {instant(t) - 1 for t in _TIMES} | {MIN_US, instant("2030")})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_op, min_size=1, max_size=25))
def test_single_valued_keys_never_hold_two_values_at_once(draws: list[tuple[Any, ...]]) -> None:
    model, times = _replay(draws)
    for known_at in [None, *times]:
        for t in _PROBES:
            assert len(model.values("Acme", "ceo", t, known_at)) <= 1
        spans = model.intervals("Acme", "ceo", known_at)
        for (_a, _lo1, hi1), (_b, lo2, _hi2) in zip(spans, spans[1:], strict=False):
            assert hi1 <= lo2  # sorted by start and disjoint


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_op, min_size=1, max_size=25))
def test_values_are_the_intervals_containing_the_instant(draws: list[tuple[Any, ...]]) -> None:
    model, times = _replay(draws)
    for predicate in _PREDICATES:
        for known_at in [None, times[len(times) // 2]]:
            spans = model.intervals("Acme", predicate, known_at)
            for t in _PROBES:
                want = sorted({o for o, lo, hi in spans if lo <= t < hi})
                assert model.values("Acme", predicate, t, known_at) == want
            for _o, lo, hi in spans:
                assert MIN_US <= lo < hi <= MAX_US
            # one object's believed intervals neither overlap nor touch (they would have coalesced)
            by_obj: dict[str, list[tuple[int, int]]] = {}
            for o, lo, hi in spans:
                by_obj.setdefault(o, []).append((lo, hi))
            for pieces in by_obj.values():
                pieces.sort()
                assert all(h1 < l2 for (_l1, h1), (l2, _h2) in zip(pieces, pieces[1:], strict=False))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(_op, min_size=2, max_size=24), st.integers(1, 23))
def test_a_known_at_read_is_not_changed_by_later_ops(draws: list[tuple[Any, ...]], cut: int) -> None:
    cut = min(cut, len(draws) - 1)
    early, _times = _replay(draws[:cut])
    full, times = _replay(draws)
    known_at = instant("2025") + cut * 3_600_000_000 + 1  # after the first `cut` drawn ops, before the rest
    for predicate in _PREDICATES:
        assert full.intervals("Acme", predicate, known_at) == early.intervals("Acme", predicate)
        assert full.rendered_intervals("Acme", predicate, known_at) == early.rendered_intervals("Acme", predicate)
    assert full.intervals("Acme", "ceo", times[0] - 1) == []
