"""``core.lazyre.lazy``: a pattern compiled on first use answers exactly as
``re.compile`` does, and importing the rule modules compiles nothing."""

from __future__ import annotations

import re
import subprocess
import sys

from chronomem.core.lazyre import lazy


def test_same_answers_as_a_compiled_pattern() -> None:
    src, text = r"(?P<w>\b[a-z]+day)\b", "Monday and tuesday, not days"
    eager, deferred = re.compile(src, re.I), lazy(src, re.I)
    assert deferred._compiled is None and deferred.pattern == src
    assert [m.span() for m in deferred.finditer(text)] == [m.span() for m in eager.finditer(text)]
    assert deferred._compiled is not None  # compiled once, kept
    for name in ("search", "match", "fullmatch", "findall", "split"):
        assert repr(getattr(deferred, name)(text)) == repr(getattr(eager, name)(text)), name
    assert deferred.sub("X", text) == eager.sub("X", text) and deferred.subn("X", text) == eager.subn("X", text)


def test_importing_the_rules_compiles_none_of_them() -> None:
    code = ("import chronomem.service.evidence.timemention as t, chronomem.service.evidence.tense as s, "
            "chronomem.service.evidence.redact as r\n"
            "from chronomem.core.lazyre import LazyPattern\n"
            "pats = [v for m in (t, s, r) for v in vars(m).values() if isinstance(v, LazyPattern)]\n"
            "pats += [p for p, *_ in t._PATTERNS] + [p for p, *_ in s._CUES] + [p for _k, p in r._TOKENS]\n"
            "assert len(pats) > 60, len(pats)\n"
            "assert all(p._compiled is None for p in pats)\n"
            "r.redact('token=abc123 ghp_' + 'a' * 36)\n"
            "assert any(p._compiled is not None for p in pats)\n")
    subprocess.run([sys.executable, "-c", code], check=True)
