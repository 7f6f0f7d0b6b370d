"""The API's errors as exceptions: one class per error code, each with the code and message."""

from __future__ import annotations


class CorralError(Exception):
    """An error from the head (or reaching it).

    ``status`` is the HTTP status (0 when no answer came), ``code`` the API's stable error
    code (``"invalid_argument"``, ...) and ``message`` what the head said.
    """

    def __init__(self, status: int, code: str, message: str):
        super().__init__(f"{code}: {message}" if code else message)
        self.status = status
        self.code = code
        self.message = message


class InvalidArgument(CorralError):
    """400: the request or the job spec is wrong; the message names the field and value."""


class AuthError(CorralError):
    """401 or 403: no valid token, or the token may not do this."""


class NotFound(CorralError):
    """404: no such job, node, queue or path."""


class Conflict(CorralError):
    """409: not in this state (e.g. cancelling a job that already ended)."""


class QuotaExceeded(CorralError):
    """429: too many requests with this token; slow down."""


class Unavailable(CorralError):
    """503, or no answer at all: the head is down, restarting, or has no leader; or 502: the
    head could not reach the node's agent for a request it relays (logs, exec)."""


class ServerError(CorralError):
    """500, or an answer the client cannot read."""


_BY_CODE = {
    "invalid_argument": InvalidArgument,
    "unauthenticated": AuthError,
    "permission_denied": AuthError,
    "not_found": NotFound,
    "failed_precondition": Conflict,
    "already_exists": Conflict,
    "resource_exhausted": QuotaExceeded,
    "unavailable": Unavailable,
    "no_leader": Unavailable,
    "internal": ServerError,
}

_BY_STATUS = {400: InvalidArgument, 401: AuthError, 403: AuthError, 404: NotFound,
              409: Conflict, 429: QuotaExceeded, 503: Unavailable}


def error_for(status: int, code: str, message: str) -> CorralError:
    """The exception for an answer with this HTTP status and API error code."""
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status) or ServerError
    return cls(status, code, message)
