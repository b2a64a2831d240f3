"""Secrets stay out of the store by default (docs/evidence.md, "Secrets"):
the stored text, the lexical index and the returned episode carry a marker,
not the secret; ``keep_secrets=True`` stores the text as given. Both
backends. The fake secrets are random characters in a real key's shape."""

from __future__ import annotations

import random
import string

import pytest

from chronomem import InvalidInputError, Memory

from ._helpers import MemoryFactory

_R = random.Random()


def _body(n: int) -> str:
    return "".join(_R.choice(string.ascii_letters) for _ in range(n - 2)) + "7q"


def _mem(make_memory: MemoryFactory) -> Memory:
    mem = make_memory()
    mem.use_embedder(None)  # lexical search only: a hit means the index holds the word
    return mem


def test_add_episode_redacts_text_and_index(make_memory: MemoryFactory) -> None:
    mem = _mem(make_memory)
    token, password = _body(36), _body(14)
    ep = mem.add_episode(f"deploy with ghp_{token} and password={password} tonight")
    assert ep.text == "deploy with [REDACTED:github_token] and password=[REDACTED:password] tonight"
    assert ep.metadata["redacted"] == {"github_token": 1, "password": 1}
    stored = mem.episode(ep.id)
    assert stored.text == ep.text and stored.metadata == ep.metadata
    assert mem.search(token) == [] and mem.search(password) == []
    assert [h.episode.id for h in mem.search("deploy tonight")] == [ep.id]


def test_keep_secrets_stores_the_text_as_given(make_memory: MemoryFactory) -> None:
    mem = _mem(make_memory)
    token = _body(36)
    ep = mem.add_episode(f"use ghp_{token} here", metadata={"k": 1}, keep_secrets=True)
    assert ep.text == f"use ghp_{token} here" and dict(ep.metadata) == {"k": 1}
    assert [h.episode.id for h in mem.search(token)] == [ep.id]


def test_user_metadata_is_kept_beside_the_count(make_memory: MemoryFactory) -> None:
    mem = _mem(make_memory)
    ep = mem.add_episode(f"key AKIA{_body(16).upper()}", metadata={"caption": "aws"})
    assert dict(ep.metadata) == {"caption": "aws", "redacted": {"aws_access_key_id": 1}}
    assert "redacted" not in mem.add_episode("nothing secret here").metadata


def test_add_episodes_redacts_and_reports_per_item(make_memory: MemoryFactory) -> None:
    mem = _mem(make_memory)
    secret = _body(40)
    seen: list[tuple[int, dict[str, int]]] = []
    ids = mem.add_episodes(["plain turn", {"text": f"token={secret}", "speaker": "ana"}],
                           on_redact=lambda i, c: seen.append((i, dict(c))))
    assert seen == [(1, {"token": 1})]
    assert mem.episode(ids[1]).text == "token=[REDACTED:token]"
    assert mem.search(secret) == []
    kept = mem.add_episodes([f"token={secret}"], keep_secrets=True, on_redact=lambda i, c: seen.append((i, c)))
    assert mem.episode(kept[0]).text == f"token={secret}" and len(seen) == 1


@pytest.mark.parametrize("bad", ["yes", 1, None])
def test_keep_secrets_must_be_a_bool(make_memory: MemoryFactory, bad: object) -> None:
    mem = _mem(make_memory)
    with pytest.raises(InvalidInputError, match="keep_secrets"):
        mem.add_episode("password=hunter22", keep_secrets=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="keep_secrets"):
        mem.add_episodes(["password=hunter22"], keep_secrets=bad)  # type: ignore[arg-type]
    assert mem.episodes() == []
