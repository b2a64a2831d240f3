"""Network helpers both :mod:`chronomem.adapters.web.server` and :mod:`chronomem.adapters.web`
use, kept below both so neither imports the other for them (the server
builds the web app; the web app must not import the server)."""

from __future__ import annotations

import ipaddress

__all__ = ["is_loopback"]


def is_loopback(host: str) -> bool:
    """Whether ``host`` only accepts connections from this machine."""
    name = host.strip().strip("[]")
    if name.casefold() == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False
