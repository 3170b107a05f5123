"""PATCH bodies: JSON merge patch (RFC 7386) and JSON patch (RFC 6902).

Neither function modifies its input document: merge_patch rebuilds only the
branches the patch touches, json_patch works on a deep copy.
"""

from .util import ApiError, bad_request, clone


def merge_patch(target, patch):
    if not isinstance(patch, dict):
        return patch
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def json_equal(a, b):
    """Equality of JSON values where true is not 1 (Python's == says it is)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return isinstance(a, bool) and isinstance(b, bool) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b))
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return type(a) is type(b) and a == b


def _unprocessable(message):
    return ApiError(422, "Invalid", message)


def _pointer(path):
    if not isinstance(path, str) or (path and not path.startswith("/")):
        raise bad_request("invalid JSON pointer %r" % (path,))
    if path == "":
        return []
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _index(container, token, for_add):
    """The list index a pointer token names; '-' is one past the end (add only)."""
    if token == "-" and for_add:
        return len(container)
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise _unprocessable("invalid array index %r" % token)
    idx = int(token)
    limit = len(container) if for_add else len(container) - 1
    if idx > limit:
        raise _unprocessable("array index %d out of bounds" % idx)
    return idx


def _parent(doc, tokens, path):
    cur = doc
    for tok in tokens[:-1]:
        if isinstance(cur, dict) and tok in cur:
            cur = cur[tok]
        elif isinstance(cur, list):
            cur = cur[_index(cur, tok, False)]
        else:
            raise _unprocessable("doc is missing path: %s" % path)
    return cur


def _get(doc, path):
    tokens = _pointer(path)
    if not tokens:
        return doc
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent[last]
    if isinstance(parent, list):
        return parent[_index(parent, last, False)]
    raise _unprocessable("doc is missing path: %s" % path)


def _add(doc, path, value):
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict):
        parent[last] = value
    elif isinstance(parent, list):
        parent.insert(_index(parent, last, True), value)
    else:
        raise _unprocessable("doc is missing path: %s" % path)
    return doc


def _remove(doc, path):
    tokens = _pointer(path)
    if not tokens:
        raise _unprocessable("cannot remove the whole document")
    parent = _parent(doc, tokens, path)
    last = tokens[-1]
    if isinstance(parent, dict) and last in parent:
        return parent.pop(last)
    if isinstance(parent, list):
        return parent.pop(_index(parent, last, False))
    raise _unprocessable("unable to remove nonexistent key: %s" % path)


def json_patch(doc, ops):
    if not isinstance(ops, list):
        raise bad_request("a JSON patch must be an array of operations")
    doc = clone(doc)
    for op in ops:
        if not isinstance(op, dict) or "op" not in op or "path" not in op:
            raise bad_request("invalid JSON patch operation: %r" % (op,))
        kind, path = op["op"], op["path"]
        if kind in ("add", "replace", "test") and "value" not in op:
            raise bad_request("JSON patch operation %s needs a value" % kind)
        if kind in ("move", "copy") and "from" not in op:
            raise bad_request("JSON patch operation %s needs from" % kind)
        if kind == "add":
            doc = _add(doc, path, clone(op["value"]))
        elif kind == "remove":
            _remove(doc, path)
        elif kind == "replace":
            _get(doc, path)  # must exist
            if _pointer(path):
                _remove(doc, path)
            doc = _add(doc, path, clone(op["value"]))
        elif kind == "move":
            if path.startswith(op["from"] + "/"):
                raise _unprocessable("cannot move %s into its own child %s" % (op["from"], path))
            value = _remove(doc, op["from"])
            doc = _add(doc, path, value)
        elif kind == "copy":
            doc = _add(doc, path, clone(_get(doc, op["from"])))
        elif kind == "test":
            if not json_equal(_get(doc, path), op["value"]):
                raise _unprocessable("testing value %s failed" % path)
        else:
            raise bad_request("unknown JSON patch operation %r" % (kind,))
    return doc
