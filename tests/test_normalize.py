"""Unit tests of :func:`chronomem.normalize_key` (entity and predicate keys)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from chronomem import InvalidNameError, LimitExceededError, normalize_key
from chronomem.core import names as normalize


@pytest.mark.parametrize(
    ("name", "key"),
    [
        ("My API", "my_api"),
        ("my_api", "my_api"),
        (" MY-API ", "my_api"),
        ("my   api", "my_api"),
        ("my\tapi\n", "my_api"),
        ("my - _ api", "my_api"),
        ("My\u2013API", "my_api"),       # en dash
        ("My\u2014API", "my_api"),       # em dash
        ("__my__api__", "my_api"),
        ("O'Brien", "obrien"),
        ("O\u2019Brien", "obrien"),      # typographic apostrophe
        ("O`Brien", "obrien"),
        ("Straße", "strasse"),          # casefold, not lower
        ("ΣΊΣΥΦΟΣ", "σίσυφοσ"),
        ("ＡＢＣ", "abc"),               # NFKC folds full-width forms
        ("ﬁle", "file"),                 # NFKC folds ligatures
        ("Café", "café"),
        ("Cafe\u0301", "café"),          # combining accent composes
        ("北京", "北京"),
        ("東京 タワー", "東京_タワー"),
        ("works at", "works_at"),
        ("WORKS_AT", "works_at"),
        ("a.b", "a.b"),
        ("C++", "c++"),
        ("R2-D2", "r2_d2"),
    ],
)
def test_keys(name: str, key: str) -> None:
    assert normalize_key(name) == key


@pytest.mark.parametrize("name", ["", " ", "   \t\n", "_", "-", "_-_ - _", "'", "\u2019\u2019"])
def test_names_that_normalize_to_nothing(name: str) -> None:
    with pytest.raises(InvalidNameError) as info:
        normalize_key(name, "subject")
    assert "subject" in str(info.value)


@pytest.mark.parametrize("value", [None, 42, 4.2, b"bytes", ["x"], {"x": 1}], ids=repr)
def test_non_strings_are_rejected(value: Any) -> None:
    with pytest.raises(InvalidNameError) as info:
        normalize_key(value, "predicate")
    assert "predicate" in str(info.value) and "string" in str(info.value)


def test_length_limit() -> None:
    assert len(normalize_key("x" * 1000)) == 1000
    with pytest.raises(LimitExceededError):  # an InvalidInputError naming the limit (docs/limits.md)
        normalize_key("x" * 1001)
    # the limit applies after normalization
    assert normalize_key("  " + "x" * 1000 + "  ") == "x" * 1000


def test_invalid_name_error_is_an_invalid_input() -> None:
    from chronomem import InvalidInputError

    assert issubclass(InvalidNameError, InvalidInputError)


names = st.text(alphabet=st.characters(codec="utf-8"), min_size=1, max_size=30)


@settings(max_examples=100, deadline=None)
@given(names)
def test_normalization_is_idempotent(name: str) -> None:
    try:
        key = normalize_key(name)
    except (InvalidNameError, LimitExceededError):
        return
    assert normalize_key(key) == key
    assert key == key.strip("_")
    assert "__" not in key
    assert not any(ch.isspace() for ch in key)


ascii_names = st.text(alphabet="abcXYZ019 -_\t'", min_size=1, max_size=30)


@settings(max_examples=100, deadline=None)
@given(ascii_names)
def test_case_and_separator_variants_share_a_key(name: str) -> None:
    try:
        key = normalize_key(name)
    except (InvalidNameError, LimitExceededError):
        return
    assert normalize_key(name.upper()) == normalize_key(name.lower()) == key
    assert normalize_key(" " + name.replace(" ", "-") + " ") == key
    assert normalize_key(name.replace("_", " ")) == key


@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=40))
@settings(max_examples=500)
def test_the_ascii_fast_path_gives_the_general_key(name: str) -> None:
    """ASCII names skip NFKC and the regular expression; every ASCII string
    (controls, \\x1c-\\x1f, apostrophes, runs of separators included) must get
    the key the general path gives."""
    assert normalize._key.__wrapped__(name) == normalize._general_key(name)


@pytest.mark.parametrize("name", ["a\x1cb", " _-A__b--C_ ", "O'Brien `x`", "\t\x0bq\x0c\r\n", "-_-"])
def test_the_ascii_fast_path_on_separator_edge_cases(name: str) -> None:
    assert normalize._key.__wrapped__(name) == normalize._general_key(name)
