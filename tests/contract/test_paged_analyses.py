"""The analyses that order on narrow reads build only their page (timeline
events from keys made on raw rows; bars, their titles and history rows only
for the page; a graph's edges and time span without literal-valued facts):
on a random history a page equals the same slice of the full answer, the
full answer equals the analysis run on every version (the pre-paging path),
and the narrowed reads equal the full reads filtered. Conflicts and diffs
are found on narrow rows too: a page (each conflict cut to its first facts)
equals the same slice of the full answer."""

from __future__ import annotations

import dataclasses
import random
from collections import Counter
from typing import Any

import pytest

from chronomem import ChronomemError, Memory
from chronomem.core import analysis as _analysis
from chronomem.core.time import to_us
from chronomem.service.reads import DEEP_OFFSET

NAMES = ("Ann", "Bob", "Cy")


def _random_history(mem: Memory, seed: int) -> None:
    """Adds (single- and multi-valued, edges and literals, incoming and
    outgoing), supersessions, invalidations, corrections and retractions."""
    rng = random.Random(seed)
    mem.define_predicate("ceo", cardinality="one")
    mem.define_predicate("likes", cardinality="many")
    ids: list[str] = []
    for _ in range(40):
        op = rng.random()
        try:
            if op < 0.55 or not ids:
                literal = rng.random() < 0.3
                obj = f"v{rng.randrange(4)}" if literal else rng.choice(NAMES)
                subject = rng.choice(NAMES)
                if obj == subject:
                    continue
                start = f"{rng.randrange(2000, 2020)}-0{rng.randrange(1, 10)}-01"
                end = f"{rng.randrange(2020, 2030)}-01-01" if rng.random() < 0.3 else None
                f = mem.add_fact(subject, rng.choice(("ceo", "likes", "said")), obj, start, end, literal=literal)
                ids.append(f.id)
            elif op < 0.7:
                mem.invalidate_fact(rng.choice(ids), f"{rng.randrange(2021, 2030)}-01-01",
                                    reason=rng.choice((None, "left")))
            elif op < 0.85:
                mem.correct(rng.choice(ids), valid_from=f"{rng.randrange(1990, 2000)}-01-01")
            else:
                mem.retract(rng.choice(ids), reason=rng.choice((None, "wrong")))
        except ChronomemError:
            pass  # e.g. a fact already closed: the history is what it is


def _unpaged_timeline(mem: Memory, name: str) -> list[object]:
    """The timeline as computed before paging: every version made a fact."""
    versions = mem.history(name, direction="both")
    ids = {f.id for f in versions}
    enders = {}
    for f in versions:
        if f.invalidated_by and f.invalidated_by not in ids:
            ender = mem.fact(f.invalidated_by)
            if ender.system_to is None:
                enders[ender.id] = ender
    return _analysis.timeline(versions, None, None, enders)  # type: ignore[return-value]


@pytest.mark.parametrize("seed", range(8))
def test_a_timeline_page_is_the_slice_of_the_full_timeline(mem: Memory, seed: int) -> None:
    _random_history(mem, seed)
    rng = random.Random(seed)
    for name in NAMES:
        full = mem.timeline(name)
        assert full == _unpaged_timeline(mem, name)
        for _ in range(5):
            off, n = rng.randrange(len(full) + 2), rng.randrange(1, 8)
            assert mem.timeline(name, limit=n, offset=off) == full[off: off + n]
        lo, hi = "2005", "2024"
        windowed = mem.timeline(name, lo, hi)
        assert windowed == [e for e in full if "2005" <= e.at.isoformat()[:4] < "2024"]
        assert mem.timeline(name, lo, hi, limit=3, offset=1) == windowed[1:4]


@pytest.mark.parametrize("seed", range(8))
def test_an_entity_timeline_page_is_the_slice_of_bars_and_history(mem: Memory, seed: int) -> None:
    _random_history(mem, seed)
    rng = random.Random(seed)
    for name in NAMES:
        for known_at in (None, mem.history(name, direction="both")[len(NAMES)].system_from
                         if len(mem.history(name, direction="both")) > len(NAMES) else None):
            bars = mem.fact_bars(name, as_of="2015", known_at=known_at)
            history = [v for v in mem.history(name, direction="both")
                       if known_at is None or v.system_from <= known_at][::-1]
            for _ in range(4):
                off, n = rng.randrange(len(bars) + 2), rng.randrange(1, 6)
                page = mem.entity_timeline(name, as_of="2015", known_at=known_at, limit=n, offset=off)
                assert page.bars == bars[off: off + n]
                assert page.bars_total == len(bars)
                assert page.statuses == dict(Counter(b.status for b in bars))
                assert page.history == history[off: off + n] and page.history_total == len(history)


@pytest.mark.parametrize("seed", range(4))
def test_edges_and_valid_span_are_the_full_reads_narrowed(mem: Memory, seed: int) -> None:
    _random_history(mem, seed)
    for name in NAMES:
        for as_of in (None, "2015", "2025"):
            everything = mem.facts(name, as_of=as_of, direction="both")
            assert mem.edges(name, as_of) == [f for f in everything if not f.literal]
        bounds = [t for f in mem.facts(name, direction="both") for t in (f.valid_from, f.valid_to) if t is not None]
        span = mem.valid_span(name)
        if not bounds:
            assert span is None
        else:
            assert span is not None
            assert (span[0], span[1]) == (min(to_us(t) for t in bounds), max(to_us(t) for t in bounds))


def _objects_alike(mem: Memory) -> None:
    """Overlapping values whose raw objects differ but whose texts or values
    are equal (the literal 1 and the entity "1"; the entity Bob and the
    literal "Bob"), and one value twice: what the narrow reads must tell
    apart exactly as the facts do."""
    mem.add_fact("Ann", "said", 1, "2001-01-01", literal=True)
    mem.add_fact("Ann", "said", "1", "2002-01-01")
    mem.add_fact("Cy", "said", "x", "2003-01-01", literal=True)
    mem.add_fact("Cy", "said", "x", "2004-01-01", "2030-01-01", literal=True)
    mem.add_fact("Bob", "ceo", "Ann", "2001-01-01", "2012-01-01")
    mem.add_fact("Bob", "ceo", "Ann", "2012-01-01", literal=True)


@pytest.mark.parametrize("seed", range(8))
def test_a_conflicts_page_is_the_slice_of_all_conflicts(mem: Memory, seed: int) -> None:
    _random_history(mem, seed)
    _objects_alike(mem)
    rng = random.Random(seed)
    versions = sorted({v.system_from for n in NAMES for v in mem.history(n, direction="both")})
    for as_of in (None, "2003", "2015", "2025"):
        for known_at in (None, versions[len(versions) // 2]):
            full = mem.conflicts(as_of, known_at=known_at)
            assert all(c.facts_total == len(c.facts) for c in full)
            for _ in range(4):
                off, n, per = rng.randrange(len(full) + 2), rng.randrange(1, 5), rng.choice((None, 1, 2))
                page = mem.conflicts(as_of, known_at=known_at, limit=n, offset=off, facts_per_conflict=per)
                assert page == [dataclasses.replace(c, facts=c.facts[:per]) for c in full[off: off + n]]
                assert [c.facts_total for c in page] == [len(c.facts) for c in full[off: off + n]]
            # only facts_per_conflict: every conflict, each cut
            assert mem.conflicts(as_of, known_at=known_at, facts_per_conflict=1) == [
                dataclasses.replace(c, facts=c.facts[:1]) for c in full]


def _diff_cases(mem: Memory) -> list[tuple[Any, Any, str, dict[str, Any]]]:
    versions = sorted({v.system_from for n in NAMES for v in mem.history(n, direction="both")})
    mid = versions[len(versions) // 2]
    return [(t1, t2, "valid", kw) for t1, t2 in (("2005", "2025"), ("1995", "2015"), ("2015", "2003"))
            for kw in ({}, {"known_at": mid})] + [
        (versions[0], versions[-1], "system", {}), (mid, versions[-1], "system", {"as_of": "2015"}),
        (versions[-1], mid, "system", {})]


@pytest.mark.parametrize("seed", range(8))
def test_a_diff_page_is_the_slice_of_the_full_diff(mem: Memory, seed: int) -> None:
    _random_history(mem, seed)
    _objects_alike(mem)
    rng = random.Random(seed)
    for t1, t2, axis, kw in _diff_cases(mem):
        for subject in (None, *NAMES):
            full = mem.diff(t1, t2, subject, axis=axis, **kw)
            assert (full.added_total, full.removed_total, full.changed_total, full.unchanged_total) == (
                len(full.added), len(full.removed), len(full.changed), len(full.unchanged))
            longest = max(len(full.added), len(full.removed), len(full.changed))
            for _ in range(3):
                off, n = rng.randrange(longest + 2), rng.randrange(1, 6)
                page = mem.diff(t1, t2, subject, axis=axis, limit=n, offset=off, **kw)
                assert page.added == full.added[off: off + n]
                assert page.removed == full.removed[off: off + n]
                assert page.changed == full.changed[off: off + n]
                assert page.unchanged == ()
                assert (page.added_total, page.removed_total, page.changed_total, page.unchanged_total) == (
                    len(full.added), len(full.removed), len(full.changed), len(full.unchanged))
                assert page.empty == full.empty


def test_a_deep_facts_page_is_the_slice_of_all_facts(mem: Memory) -> None:
    """From ``DEEP_OFFSET`` on, a page is walked on narrow rows and only its
    own rows are read in full: the same facts in the same order (ties of
    valid_from broken as the read breaks them), in every read shape."""
    rng = random.Random(7)
    items: list[dict[str, Any]] = []
    for i in range(2 * DEEP_OFFSET + 600):
        out = rng.random() < 0.5
        items.append({"subject": "Ann" if out else f"P{i % 40}", "predicate": rng.choice(("knows", "said")),
                      "object": f"P{i}" if out else "Ann", "valid_from": f"{2000 + i % 7}-01-01",
                      **({"valid_to": "2010-01-01"} if i % 5 == 0 else {})})
    added = mem.add_facts(items)
    mid = mem.history("Ann", direction="both")[len(items) // 2].system_from
    # corrected versions: a new rowid under an old fact id, which two-branch reads order by
    for fid in rng.sample(added, 40):
        mem.correct(fid, valid_from="2006-01-01")  # ties in the last start group: past DEEP_OFFSET
    for kw in ({"subject": "Ann"}, {"subject": "Ann", "direction": "both"}, {"subject": "Ann", "direction": "in"},
               {"subject": "Ann", "direction": "both", "as_of": "2012"}, {"predicate": "said"}, {},
               {"subject": "Ann", "direction": "both", "known_at": mid}):
        full = mem.facts(**kw)  # type: ignore[arg-type]
        for off in (DEEP_OFFSET + 7, len(full) - 3, len(full) + 5):
            assert mem.facts(**kw, limit=1, offset=off) == full[off: off + 1], (kw, off)  # type: ignore[arg-type]
        pages = [mem.facts(**kw, limit=97, offset=off)  # type: ignore[arg-type]
                 for off in range(DEEP_OFFSET, len(full) + 97, 97)]
        assert [f for p in pages for f in p] == full[DEEP_OFFSET:], kw
