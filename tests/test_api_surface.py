"""The public surface of the package: ``chronomem.__all__``, the error tree
and the typing marker."""

from __future__ import annotations

import inspect
from importlib import resources

import chronomem
import chronomem.errors

EXPECTED_ALL = {
    # opening a memory
    "open", "Memory", "__version__",
    # time
    "FakeClock", "SystemClock", "Precision", "TimePoint", "period_end",
    # names
    "normalize_key",
    # result types
    "Conflict", "Diff", "DiffChange", "Entity", "Event", "Fact", "Neighbor", "Path", "Predicate", "Provenance",
    "Stats", "Volatility",
    # evidence
    "Episode", "Hit", "FactNote", "ScoreParts", "Recall", "RecallItem", "SearchConfig", "TimeSpan", "Embedder",
    "EpisodeNotFoundError",
    # errors
    "ChronomemError", "InvalidInputError", "InvalidTimeError", "InvalidIntervalError", "InvalidNameError",
    "CardinalityError", "NotFoundError", "FactNotFoundError", "EntityNotFoundError", "PredicateNotFoundError",
    "ConflictError", "AliasConflictError", "ConfirmationRequiredError", "StoreError", "SchemaVersionError",
    "StoreLockedError", "MissingExtraError", "ExportVersionError",
}

MEMORY_METHODS = {
    "add_fact", "add_facts", "invalidate", "correct", "retract", "erase", "facts", "facts_sql", "current",
    "between", "history", "fact", "versions", "evidence", "timeline", "diff", "conflicts", "volatility",
    "neighbors", "paths", "search_facts", "stats", "with_decay", "entity", "entities", "set_entity", "alias",
    "merge", "unmerge", "define_predicate", "predicates", "predicate", "now", "parse_time", "close",
    "add_episode", "add_episodes", "supersede_episode", "erase_episode", "episode", "episode_facts", "episodes",
    "search", "recall", "reindex", "use_embedder", "evidence_stats",
}


def test_all_matches_the_expected_surface() -> None:
    assert set(chronomem.__all__) == EXPECTED_ALL
    assert len(chronomem.__all__) == len(set(chronomem.__all__)), "duplicates in __all__"


def test_every_name_in_all_exists() -> None:
    for name in chronomem.__all__:
        assert hasattr(chronomem, name), name


def test_star_import_gives_exactly_all() -> None:
    ns: dict[str, object] = {}
    exec("from chronomem import *", ns)
    assert set(ns) - {"__builtins__"} == set(chronomem.__all__)


def test_version_is_a_string() -> None:
    assert isinstance(chronomem.__version__, str) and chronomem.__version__.count(".") >= 1


def test_memory_public_methods_exist_and_are_documented() -> None:
    for name in MEMORY_METHODS:
        member = getattr(chronomem.Memory, name, None)
        assert callable(member), name
    documented = {"add_fact", "add_facts", "invalidate", "correct", "retract", "erase", "facts", "current",
                  "between", "history", "fact", "versions", "evidence", "timeline", "diff", "conflicts",
                  "volatility", "neighbors", "paths", "search_facts", "with_decay", "entity", "set_entity",
                  "alias", "merge", "unmerge", "define_predicate", "facts_sql", "now", "parse_time"}
    for name in documented:
        assert inspect.getdoc(getattr(chronomem.Memory, name)), f"Memory.{name} has no docstring"


def test_every_error_derives_from_chronomem_error() -> None:
    classes = [obj for _, obj in inspect.getmembers(chronomem.errors, inspect.isclass)
               if obj.__module__ == chronomem.errors.__name__]
    assert len(classes) == len(chronomem.errors.__all__)
    for cls in classes:
        assert issubclass(cls, chronomem.ChronomemError), cls
        assert cls.__doc__, f"{cls.__name__} has no docstring"
        assert getattr(chronomem, cls.__name__) is cls, f"{cls.__name__} not exported"


def test_error_tree_shape() -> None:
    e = chronomem
    invalid: list[type[Exception]] = [e.InvalidTimeError, e.InvalidIntervalError, e.InvalidNameError,
                                      e.CardinalityError, e.ExportVersionError]
    for sub in invalid:
        assert issubclass(sub, e.InvalidInputError)
    missing: list[type[Exception]] = [e.FactNotFoundError, e.EntityNotFoundError, e.PredicateNotFoundError]
    for sub in missing:
        assert issubclass(sub, e.NotFoundError)
    assert issubclass(e.AliasConflictError, e.ConflictError)
    assert issubclass(e.SchemaVersionError, e.StoreError) and issubclass(e.StoreLockedError, e.StoreError)
    assert issubclass(e.InvalidInputError, ValueError)
    assert issubclass(e.NotFoundError, LookupError)
    assert issubclass(e.MissingExtraError, ImportError)


def test_error_messages() -> None:
    err = chronomem.InvalidTimeError("2024-13", "valid_from")
    assert (err.value, err.field) == ("2024-13", "valid_from")
    assert "valid_from" in str(err) and "'2024-13'" in str(err)
    extra = chronomem.MissingExtraError("mcp", "mcp")
    assert "pip install 'chronomem[mcp]'" in str(extra)


def test_result_types_are_frozen_dataclasses_with_to_dict() -> None:
    import dataclasses

    for name in ("Conflict", "Diff", "DiffChange", "Entity", "Event", "Fact", "Neighbor", "Path", "Predicate",
                 "Provenance", "Stats", "Volatility"):
        cls = getattr(chronomem, name)
        assert dataclasses.is_dataclass(cls), name
        assert getattr(cls, "__dataclass_params__").frozen, name
        assert callable(getattr(cls, "to_dict", None)), name


def test_py_typed_ships() -> None:
    marker = resources.files("chronomem").joinpath("py.typed")
    assert marker.is_file()


def test_py_typed_is_declared_as_package_data() -> None:
    import tomllib
    from pathlib import Path

    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    data = tomllib.loads(pyproject.read_text(encoding="utf-8"))
    assert "py.typed" in data["tool"]["setuptools"]["package-data"]["chronomem"]
