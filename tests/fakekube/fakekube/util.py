"""Small helpers shared by the other modules."""

import json
import time


def dumps(obj):
    """Compact JSON as the API server writes it: no blanks after separators, UTF-8,
    and (like Go's encoder) <, >, & and the JavaScript line separators as \\u escapes.
    Those characters only occur inside strings, so replacing them in the text is safe."""
    text = json.dumps(obj, separators=(",", ":"), ensure_ascii=False)
    for ch, esc in _GO_ESCAPES:
        if ch in text:
            text = text.replace(ch, esc)
    return text


_GO_ESCAPES = (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028"),
               ("\u2029", "\\u2029"))


def dumpb(obj):
    return dumps(obj).encode("utf-8")


def clone(obj):
    """A deep copy of a JSON document (faster than copy.deepcopy for plain data)."""
    return json.loads(dumps(obj))


def now_rfc3339():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# The reason string a Status carries for each HTTP code we produce.
REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    406: "NotAcceptable",
    409: "Conflict",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def status_failure(code, reason=None, message="", details=None, metadata=None):
    """A metav1.Status describing a failure, with the field order the server uses."""
    st = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": metadata or {},
        "status": "Failure",
        "message": message,
        "reason": reason if reason is not None else REASONS.get(code, ""),
    }
    if details:
        st["details"] = details
    st["code"] = code
    return st


class ApiError(Exception):
    """Raised anywhere below the HTTP layer; the handler turns it into a Status reply."""

    def __init__(self, code, reason=None, message="", details=None, metadata=None):
        super().__init__(message)
        self.code = code
        self.status = status_failure(code, reason, message, details, metadata)


def bad_request(message):
    return ApiError(400, "BadRequest", message)
