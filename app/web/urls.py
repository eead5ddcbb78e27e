"""Looking at a URL the way a careful person would before opening it (URL-mode elicitation)."""

from __future__ import annotations

import ipaddress
import unicodedata
from typing import Any
from urllib.parse import urlsplit

from app.console.own_host import REFUSED, leads_to_host


def _scripts(text: str) -> set[str]:
    names = set()
    for ch in text:
        if ch.isalpha():
            name = unicodedata.name(ch, "")
            names.add(name.split(" ")[0] if name else "UNKNOWN")
    return names


def url_facts(url: str, console_host: str = "") -> dict[str, Any]:
    """Split a URL for display (the host highlighted) and list what deserves a warning. A URL that leads to the
    console's own host name (`console_host`, on any port) is never a link (app/console/own_host.py)."""
    to_console = leads_to_host(url, console_host)
    warnings = [REFUSED.format(host=console_host).capitalize() + "."] if to_console else []
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
    except ValueError:
        return {"ok_link": False, "scheme": "", "before": url, "host": "", "after": "",
                "warnings": ["This is not a well-formed URL."]}
    scheme = parts.scheme.lower()
    ok_link = scheme in ("http", "https") and bool(host) and not to_console
    if scheme not in ("http", "https") or not host:
        warnings.append(f"Scheme {scheme or '(none)'!r} is not http(s): the console will not make it a link.")
    if parts.username is not None or "@" in parts.netloc:
        warnings.append("The URL has text before '@': that part is not the host. Check the highlighted host.")
    labels = host.split(".")
    if any(label.startswith("xn--") for label in labels):
        try:
            shown = host.encode("ascii").decode("idna")
        except UnicodeError:
            shown = "(undecodable)"
        warnings.append(f"Punycode host: it displays as {shown!r}; it may imitate another domain.")
    if any(ord(ch) > 127 for ch in host):
        warnings.append("The host contains non-ASCII characters that may look like other letters.")
        if len(_scripts(host)) > 1:
            warnings.append(f"The host mixes scripts ({', '.join(sorted(_scripts(host)))}): a look-alike trick.")
    try:
        ipaddress.ip_address(host.strip("[]"))
        warnings.append("The host is a bare IP address, not a name.")
    except ValueError:
        pass
    netloc = parts.netloc
    at = netloc.rfind("@")
    host_start = url.find(netloc) + (at + 1 if at >= 0 else 0) if netloc else -1
    if host_start < 0 or not host:
        return {"ok_link": ok_link, "scheme": scheme, "before": url, "host": "", "after": "", "warnings": warnings}
    host_text = netloc[at + 1:] if at >= 0 else netloc
    return {"ok_link": ok_link, "scheme": scheme, "before": url[:host_start], "host": host_text,
            "after": url[host_start + len(host_text):], "warnings": warnings}
