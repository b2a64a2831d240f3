"""Network helpers both :mod:`chronomem.adapters.web.server` and :mod:`chronomem.adapters.web`
use, kept below both so neither imports the other for them (the server
builds the web app; the web app must not import the server)."""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import quote

__all__ = ["is_loopback", "parse_authority", "same_origin_path"]

# RFC 3986 authority without userinfo: a reg-name or IPv4 address, or an IPv6
# literal in brackets, then an optional decimal port
_AUTHORITY = re.compile(r"(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._-]+)(?::(?P<port>[0-9]{1,5}))?")
_DEFAULT_PORTS = {"http": 80, "https": 443, "ws": 80, "wss": 443}


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    name = host.strip().strip("[]")
    if name.casefold() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def parse_authority(value: str, scheme: str = "http") -> tuple[str, int]:
    """``(host, port)`` of a ``Host`` header, parsed strictly: no userinfo, no
    path, a decimal port (default: the scheme's). Raises :class:`ValueError`
    on anything else; lenient parsers (``urlsplit``) read ``evil@127.0.0.1``
    as ``127.0.0.1``."""
    match = _AUTHORITY.fullmatch(value)
    if match is None:
        raise ValueError(f"malformed Host {value!r}")
    host, port = match["host"], match["port"]
    if host.startswith("["):
        try:
            ipaddress.IPv6Address(host[1:-1])
        except ValueError:
            raise ValueError(f"malformed Host {value!r}") from None
    number = int(port) if port is not None else _DEFAULT_PORTS.get(scheme, 80)
    if not 0 < number <= 65535:
        raise ValueError(f"malformed Host {value!r}")
    return host.casefold(), number


def same_origin_path(path: str, query: str = "") -> str:
    """A redirect target that can only name this origin: ``path`` percent-
    encoded (backslashes, controls and spaces included, which browsers would
    otherwise rewrite) and starting with exactly one ``/``, so neither a
    scheme nor a network-path reference (``//evil.example/``) can come out."""
    target = "/" + quote(path, safe="/:@!$&'()*+,;=-._~").lstrip("/")
    assert target.startswith("/") and not target.startswith("//") and "\\" not in target
    return target + ("?" + query if query else "")
