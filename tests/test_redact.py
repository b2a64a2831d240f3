"""Secret redaction (service/evidence/redact.py): a corpus of real-shaped
fake secrets, each redacted with its kind, and near-misses left untouched.

The fake secrets are built from random characters at test time (a literal
key in the source would trip secret scanners); none is a real credential."""

from __future__ import annotations

import json
import random
import string
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import chronomem
from chronomem.adapters.cli import main
from chronomem.service.evidence.redact import KINDS, marker, redact

_R = random.Random(20261201)
_ALNUM = string.ascii_letters + string.digits
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_URLSAFE = _ALNUM + "-_"
_B64 = _ALNUM + "+/"


def rnd(n: int, alphabet: str = _ALNUM) -> str:
    """``n`` random characters, with a digit and a letter if the alphabet has both (as real keys have)."""
    need_alpha = any(c.isalpha() for c in alphabet)
    while True:
        s = "".join(_R.choice(alphabet) for _ in range(n))
        if any(c.isdigit() for c in s) and (any(c.isalpha() for c in s) or not need_alpha):
            return s


def pem(kind: str = "RSA ") -> str:
    body = "\n".join(rnd(64, _B64) for _ in range(4))
    return f"-----BEGIN {kind}PRIVATE KEY-----\n{body}\n-----END {kind}PRIVATE KEY-----"


def jwt() -> str:
    return f"eyJ{rnd(30, _URLSAFE)}.eyJ{rnd(60, _URLSAFE)}.{rnd(43, _URLSAFE)}"


# (a secret, its kind, a sentence around it: "{}" is where it goes)
SECRETS: list[tuple[str, str, str]] = [
    (f"sk-{rnd(48)}", "openai_key", "my key is {} ok"),
    (f"sk-proj-{rnd(64, _URLSAFE)}", "openai_key", "OPENAI_API_KEY={}"),
    (f"sk-proj-{rnd(120, _URLSAFE)}", "openai_key", "use ({}) here"),
    (f"sk-svcacct-{rnd(60, _URLSAFE)}", "openai_key", "{}"),
    (f"sk-{rnd(32)}", "openai_key", "key: '{}'"),
    (f"sk-ant-api03-{rnd(93, _URLSAFE)}AA", "anthropic_key", "ANTHROPIC_API_KEY={}"),
    (f"sk-ant-api03-{rnd(80, _URLSAFE)}", "anthropic_key", "try {}."),
    (f"sk-ant-admin01-{rnd(80, _URLSAFE)}", "anthropic_key", "\"{}\""),
    (f"ghp_{rnd(36)}", "github_token", "git clone https://{}@github.com/a/b"),
    (f"gho_{rnd(36)}", "github_token", "token {} expires"),
    (f"ghu_{rnd(36)}", "github_token", "{}"),
    (f"ghs_{rnd(36)}", "github_token", "GH={}"),
    (f"ghr_{rnd(36)}", "github_token", "refresh with {}"),
    (f"github_pat_{rnd(22)}_{rnd(59)}", "github_token", "pat: {}"),
    ("AKIA" + rnd(16, _UPPER_DIGITS), "aws_access_key_id", "id {} in us-east-1"),
    ("ASIA" + rnd(16, _UPPER_DIGITS), "aws_access_key_id", "AWS_ACCESS_KEY_ID={}"),
    ("AKIA" + rnd(16, _UPPER_DIGITS), "aws_access_key_id", "[default]\naws_access_key_id = {}\n"),
    (rnd(40, _B64), "aws_secret_key", "aws_secret_access_key = {}"),
    (rnd(40, _B64), "aws_secret_key", "AWS_SECRET_ACCESS_KEY={}"),
    (rnd(40, _B64), "aws_secret_key", "\"aws_secret_key\": \"{}\""),
    ("AIza" + rnd(35, _URLSAFE), "google_api_key", "maps key {}"),
    ("AIza" + rnd(35, _URLSAFE), "google_api_key", "?key={}&q=x"),
    (f"xoxb-{rnd(12, string.digits)}-{rnd(13, string.digits)}-{rnd(24)}", "slack_token", "bot {}"),
    (f"xoxp-{rnd(12, string.digits)}-{rnd(12, string.digits)}-{rnd(32)}", "slack_token", "{}"),
    (f"xoxa-2-{rnd(30)}", "slack_token", "app {} here"),
    (f"xoxr-{rnd(40)}", "slack_token", "refresh={}"),
    (f"xoxs-{rnd(20, string.digits)}", "slack_token", "{}!"),
    (f"sk_live_{rnd(24)}", "stripe_key", "stripe {}"),
    (f"rk_live_{rnd(99)}", "stripe_key", "restricted {}"),
    (f"sk_test_{rnd(24)}", "stripe_key", "STRIPE_KEY={}"),
    (jwt(), "jwt", "Authorization: Bearer {}"),
    (jwt(), "jwt", "cookie session={}; path=/"),
    (jwt(), "jwt", "{}"),
    (pem(), "private_key", "here:\n{}\nthanks"),
    (pem("EC "), "private_key", "{}"),
    (pem(""), "private_key", "key = \"\"\"{}\"\"\""),
    (pem("OPENSSH "), "private_key", "id_ed25519:\n{}"),
    ("-----BEGIN PRIVATE KEY-----\n" + rnd(64, _B64) + "\n" + rnd(40, _B64), "private_key", "truncated {}"),
    ("hunter2", "password", "password=hunter2 is weak".replace("hunter2", "{}")),
    ("Tr0ub4dor&3", "password", "password: {}"),
    (rnd(12), "password", "DB_PASSWORD={}"),
    ("correct horse battery staple", "password", "passphrase = \"{}\""),
    (rnd(16), "password", "\"password\": \"{}\""),
    (rnd(10), "password", "passwd: {}"),
    (rnd(10), "password", "mysql -u root --pwd={} db"),
    (rnd(20), "token", "token={}"),
    (rnd(30), "token", "GITHUB_TOKEN: {}"),
    (rnd(24), "token", "https://h/cb?access_token={}&state=1"),
    (rnd(32), "api_key", "api_key: {}"),
    (rnd(32), "api_key", "X_APIKEY='{}'"),
    (rnd(32), "api_key", "api-key = {}"),
    (rnd(32), "secret", "client_secret={}"),
    (rnd(32), "secret", "SECRET_KEY: \"{}\""),
    (rnd(32), "secret", "secret = '{}'"),
]


@pytest.mark.parametrize(("secret", "kind", "template"), SECRETS, ids=[f"{k}-{i}" for i, (_, k, _t) in
                                                                          enumerate(SECRETS)])
def test_secret_is_redacted_with_its_kind(secret: str, kind: str, template: str) -> None:
    text = template.format(secret)
    out, counts = redact(text)
    assert secret not in out
    assert counts == {kind: 1}
    assert out == template.format(marker(kind))  # only the secret goes: key names, quotes and prose stay


def test_corpus_size_and_kinds() -> None:
    assert len(SECRETS) >= 40
    assert {k for _, k, _t in SECRETS} == set(KINDS)


NEAR_MISSES: list[str] = [
    "I forgot my password again, can you reset it?",
    "Password: please enter it below",
    "The password is stored in the vault.",
    "token: expired",
    "the secret: patience",
    "def login(user: str, password: str) -> bool:",
    "if password == stored_password:",
    "password = None",
    "password=",
    "password = os.environ['DB_PASSWORD']",
    "token = get_token()",
    "api_key: ${OPENAI_API_KEY}",
    "password=<your password>",
    "password: ********",
    "max_tokens=256, prompt_tokens=1200",
    "token_count=1500",
    "secrets.token_hex(16)",
    "Our task-force meets on Monday; desk-based work.",
    "We use sk-learn and scikit-learn for this.",
    "ask-me-anything-about-the-project-and-anything-else",
    "task-0123456789abcdefghijklmn",
    "ghp_short",
    "github_pat_tooshort",
    "AKIA is a prefix; AKIA123 is too short",
    "ASIAN cuisine and AKIAIOSFODNN7 lowercase akiaiosfodnn7exampleabc",
    "AIza short",
    "xoxb-",
    "xoxb-not-a-token-at-all",
    "sk_live_",
    "rk_live_short",
    "eyJ alone, and eyJhbGciOiJIUzI1NiJ9 a single segment",
    "-----BEGIN PUBLIC KEY-----\nMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE\n-----END PUBLIC KEY-----",
    "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ\n-----END CERTIFICATE-----",
    "550e8400-e29b-41d4-a716-446655440000",
    "commit 3f786850e387550fdab836ed7e6dc881de23001b fixed it",
    "sha256 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "aGVsbG8gd29ybGQ= is base64 of hello world",
    "call me at +1-555-0100 or mail a@example.com",
    "https://example.com/path?q=1&page=2",
    "The secret to good bread is time.",
    "reset your password: click the link we sent",
    "Tokens are counted per request.",
    "version=1.2.3 name=chronomem",
    "[REDACTED:openai_key] was already removed",
    "password = \"\"",
    "a very long word: pneumonoultramicroscopicsilicovolcanoconiosis",
    "id 01890a5d-ac96-774b-bcce-b302099a8057 (a UUIDv7)",
]


@pytest.mark.parametrize("text", NEAR_MISSES)
def test_near_miss_is_left_untouched(text: str) -> None:
    assert redact(text) == (text, {})


def test_near_miss_corpus_size() -> None:
    assert len(NEAR_MISSES) >= 40


def test_several_secrets_in_one_text_are_counted_by_kind() -> None:
    a, b, c = f"ghp_{rnd(36)}", f"ghs_{rnd(36)}", "AKIA" + rnd(16, _UPPER_DIGITS)
    out, counts = redact(f"first {a}, then {b}; aws {c}; password=s3cret!x")
    assert counts == {"github_token": 2, "aws_access_key_id": 1, "password": 1}
    assert out == ("first [REDACTED:github_token], then [REDACTED:github_token]; aws [REDACTED:aws_access_key_id]; "
                   "password=[REDACTED:password]")


def test_a_key_in_an_assignment_is_counted_once_under_its_own_kind() -> None:
    out, counts = redact(f"OPENAI_API_KEY=sk-proj-{rnd(64, _URLSAFE)}")
    assert (out, counts) == ("OPENAI_API_KEY=[REDACTED:openai_key]", {"openai_key": 1})


@pytest.mark.parametrize(("secret", "kind", "template"), SECRETS[::5])
def test_redaction_is_idempotent(secret: str, kind: str, template: str) -> None:
    once, _ = redact(template.format(secret))
    assert redact(once) == (once, {})


def test_empty_text() -> None:
    assert redact("") == ("", {})


# -- the CLI ingest summary ---------------------------------------------------
def _ingest(tmp_path: Path, *flags: str) -> tuple[dict[str, Any], str, Path]:
    db, path = tmp_path / "m.db", tmp_path / "turns.jsonl"
    token, password = f"ghp_{rnd(36)}", rnd(14)
    turns = [{"text": f"push with {token}", "speaker": "ana"},
             {"text": f"db password={password} and {token}", "speaker": "ben"},
             {"text": "nothing secret", "speaker": "ana"}]
    path.write_text("".join(json.dumps(t) + "\n" for t in turns), encoding="utf-8")
    base = ["--db", str(db), "--embedder", "none", "ingest", str(path), "--no-progress", *flags]
    as_json = CliRunner().invoke(main, [*base, "--json"], catch_exceptions=False)
    assert as_json.exit_code == 0, as_json.output
    # a second run on the same db would add nothing (imports are incremental): another db
    other = ["--db", str(tmp_path / "other.db"), *base[2:]]
    human = CliRunner(env={"COLUMNS": "200"}).invoke(main, other, catch_exceptions=False)
    assert human.exit_code == 0, human.output
    return json.loads(as_json.stdout), human.stdout, db


def test_cli_ingest_counts_redacted_secrets(tmp_path: Path) -> None:
    out, human, db = _ingest(tmp_path)
    assert out["episodes"] == 3 and out["redacted"] == 3
    assert out["redacted_by_kind"] == {"github_token": 2, "password": 1}
    assert "redacted 3 secrets (github_token 2, password 1)" in human
    with chronomem.open(db) as mem:
        texts = sorted(e.text for e in mem.episodes())
    assert texts[0] == "db password=[REDACTED:password] and [REDACTED:github_token]"
    assert all("ghp_" not in t for t in texts)


def test_cli_ingest_keep_secrets(tmp_path: Path) -> None:
    out, human, db = _ingest(tmp_path, "--keep-secrets")
    assert out["redacted"] == 0 and out["redacted_by_kind"] == {}
    assert "secrets kept (--keep-secrets)" in human
    with chronomem.open(db) as mem:
        assert sum("ghp_" in e.text for e in mem.episodes()) == 2  # two turns hold the token
