"""Secret redaction: common credential shapes in episode text are replaced
by ``[REDACTED:<kind>]`` before anything is stored (``docs/evidence.md``,
"Secrets"). Pure functions; no I/O.

Precision over recall: a pattern fires only on a shape a real credential
has (a provider prefix and enough random characters, or a key name such as
``password`` followed by ``=``/``:`` and a value that looks like one), so
prose, UUIDs, hashes and code that merely mentions a password stay intact.
"""

from __future__ import annotations

import re
from typing import Callable

from ...core.lazyre import LazyPattern, lazy

__all__ = ["KINDS", "marker", "redact"]

_MARK = "[REDACTED:{}]"


def marker(kind: str) -> str:
    """What a secret of ``kind`` is replaced with."""
    return _MARK.format(kind)


# not preceded by a token character: "sk-" inside "task-force" is no key
_B = r"(?<![A-Za-z0-9_-])"
_E = r"(?![A-Za-z0-9_-])"

# (kind, pattern); order matters: specific prefixes before general ones
# (sk-ant- before sk-), whole blocks before what could match inside them.
_PEM_BEGIN = lazy(r"-----BEGIN (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY-----")
_PEM_END = lazy(r"-----END (?:[A-Z0-9]{1,20} ){0,3}PRIVATE KEY-----")
_PEM_BODY = lazy(r"(?:\s*[A-Za-z0-9+/=]{16,})+")  # a block cut short: its base64 lines

_TOKENS: tuple[tuple[str, LazyPattern], ...] = (
    ("jwt", lazy(_B + r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*" + _E)),
    ("anthropic_key", lazy(_B + r"sk-ant-[A-Za-z0-9_-]{20,}" + _E)),
    # a real key of 20+ random characters has a digit; a hyphenated phrase has none
    ("openai_key", lazy(_B + r"sk-(?:proj-|svcacct-|admin-)?(?=[A-Za-z_-]*\d)[A-Za-z0-9_-]{20,}" + _E)),
    ("github_token", lazy(_B + r"(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{40,255})" + _E)),
    ("aws_access_key_id", lazy(r"(?<![A-Za-z0-9])(?:AKIA|ASIA)[A-Z0-9]{16}(?![A-Za-z0-9])")),
    ("google_api_key", lazy(_B + r"AIza[0-9A-Za-z_-]{35}" + _E)),
    ("slack_token", lazy(_B + r"xox[abprs]-(?=[A-Za-z-]*\d)[A-Za-z0-9-]{10,}" + _E)),
    ("stripe_key", lazy(_B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}" + _E)),
)

# An AWS secret access key is 40 base64 characters with no prefix: only its
# key name tells it apart from any other 40-character string.
_AWS_SECRET = lazy(
    r"(?i)(\baws_?secret(?:_access)?_key[\"']?\s*[:=]\s*[\"']?)([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])")

_KEY_KINDS = (("password", "password"), ("passwd", "password"), ("passphrase", "password"), ("pwd", "password"),
              ("api_key", "api_key"), ("apikey", "api_key"), ("api-key", "api_key"), ("token", "token"),
              ("secret", "secret"))

# key (words may precede it: db_password, GITHUB_TOKEN, client_secret; a few
# may follow: secret_key), optional closing quote, = or : (not == or ::),
# then a quoted or bare value
_ASSIGN = lazy(
    r"(?i)(?<![A-Za-z0-9_])((?:[a-z0-9]{1,40}[_-]){0,6}(password|passwd|passphrase|pwd|api[_-]?key|token|secret)"
    r"(?:[_-](?:key|value|access[_-]key))?)"
    r"([\"']?[ \t]*(?:=(?!=)|:(?!:))[ \t]*)"
    r"(?:\"([^\"\n]{1,512})\"|'([^'\n]{1,512})'|([^\s\"',;)\]}<>]{1,512}))")

_PLACEHOLDERS = frozenset({"none", "null", "nil", "true", "false", "undefined", "empty", "required", "optional",
                           "str", "string", "bytes", "int", "secret", "password", "token", "xxx", "changeme"})


def _key_kind(word: str) -> str:
    low = word.lower()
    for name, kind in _KEY_KINDS:
        if name in low:
            return kind
    return "secret"


def _looks_secret(value: str, *, colon: bool, quoted: bool) -> bool:
    """Whether an assigned value is plausibly a credential, not code or prose."""
    v = value.strip()
    if len(v) < 4 or v.lower() in _PLACEHOLDERS or v.startswith(("[REDACTED", "$", "<", "{", "%", "os.", "getenv")):
        return False
    if set(v) <= {"*", "x", "X", ".", "-", "_", "•"}:
        return False  # a mask: "********"
    if quoted:
        return True
    if "(" in v:
        return False  # a call: token=get_token()
    if colon:
        # "token: expired", "Password: Please" are prose or a type; "password: hunter2" is a value
        return any(c.isdigit() or not c.isalnum() for c in v) or any(c.isupper() for c in v[1:])
    return True


def _assign(counts: dict[str, int]) -> Callable[[re.Match[str]], str]:
    def sub(m: re.Match[str]) -> str:
        dq, sq, bare = m.group(4), m.group(5), m.group(6)
        value = dq if dq is not None else sq if sq is not None else bare
        rest = ""
        if bare is not None and "=" in m.group(3) and "&" in bare:
            value, amp, tail = bare.partition("&")  # a URL query: the value ends at the next parameter
            rest = amp + tail
        if not _looks_secret(value, colon=":" in m.group(3), quoted=bare is None):
            return m.group(0)
        kind = _key_kind(m.group(2))
        counts[kind] = counts.get(kind, 0) + 1
        q = '"' if dq is not None else "'" if sq is not None else ""
        return f"{m.group(1)}{m.group(3)}{q}{marker(kind)}{q}{rest}"
    return sub


def _private_keys(text: str) -> tuple[str, int]:
    """PEM private-key blocks (BEGIN to END, or BEGIN and its base64 lines
    when the END is missing) -> their marker. One forward pass over the
    BEGIN and END lines, so many BEGINs without an END stay linear."""
    ends = [m.end() for m in _PEM_END.finditer(text)]
    out: list[str] = []
    pos = n = ei = 0
    for begin in _PEM_BEGIN.finditer(text):
        if begin.start() < pos:
            continue  # inside a block already replaced
        while ei < len(ends) and ends[ei] <= begin.end():
            ei += 1
        nxt = _PEM_BEGIN.search(text, begin.end())
        if ei < len(ends) and (nxt is None or ends[ei] <= nxt.start()):
            stop = ends[ei]
        else:
            body = _PEM_BODY.match(text, begin.end())
            if body is None:
                continue  # a BEGIN line in prose, no key material
            stop = body.end()
        out += (text[pos:begin.start()], marker("private_key"))
        pos, n = stop, n + 1
    return ("".join(out) + text[pos:], n) if n else (text, 0)


def redact(text: str) -> tuple[str, dict[str, int]]:
    """``text`` with every recognised secret replaced by its marker, and how
    many of each kind were replaced (empty: nothing found). Idempotent: a
    marker is never matched again."""
    counts: dict[str, int] = {}
    if not text:
        return text, counts
    text, n = _private_keys(text)
    if n:
        counts["private_key"] = n
    for kind, pattern in _TOKENS:
        text, n = pattern.subn(marker(kind), text)
        if n:
            counts[kind] = counts.get(kind, 0) + n
    text, n = _AWS_SECRET.subn(lambda m: m.group(1) + marker("aws_secret_key"), text)
    if n:
        counts["aws_secret_key"] = n
    while True:  # again: a bare URL value split at "&" may leave "&id_token=..." unscanned
        again = _ASSIGN.sub(_assign(counts), text)
        if again == text:
            return text, counts
        text = again


#: Every kind :func:`redact` reports.
KINDS: tuple[str, ...] = ("private_key", *(k for k, _ in _TOKENS), "aws_secret_key", "password", "api_key", "token",
                          "secret")
