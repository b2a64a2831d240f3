"""The public surface of the package: ``chronomem.__all__``, the error tree
and the typing marker."""

from __future__ import annotations

import inspect
import re
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
    # Memory.doctor
    "DoctorReport",
    # what ended a fact version (Fact.ended_by)
    "CloseKind",
    # evidence
    "Episode", "Hit", "FactNote", "ScoreParts", "Recall", "RecallItem", "SearchConfig", "TimeSpan", "Embedder",
    # errors
    "ChronomemError", "InvalidInputError", "InvalidTimeError", "InvalidIntervalError", "InvalidNameError",
    "CardinalityError", "NotFoundError", "FactNotFoundError", "EntityNotFoundError", "PredicateNotFoundError",
    "ConflictError", "AliasConflictError", "ConfirmationRequiredError", "StoreError", "SchemaVersionError",
    "StoreLockedError", "MissingExtraError", "ExportVersionError", "EpisodeNotFoundError", "UnsafeBindError",
    "LimitExceededError", "AmbiguousIdError", "StoreUnavailableError", "WriteOutcomeUnknownError",
}

#: errors of chronomem.errors that a caller of the memory API never sees (the
#: web server answers them as 401/403; the installer behind ``chronomem
#: install`` raises the other two), so ``chronomem`` does not export them
INTERNAL_ERRORS = {"AuthenticationError", "BodyTooLargeError", "ForbiddenError", "InstallError", "ConfigFormatError",
                   "ScenarioFormatError", "RateLimitedError"}

#: where each error used to live; those imports keep working
OLD_HOMES = {
    "EpisodeNotFoundError": ["chronomem.service.evidence", "chronomem.service.evidence.episodes"],
    "UnsafeBindError": ["chronomem.adapters.web.server"],
    "AuthenticationError": ["chronomem.adapters.web.errors"],
    "ForbiddenError": ["chronomem.adapters.web.errors"],
    "InstallError": ["chronomem.adapters.install", "chronomem.adapters.install.core"],
    "ConfigFormatError": ["chronomem.adapters.install.formats"],
}

MEMORY_METHODS = {
    "add_fact", "add_facts", "invalidate", "correct", "retract", "erase", "facts", "facts_sql", "current",
    "between", "history", "fact", "versions", "evidence", "timeline", "diff", "conflicts", "volatility",
    "neighbors", "paths", "search_facts", "stats", "with_decay", "entity", "entities", "set_entity", "alias",
    "merge", "unmerge", "define_predicate", "predicates", "predicate", "now", "parse_time", "close",
    "add_episode", "add_episodes", "supersede_episode", "erase_episode", "episode", "episode_facts", "episodes",
    "search", "recall", "reindex", "use_embedder", "evidence_stats", "invalidate_fact", "doctor",
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
                  "alias", "merge", "unmerge", "define_predicate", "facts_sql", "now", "parse_time",
                  "invalidate_fact", "doctor"}
    for name in documented:
        assert inspect.getdoc(getattr(chronomem.Memory, name)), f"Memory.{name} has no docstring"


def test_every_error_derives_from_chronomem_error() -> None:
    classes = [obj for _, obj in inspect.getmembers(chronomem.errors, inspect.isclass)
               if obj.__module__ == chronomem.errors.__name__]
    assert sorted(cls.__name__ for cls in classes) == sorted(chronomem.errors.__all__)
    assert list(chronomem.errors.__all__) == sorted(chronomem.errors.__all__)
    assert INTERNAL_ERRORS <= set(chronomem.errors.__all__)
    for cls in classes:
        assert issubclass(cls, chronomem.ChronomemError), cls
        assert cls.__doc__, f"{cls.__name__} has no docstring"
        if cls.__name__ in INTERNAL_ERRORS:
            assert not hasattr(chronomem, cls.__name__), f"{cls.__name__} is internal but exported"
        else:
            assert getattr(chronomem, cls.__name__) is cls, f"{cls.__name__} not exported"


def test_every_error_class_lives_in_chronomem_errors() -> None:
    import importlib
    import pkgutil

    for info in pkgutil.walk_packages(chronomem.__path__, "chronomem."):
        if info.name.endswith(".__main__"):
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra is missing
            continue
        for name, obj in vars(module).items():
            if (inspect.isclass(obj) and issubclass(obj, chronomem.ChronomemError)
                    and obj.__module__ == module.__name__ and module is not chronomem.errors):
                raise AssertionError(f"{module.__name__}.{name} is defined outside chronomem.errors")


def test_errors_stay_importable_from_their_old_homes() -> None:
    import importlib

    for name, modules in OLD_HOMES.items():
        for module in modules:
            assert getattr(importlib.import_module(module), name) is getattr(chronomem.errors, name), (module, name)


def test_error_tree_in_the_docs_names_every_error() -> None:
    from pathlib import Path

    doc = (Path(__file__).resolve().parents[1] / "docs" / "python-api.md").read_text(encoding="utf-8")
    tree = doc.split("## Errors", 1)[1].split("```", 2)[1]
    for name in chronomem.errors.__all__:
        assert re.search(rf"\b{name}\b", tree), f"{name} missing from the docs' error tree"
        assert re.search(rf"\b{name}\b", chronomem.errors.__doc__ or ""), f"{name} missing from chronomem.errors' tree"


def test_error_tree_shape() -> None:
    e = chronomem
    invalid: list[type[Exception]] = [e.InvalidTimeError, e.InvalidIntervalError, e.InvalidNameError,
                                      e.CardinalityError, e.ExportVersionError, e.UnsafeBindError,
                                      e.LimitExceededError, e.AmbiguousIdError]
    for sub in invalid:
        assert issubclass(sub, e.InvalidInputError)
    missing: list[type[Exception]] = [e.FactNotFoundError, e.EntityNotFoundError, e.PredicateNotFoundError,
                                      e.EpisodeNotFoundError]
    for sub in missing:
        assert issubclass(sub, e.NotFoundError)
    assert issubclass(e.AliasConflictError, e.ConflictError)
    assert issubclass(e.SchemaVersionError, e.StoreError) and issubclass(e.StoreLockedError, e.StoreError)
    assert issubclass(e.InvalidInputError, ValueError)
    assert issubclass(e.NotFoundError, LookupError)
    assert issubclass(e.MissingExtraError, ImportError)
    errors = chronomem.errors
    for cls in (errors.AuthenticationError, errors.ForbiddenError, errors.RateLimitedError, errors.InstallError,
                errors.ConfigFormatError):
        assert cls.__bases__ == (e.ChronomemError,), cls


def test_error_messages() -> None:
    err = chronomem.InvalidTimeError("2024-13", "valid_from")
    assert (err.value, err.field) == ("2024-13", "valid_from")
    assert "valid_from" in str(err) and "'2024-13'" in str(err)
    extra = chronomem.MissingExtraError("mcp", "mcp")
    assert "pip install 'chronomem[mcp]'" in str(extra)


def test_result_types_are_frozen_dataclasses_with_to_dict() -> None:
    import dataclasses

    for name in ("Conflict", "Diff", "DiffChange", "Entity", "Event", "Fact", "Neighbor", "Path", "Predicate",
                 "Provenance", "Stats", "Volatility", "DoctorReport"):
        cls = getattr(chronomem, name)
        assert dataclasses.is_dataclass(cls), name
        assert cls.__dataclass_params__.frozen, name
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
