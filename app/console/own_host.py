"""Whether a URL a target offers would take the browser to the console's own host name, on any port.

The owner's cookie is bound to the console's public host name (app/web/public_host.py), and browsers send a
host's cookies to every port of it: a link to `http://<that name>:<another port>/` hands the cookie to whatever
listens there, such as the target itself. The name is not secret from a target that shows an MCP App view (the
view's `location.ancestorOrigins` lists the console's origin), so no link, resource link, URL elicitation,
authorization page or view's open-link offer that leads there is ever made clickable.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import unquote, urlsplit


def canonical_host(host: str) -> str:
    """A host as a browser would compare it: percent-decoded, lower-cased, without a trailing dot or IPv6
    brackets, and an IPv4 address in any legacy spelling (`2130706433`, `0x7f.1`, `127.1`) written out."""
    host = unquote(host).strip().lower().rstrip(".").strip("[]")
    if host and all(c in "0123456789abcdefx." for c in host):
        try:
            return socket.inet_ntoa(socket.inet_aton(host))  # the legacy IPv4 forms a URL parser accepts
        except OSError:
            pass
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        return host


def leads_to_host(url: str, host: str) -> bool:
    """Whether `url` (any scheme with a host) names `host`, whatever its port."""
    if not host:
        return False
    want = canonical_host(host)
    # Read as urllib reads it and with backslashes as slashes, as a browser reads an http(s) URL: where the two
    # disagree on the host (`http://<host>:1\@elsewhere/`), either one naming the console's is enough.
    for spelling in {url.strip(), url.strip().replace("\\", "/")}:
        try:
            name = urlsplit(spelling).hostname
        except ValueError:
            continue
        if name is not None and canonical_host(name) == want:
            return True
    return False


REFUSED = ("not made a link: it leads to the console's own host name ({host}), where the browser would send the "
           "console's owner cookie to whatever listens on that port")
