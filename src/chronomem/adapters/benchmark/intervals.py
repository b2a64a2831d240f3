"""Real interval data -> benchmark scenarios (rules ``intervals-as-of`` and ``intervals-known-at``).

The hand-written scenarios check each rule of the time model on a few facts;
this converter checks the same read path on thousands of real intervals,
where overlaps, repeats, unknown starts and open ends occur as the data has
them. Any TSV of (subject, relation, object, start, end) rows works.

**The file.** UTF-8, tab-separated, no quoting, a header row; ``columns`` maps
our names (:data:`COLUMNS`) to the header's (default: the same names). Cells
are trimmed. Times are ISO-8601 years, dates or datetimes read by
:func:`chronomem.core.time.parse_time` (a bare year of 1-3 digits, ``"986"``,
is the year 0986, as Wikidata writes it). An empty start is an unknown start,
an empty end an open end. ``inclusive_end=True``: an end names the last period
the fact held (``2011`` = through 2011, half-open end 2012, via
:func:`~chronomem.core.time.period_end`); ``False``: ends are exclusive already.
A one-day event file (ICEWS: one ``date`` column) maps start and end to the
same column with ``inclusive_end=True``.

**Bad input.** Fatal (:class:`~chronomem.errors.ScenarioFormatError` naming the
file, line and column), because the file is not the table the mapping says:
an unreadable file, bytes that are not UTF-8, no header, a mapped column
missing from the header, a row with fewer cells than a mapped column needs,
a time that is not ISO-8601 (usually a wrong mapping). Skipped and counted
(:attr:`IntervalConversion.skipped`, by reason, with the first messages in
``problems``), because real files have a few such rows and they say nothing
chronomem can store: an end before (or, exclusive, not after) the start
(``end-before-start``; Wikidata12k has 10), an empty or unusable name
(``bad-name``). ``strict=True`` makes these fatal too. Blank lines are ignored.

**Scenarios.** Rows are grouped by key (subject, relation), names compared by
:func:`~chronomem.core.names.normalize_key` as chronomem does. Keys are
sampled (``max_keys``, deterministic from ``seed``) and grouped, in file
order, into scenarios of at most :data:`KEYS_PER_SCENARIO` keys and (unless
one key is larger) :data:`ROWS_PER_SCENARIO` rows. Each scenario defines its
relations as many-valued, then asserts its rows in a shuffled order in
``batches`` batches, one second apart, with an hour between batches. Questions
(``values``): ``intervals-as-of`` at each distinct start, each half-open end,
1 µs before each end, 1 µs before the first start and, when a start is
unknown, at year 1; ``intervals-known-at`` at up to two of those instants per
key, as known before the first batch and at the end of each (only rows loaded
by then count). ``max_questions`` caps the total (sampled, half of each rule).

**Expected answers** come from the rows directly: per object, the union of
its intervals (touching or overlapping ones merge, as chronomem coalesces
them) holds at ``as_of`` or not. Two written forms of one name (``Kim Jong
Un``, ``Kim Jong-Un``) are one entity; an answer carries the form the
scenario asserted first, as chronomem keeps the name an entity was created
with.
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from ...core.names import normalize_key
from ...core.time import FIRST_US, Precision, TimePoint, format_us, parse_time, period_end
from ...errors import InvalidInputError, ScenarioFormatError
from .scenario import Op, Question, Scenario

__all__ = [
    "COLUMNS",
    "DEFAULT_MAX_KEYS",
    "DEFAULT_MAX_QUESTIONS",
    "KEYS_PER_SCENARIO",
    "ROWS_PER_SCENARIO",
    "SKIP_REASONS",
    "IntervalConversion",
    "IntervalRow",
    "IntervalTable",
    "convert_intervals",
    "parse_columns",
    "read_intervals",
]

#: our column names, in the default order of the file
COLUMNS = ("subject", "relation", "object", "start", "end")
#: why a row is skipped (counted in ``skipped``)
SKIP_REASONS = ("end-before-start", "bad-name")
#: defaults sized so one file converts and runs on chronomem SQLite in well under a minute
DEFAULT_MAX_KEYS = 2000
DEFAULT_MAX_QUESTIONS = 6000
KEYS_PER_SCENARIO = 200
ROWS_PER_SCENARIO = 2000
KNOWN_AT_INSTANTS = 2  # as_of instants per key asked at every known_at
_PROBLEMS_KEPT = 20

_BASE_US = parse_time("2025-01-01T00:00:00Z").us  # system time of a scenario's first op
_STEP_US = 1_000_000  # between two ops
_GAP_US = 3_600_000_000  # between two batches; known_at is in the middle of the gap
_ONE_US = 1


def parse_columns(text: str) -> dict[str, str]:
    """Read the ``--columns`` flag: ``"start=start_year,end=end_year"`` -> ``{"start": "start_year", ...}``.

    Names not given keep their default (the same name); an unknown name, a
    part without ``=``, an empty column or a name given twice is an
    :class:`~chronomem.errors.InvalidInputError` that says which."""
    if not text.strip():
        raise InvalidInputError(f"--columns is empty; give NAME=COLUMN pairs, NAME one of {', '.join(COLUMNS)}")
    out: dict[str, str] = {}
    for part in text.split(","):
        name, eq, column = part.partition("=")
        name, column = name.strip(), column.strip()
        if not eq:
            raise InvalidInputError(f"--columns: {part.strip()!r} is not NAME=COLUMN")
        if name not in COLUMNS:
            raise InvalidInputError(f"--columns: unknown name {name!r}; names are {', '.join(COLUMNS)}")
        if not column:
            raise InvalidInputError(f"--columns: {name}= names no column")
        if name in out:
            raise InvalidInputError(f"--columns: {name} is given twice")
        out[name] = column
    return out


class IntervalRow(NamedTuple):
    """One accepted row: names as written (trimmed), their keys, and the half-open interval
    (``start=None``: unknown start; ``end=None``: open end)."""

    line: int
    subject: str
    relation: str
    object: str
    start: TimePoint | None
    end: TimePoint | None
    subject_key: str
    relation_key: str
    object_key: str

    @property
    def key(self) -> tuple[str, str]:
        return self.subject_key, self.relation_key

    @property
    def lo(self) -> int:
        return FIRST_US if self.start is None else self.start.us

    @property
    def hi(self) -> int | None:
        return None if self.end is None else self.end.us


@dataclass
class IntervalTable:
    """What :func:`read_intervals` read: the accepted rows, and what it skipped and why."""

    source: str
    rows: list[IntervalRow] = field(default_factory=list)
    lines: int = 0  # data rows read (blank lines not counted)
    skipped: dict[str, int] = field(default_factory=lambda: dict.fromkeys(SKIP_REASONS, 0))
    problems: list[str] = field(default_factory=list)  # the first skip messages
    #: normalized key -> its distinct written forms, in file order, where there are several
    merged_names: dict[str, tuple[str, ...]] = field(default_factory=dict)
    merged_relations: dict[str, tuple[str, ...]] = field(default_factory=dict)


def _check_columns(columns: Mapping[str, str] | None) -> dict[str, str]:
    mapping = {name: name for name in COLUMNS}
    if columns is not None:
        unknown = sorted(set(columns) - set(COLUMNS))
        if unknown:
            raise InvalidInputError(f"unknown column name(s) {', '.join(unknown)}; names are {', '.join(COLUMNS)}")
        mapping.update(columns)
    return mapping


def _lines(path: Path) -> Iterator[tuple[int, str]]:
    """Numbered lines of a UTF-8 file without their line ends (split on ``\\n`` only, like a TSV)."""
    try:
        fh = path.open("rb")
    except OSError as exc:
        raise ScenarioFormatError(f"cannot read interval file {str(path)!r}: {exc.strerror}") from None
    with fh:
        for number, raw in enumerate(fh, 1):
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ScenarioFormatError(
                    f"{path}, line {number}: not UTF-8 text (byte {exc.start + 1} of the line)") from None
            if number == 1:
                text = text.removeprefix("\ufeff")
            yield number, text.rstrip("\r\n")


class _Reader:
    """Turns the cells of one row into an :class:`IntervalRow`, or a skip, or a fatal error."""

    def __init__(self, path: Path, header: list[str], mapping: dict[str, str], *, inclusive_end: bool,
                 strict: bool, table: IntervalTable) -> None:
        self.path, self.mapping, self.table = path, mapping, table
        self.inclusive_end, self.strict = inclusive_end, strict
        self.index: dict[str, int] = {}
        for name, column in mapping.items():
            if column not in header:
                raise ScenarioFormatError(
                    f"{path}, line 1: no column {column!r} (for {name}) in the header; "
                    f"columns are: {', '.join(header)}")
            self.index[name] = header.index(column)
        self.need = max(self.index.values()) + 1
        self._times: dict[str, dict[str, TimePoint]] = {"start": {}, "end": {}}
        self._keys: dict[str, str] = {}  # subject or object as written -> its key
        self._relation_keys: dict[str, str] = {}
        self._forms: dict[str, list[str]] = {}  # key -> its written forms, in file order
        self._relation_forms: dict[str, list[str]] = {}

    def _where(self, number: int, name: str) -> str:
        return f"{self.path}, line {number}, column {self.mapping[name]!r}"

    def _skip(self, reason: str, message: str) -> None:
        if self.strict:
            raise ScenarioFormatError(message)
        self.table.skipped[reason] += 1
        if len(self.table.problems) < _PROBLEMS_KEPT:
            self.table.problems.append(message)

    def _time(self, cells: list[str], number: int, name: str) -> TimePoint | None:
        text = cells[self.index[name]].strip()
        if not text:
            return None
        cache = self._times[name]
        tp = cache.get(text)
        if tp is not None:
            return tp
        iso = text.zfill(4) if text.isdigit() and len(text) < 4 else text  # a bare year "752" as ISO needs four
        try:
            tp = period_end(iso, None, name) if name == "end" and self.inclusive_end else parse_time(iso, name)
        except InvalidInputError as exc:
            raise ScenarioFormatError(f"{self._where(number, name)}: {exc}") from None
        cache[text] = tp
        return tp

    def _name(self, cells: list[str], number: int, name: str) -> tuple[str, str] | None:
        text = cells[self.index[name]].strip()
        keys, forms = (self._relation_keys, self._relation_forms) if name == "relation" else (self._keys, self._forms)
        key = keys.get(text)
        if key is None:
            try:
                key = normalize_key(text, name)
            except InvalidInputError as exc:
                self._skip("bad-name", f"{self._where(number, name)}: {exc}")
                return None
            keys[text] = key
            forms.setdefault(key, []).append(text)  # a new written form of this key
        return text, key

    def row(self, cells: list[str], number: int) -> None:
        self.table.lines += 1
        if len(cells) < self.need:
            missing = min((i, n) for n, i in self.index.items() if i >= len(cells))[1]
            raise ScenarioFormatError(
                f"{self._where(number, missing)}: missing (the row has {len(cells)} cells, "
                f"the mapping needs {self.need})")
        start, end = self._time(cells, number, "start"), self._time(cells, number, "end")
        names = [self._name(cells, number, n) for n in ("subject", "relation", "object")]
        subject, relation, obj = names
        if subject is None or relation is None or obj is None:
            return
        if start is not None and end is not None and end.us <= start.us:
            start_text = cells[self.index["start"]].strip()
            end_text = cells[self.index["end"]].strip() + (" (inclusive)" if self.inclusive_end else "")
            self._skip("end-before-start", f"{self._where(number, 'end')}: end {end_text} is not after "
                                           f"start {start_text}")
            return
        self.table.rows.append(IntervalRow(number, subject[0], relation[0], obj[0], start, end,
                                           subject[1], relation[1], obj[1]))

    def finish(self) -> None:
        self.table.merged_names = {k: tuple(v) for k, v in self._forms.items() if len(v) > 1}
        self.table.merged_relations = {k: tuple(v) for k, v in self._relation_forms.items() if len(v) > 1}


def read_intervals(path: str | Path, *, inclusive_end: bool, columns: Mapping[str, str] | None = None,
                   strict: bool = False) -> IntervalTable:
    """Read and check an interval TSV (module docstring: which problems are fatal, which are skipped)."""
    p = Path(path)
    mapping = _check_columns(columns)
    table = IntervalTable(str(p))
    reader: _Reader | None = None
    for number, text in _lines(p):
        if reader is None:
            header = [c.strip() for c in text.split("\t")]
            reader = _Reader(p, header, mapping, inclusive_end=inclusive_end, strict=strict, table=table)
            continue
        if text.strip():
            reader.row(text.split("\t"), number)
    if reader is None:
        raise ScenarioFormatError(f"{p}, line 1: the file is empty; it needs a header row")
    reader.finish()
    return table


@dataclass
class IntervalConversion:
    """The scenarios, and the figures a caller prints (``summary()``): rows read and skipped by
    reason, keys in the file and sampled, names merged by normalization."""

    table: IntervalTable
    scenarios: list[Scenario]
    keys: int  # distinct (subject, relation) keys in the file
    keys_used: int
    rows_used: int

    @property
    def skipped(self) -> dict[str, int]:
        return self.table.skipped

    @property
    def questions(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for s in self.scenarios:
            for q in s.questions:
                out[q.rule] = out.get(q.rule, 0) + 1
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.table.source, "rows": self.table.lines, "accepted": len(self.table.rows),
            "skipped": dict(self.skipped), "keys": self.keys, "keys_used": self.keys_used,
            "rows_used": self.rows_used, "scenarios": len(self.scenarios), "questions": self.questions,
            "merged_names": {k: list(v) for k, v in self.table.merged_names.items()},
            "merged_relations": {k: list(v) for k, v in self.table.merged_relations.items()},
        }

    def describe(self) -> str:
        """A short line for a list of sources: keys sampled, questions, rows skipped."""
        skipped = ", ".join(f"{n} {r}" for r, n in self.skipped.items() if n)
        return (f"{self.keys_used} of {self.keys} keys, {sum(self.questions.values())} questions"
                + (f"; skipped {skipped}" if skipped else ""))

    def summary(self) -> str:
        """Every figure on one line (what the converter read, kept, sampled and merged)."""
        d = self.to_dict()
        skipped = ", ".join(f"{n} {r}" for r, n in d["skipped"].items() if n) or "none"
        asked = ", ".join(f"{n} {r}" for r, n in d["questions"].items()) or "none"
        return (f"{d['source']}: {d['rows']} rows, {d['accepted']} accepted (skipped: {skipped}); "
                f"{d['keys_used']} of {d['keys']} keys ({d['rows_used']} rows) -> {d['scenarios']} scenarios, "
                f"questions: {asked}; names merged by normalization: {len(d['merged_names'])}, "
                f"relations: {len(d['merged_relations'])}")


def _positive(name: str, value: int | None, *, zero: bool = False) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < (0 if zero else 1):
        raise InvalidInputError(f"{name} must be an integer >= {0 if zero else 1}, not {value!r}")


def convert_intervals(path: str | Path, *, inclusive_end: bool, columns: Mapping[str, str] | None = None,
                      batches: int = 4, max_keys: int | None = DEFAULT_MAX_KEYS,
                      max_questions: int | None = DEFAULT_MAX_QUESTIONS, seed: int = 19,
                      keys_per_scenario: int = KEYS_PER_SCENARIO, rows_per_scenario: int = ROWS_PER_SCENARIO,
                      strict: bool = False) -> IntervalConversion:
    """Convert an interval TSV into scenarios with exact answers (see the module docstring).

    ``max_keys``/``max_questions`` ``None``: every key / every question. The same arguments
    give the same scenarios, byte for byte once dumped."""
    _positive("batches", batches)
    _positive("max_keys", max_keys)
    _positive("max_questions", max_questions, zero=True)
    _positive("keys_per_scenario", keys_per_scenario)
    _positive("rows_per_scenario", rows_per_scenario)
    table = read_intervals(path, inclusive_end=inclusive_end, columns=columns, strict=strict)
    by_key: dict[tuple[str, str], list[IntervalRow]] = {}
    for row in table.rows:
        by_key.setdefault(row.key, []).append(row)
    keys = list(by_key)
    if max_keys is not None and max_keys < len(keys):
        picked = sorted(random.Random(f"intervals-keys:{seed}").sample(range(len(keys)), max_keys))
        keys = [keys[i] for i in picked]
    groups: list[list[list[IntervalRow]]] = []
    size = 0
    for key in keys:
        rows = by_key[key]
        if not groups or len(groups[-1]) >= keys_per_scenario or size + len(rows) > rows_per_scenario:
            groups.append([])
            size = 0
        groups[-1].append(rows)
        size += len(rows)
    caps: list[int | None] = [None] * len(groups)
    if max_questions is not None and groups:
        share, extra = divmod(max_questions, len(groups))
        caps = [share + (i < extra) for i in range(len(groups))]
    stem = Path(path).stem
    scenarios = [_scenario(f"{stem}-{i:03d}", stem, group, batches, caps[i], random.Random(f"intervals:{seed}:{i}"))
                 for i, group in enumerate(groups)]
    return IntervalConversion(table, scenarios, len(by_key), len(keys), sum(len(r) for g in groups for r in g))


def _at(us: int) -> str:
    return format_us(us, Precision.SECOND)


def _micro(us: int) -> str:
    return format_us(us, Precision.MICROSECOND)


def _union(spans: Sequence[tuple[int, int | None]]) -> list[tuple[int, int | None]]:
    """Merge half-open spans that overlap or touch (``None`` = open end): chronomem's coalescing."""
    out: list[tuple[int, int | None]] = []
    for lo, hi in sorted(spans, key=lambda s: s[0]):
        if out:
            last_lo, last_hi = out[-1]
            if last_hi is None or lo <= last_hi:
                out[-1] = (last_lo, None if last_hi is None or hi is None else max(last_hi, hi))
                continue
        out.append((lo, hi))
    return out


class _Build:
    """One scenario: its ops, when each row was loaded, and the exact answers."""

    def __init__(self, groups: list[list[IntervalRow]], batches: int, rng: random.Random) -> None:
        self.groups = groups
        order = [row for rows in groups for row in rows]
        rng.shuffle(order)
        self.ops: list[Op] = []
        self.loaded: dict[int, int] = {}  # file line -> system time of its assert
        self.known: list[int] = []  # known_at instants: before the first batch, then after each
        self.forms: dict[str, str] = {}  # entity key -> the form asserted first
        relations: dict[str, str] = {}
        for row in order:
            relations.setdefault(row.relation_key, row.relation)
            self.forms.setdefault(row.subject_key, row.subject)
            self.forms.setdefault(row.object_key, row.object)
        t = _BASE_US
        for relation in relations.values():
            self.ops.append(Op("define", _at(t), {"predicate": relation, "cardinality": "many"}))
            t += _STEP_US
        n = len(order)
        for b in range(batches + 1):
            if b:
                for row in order[(b - 1) * n // batches: b * n // batches]:
                    args: dict[str, Any] = {"ref": f"r{row.line}", "subject": row.subject,
                                            "predicate": row.relation, "object": row.object}
                    if row.start is not None:
                        args["valid_from"] = str(row.start)
                    if row.end is not None:
                        args["valid_to"] = str(row.end)
                    self.ops.append(Op("assert", _at(t), args))
                    self.loaded[row.line] = t
                    t += _STEP_US
            self.known.append(t - _STEP_US + _GAP_US // 2)
            t += _GAP_US - _STEP_US

    def expect(self, rows: list[IntervalRow], as_of: int, known_at: int | None) -> tuple[list[str], list[int]]:
        """The objects valid at ``as_of`` (as known at ``known_at``) and the lines that make them so."""
        spans: dict[str, list[tuple[int, int | None]]] = {}
        for row in rows:
            if known_at is None or self.loaded[row.line] <= known_at:
                spans.setdefault(row.object_key, []).append((row.lo, row.hi))
        held = {k for k, s in spans.items() if any(lo <= as_of and (hi is None or as_of < hi) for lo, hi in _union(s))}
        objects = sorted(self.forms[k] for k in held)
        lines = [r.line for r in rows if r.object_key in held and r.lo <= as_of and (r.hi is None or as_of < r.hi)
                 and (known_at is None or self.loaded[r.line] <= known_at)]
        return objects, lines


def _instants(rows: list[IntervalRow]) -> dict[int, str]:
    """The as-of instants worth asking about one key: every boundary, either side of it."""
    out: dict[int, str] = {}
    starts = [r.start for r in rows if r.start is not None]
    for tp in starts:
        out.setdefault(tp.us, str(tp))
    for r in rows:
        if r.end is not None:
            out.setdefault(r.end.us, str(r.end))
            if r.end.us - _ONE_US >= FIRST_US:
                out.setdefault(r.end.us - _ONE_US, _micro(r.end.us - _ONE_US))
    if starts:
        first = min(tp.us for tp in starts)
        if first - _ONE_US >= FIRST_US:
            out.setdefault(first - _ONE_US, _micro(first - _ONE_US))
    if len(starts) < len(rows):  # an unknown start holds since the beginning of time
        out.setdefault(FIRST_US, "0001")
    return dict(sorted(out.items()))


def _why(lines: list[int], stem: str) -> str:
    return f"held by {stem} line(s) {', '.join(map(str, lines))}" if lines else "no loaded row holds then"


def _sample(items: list[Question], k: int, rng: random.Random) -> list[Question]:
    if k >= len(items):
        return items
    return [items[i] for i in sorted(rng.sample(range(len(items)), k))]


def _scenario(sid: str, stem: str, groups: list[list[IntervalRow]], batches: int, cap: int | None,
              rng: random.Random) -> Scenario:
    build = _Build(groups, batches, rng)
    as_of_qs: list[Question] = []
    known_qs: list[Question] = []
    for rows in groups:
        head = {"subject": rows[0].subject, "predicate": rows[0].relation}
        instants = _instants(rows)
        for us, text in instants.items():
            objects, lines = build.expect(rows, us, None)
            as_of_qs.append(Question("values", "intervals-as-of", {**head, "as_of": text}, objects, _why(lines, stem)))
        starts = sorted({r.start.us for r in rows if r.start is not None})
        pool = starts or [us for us in instants if us != FIRST_US] or list(instants)
        chosen = sorted(rng.sample(pool, min(KNOWN_AT_INSTANTS, len(pool))))
        for us in chosen:
            for known_at in build.known:
                objects, lines = build.expect(rows, us, known_at)
                known_qs.append(Question("values", "intervals-known-at",
                                         {**head, "as_of": instants[us], "known_at": _at(known_at)},
                                         objects, _why(lines, stem)))
    if cap is not None:
        half = min(len(known_qs), cap // 2)
        a = min(len(as_of_qs), cap - half)
        k = min(len(known_qs), cap - a)
        as_of_qs, known_qs = _sample(as_of_qs, a, rng), _sample(known_qs, k, rng)
    first, last = groups[0][0].line, groups[-1][0].line
    title = (f"{stem}: {len(groups)} keys (first rows at lines {first}..{last}), "
             f"{len(build.loaded)} rows in {batches} batches")
    return Scenario(sid, title, tuple(build.ops), tuple(as_of_qs + known_qs))
