"""A Prometheus URL as it may be shown: in /readyz, /v1/evaluation, logs and error messages.

`http://user:pass@host/?token=x` carries credentials; every place that displays the URL shows
`http://user:***@host/?token=***` instead. Requests still use the URL as configured.
"""

from __future__ import annotations

from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

__all__ = ["REDACTED", "redact_url"]

REDACTED = "***"


def redact_url(url: str) -> str:
    """The URL with any password (or a user name standing alone, which may be a token) and every query value
    replaced by `***`."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:  # not parseable as a URL: show nothing of what might be in it
        return REDACTED
    netloc = parts.netloc
    if "@" in netloc:
        # With a password the user name is an identity and stays; alone it may be the token itself.
        user = f"{parts.username}:{REDACTED}" if parts.password is not None else REDACTED
        shown_host = f"[{host}]" if ":" in host else host
        netloc = f"{user}@{shown_host}" + (f":{port}" if port is not None else "")
    query = parts.query
    if query:
        query = urlencode([(k, REDACTED) for k, _ in parse_qsl(query, keep_blank_values=True)], safe="*")
    return urlunsplit((parts.scheme, netloc, parts.path, query, "" if not parts.fragment else REDACTED))
