"""Write commands: add, invalidate, correct, retract, erase."""

from __future__ import annotations

from typing import Any, Callable, TypeVar

import click
from rich.console import Console

from ...core.models import Fact
from ...errors import ConfirmationRequiredError, InvalidInputError
from ._common import emit, interval, json_option, parse_json_object, state, statement

_TYPES = ("str", "int", "float", "bool", "date")
F = TypeVar("F", bound=Callable[..., Any])


def _literal_value(text: str, kind: str | None) -> Any:
    """The object of a literal fact, converted to ``kind`` (default str)."""
    if kind in (None, "str"):
        return text
    try:
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
    except ValueError:
        raise InvalidInputError(f"object {text!r} is not a valid {kind}") from None
    if kind == "bool":
        low = text.strip().lower()
        if low in ("true", "yes", "1"):
            return True
        if low in ("false", "no", "0"):
            return False
        raise InvalidInputError(f"object {text!r} is not a boolean (true/false)")
    return state().memory().parse_time(text, "object")


def _object(text: str, literal: bool, kind: str | None) -> tuple[Any, bool]:
    if kind is not None or literal:
        return _literal_value(text, kind), True
    return text, False


def _fact_out(verb: str, fact: Fact) -> None:
    def human(con: Console) -> None:
        con.print(f"{verb}: {statement(fact)} {interval(fact)}")
        con.print(f"  id {fact.id} (version {fact.version})", style="dim")

    emit(fact.to_dict(), human)


literal_options: list[Callable[[F], F]] = [
    click.option("--literal", is_flag=True, help="The object is a value (a string), not an entity."),
    click.option("--type", "literal_type", type=click.Choice(_TYPES), default=None,
                 help="Store the object as a value of this type (implies --literal)."),
]


def _with(options: list[Callable[[F], F]]) -> Callable[[F], F]:
    def deco(f: F) -> F:
        for opt in reversed(options):
            f = opt(f)
        return f

    return deco


@click.command("add")
@click.argument("subject")
@click.argument("predicate")
@click.argument("object")
@click.option("--from", "valid_from", metavar="TIME", help="Start of validity (default: unknown).")
@click.option("--to", "valid_to", metavar="TIME", help="End of validity, exclusive (default: still true).")
@click.option("--source", help="Where the fact comes from.")
@click.option("--episode", "episode_id", help="Episode / conversation id.")
@click.option("--confidence", type=float, default=1.0, show_default=True, help="Confidence between 0 and 1.")
@_with(literal_options)
@click.option("--supersede/--no-supersede", default=None,
              help="Close other values of this subject and predicate where this one starts "
                   "(default: only for single-valued predicates).")
@click.option("--properties", metavar="JSON", help="Properties of the fact, a JSON object.")
@json_option
def add_cmd(subject: str, predicate: str, object: str, valid_from: str | None, valid_to: str | None,
            source: str | None, episode_id: str | None, confidence: float, literal: bool,
            literal_type: str | None, supersede: bool | None, properties: str | None) -> None:
    """Record that SUBJECT -PREDICATE-> OBJECT holds during [--from, --to)."""
    props = parse_json_object(properties, "--properties")
    mem = state().memory()
    value, is_literal = _object(object, literal, literal_type)
    fact = mem.add_fact(subject, predicate, value, valid_from, valid_to, confidence=confidence, source=source,
                        episode_id=episode_id, properties=props, supersede=supersede, literal=is_literal)
    _fact_out("added", fact)


@click.command("invalidate")
@click.argument("subject")
@click.argument("predicate")
@click.argument("object")
@click.option("--ended", metavar="TIME", help="When it stopped being true (default: now).")
@click.option("--reason", help="Why it ended.")
@_with(literal_options)
@json_option
def invalidate_cmd(subject: str, predicate: str, object: str, ended: str | None, reason: str | None,
                   literal: bool, literal_type: str | None) -> None:
    """The world changed: end the valid time of SUBJECT -PREDICATE-> OBJECT."""
    mem = state().memory(create=False)
    value, is_literal = _object(object, literal, literal_type)
    fact = mem.invalidate(subject, predicate, value, ended, reason=reason, literal=is_literal)
    _fact_out("ended", fact)


@click.command("correct")
@click.argument("fact_id")
@click.option("--subject", help="Corrected subject.")
@click.option("--predicate", help="Corrected predicate.")
@click.option("--object", "obj", help="Corrected object.")
@_with(literal_options)
@click.option("--from", "valid_from", metavar="TIME", help="Corrected start of validity.")
@click.option("--to", "valid_to", metavar="TIME", help="Corrected end of validity.")
@click.option("--unknown-start", is_flag=True, help="The start of validity is unknown.")
@click.option("--open-end", is_flag=True, help="The fact is still true (no end).")
@click.option("--confidence", type=float, help="Corrected confidence.")
@click.option("--source", help="Corrected source.")
@click.option("--episode", "episode_id", help="Corrected episode id.")
@click.option("--properties", metavar="JSON", help="Corrected properties, a JSON object.")
@click.option("--reason", help="Why the record was wrong (kept with the old version).")
@json_option
def correct_cmd(fact_id: str, subject: str | None, predicate: str | None, obj: str | None, literal: bool,
                literal_type: str | None, valid_from: str | None, valid_to: str | None, unknown_start: bool,
                open_end: bool, confidence: float | None, source: str | None, episode_id: str | None,
                properties: str | None, reason: str | None) -> None:
    """The record was wrong: write a corrected version of FACT_ID.

    The old version stays readable with `facts --known-at`.
    """
    if valid_from is not None and unknown_start:
        raise InvalidInputError("give either --from or --unknown-start, not both")
    if valid_to is not None and open_end:
        raise InvalidInputError("give either --to or --open-end, not both")
    changes: dict[str, Any] = {}
    props = parse_json_object(properties, "--properties")
    mem = state().memory(create=False)
    for name, value in (("subject", subject), ("predicate", predicate), ("valid_from", valid_from),
                        ("valid_to", valid_to), ("confidence", confidence), ("source", source),
                        ("episode_id", episode_id), ("properties", props)):
        if value is not None:
            changes[name] = value
    if obj is not None:
        changes["object"], changes["literal"] = _object(obj, literal, literal_type)
    elif literal or literal_type:
        raise InvalidInputError("--literal and --type apply to --object")
    if unknown_start:
        changes["valid_from"] = None
    if open_end:
        changes["valid_to"] = None
    if not changes:
        raise InvalidInputError("nothing to correct: give at least one of --subject, --predicate, --object, "
                                "--from, --to, --confidence, --source, --episode, --properties")
    _fact_out("corrected", mem.correct(fact_id, reason=reason, **changes))


@click.command("retract")
@click.argument("fact_id")
@click.option("--reason", help="Why it was never true.")
@json_option
def retract_cmd(fact_id: str, reason: str | None) -> None:
    """It was never true: stop believing FACT_ID (history keeps it)."""
    _fact_out("retracted", state().memory(create=False).retract(fact_id, reason=reason))


@click.command("erase")
@click.argument("fact_id", required=False)
@click.option("--entity", metavar="NAME", help="Erase this entity and every fact that mentions it.")
@click.option("--reason", help="Reason kept in the erasure log (no content is kept).")
@click.option("--yes", is_flag=True, help="Confirm: the data is deleted permanently.")
@json_option
def erase_cmd(fact_id: str | None, entity: str | None, reason: str | None, yes: bool) -> None:
    """Physically delete FACT_ID (every version) or --entity NAME, for privacy.

    Unlike retract this cannot be undone and leaves no history; needs --yes.
    """
    if (fact_id is None) == (entity is None):
        raise InvalidInputError("give either a FACT_ID or --entity NAME")
    if not yes:
        what = f"fact {fact_id}" if fact_id else f"entity {entity!r} and all its facts"
        raise ConfirmationRequiredError(f"erase deletes {what} permanently; run it again with --yes to confirm")
    n = state().memory(create=False).erase(fact_id, entity=entity, confirm=True, reason=reason)
    emit({"erased_versions": n, "fact_id": fact_id, "entity": entity},
         lambda con: con.print(f"erased {n} fact version{'s' if n != 1 else ''}"))


def register(main: click.Group) -> None:
    for cmd in (add_cmd, invalidate_cmd, correct_cmd, retract_cmd, erase_cmd):
        main.add_command(cmd)
