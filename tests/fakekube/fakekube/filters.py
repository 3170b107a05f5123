"""Label and field selectors: parsing (400 on bad syntax) and matching.

A parsed selector is a list of requirements that must all hold (the comma means AND).
Label requirements are (op, key, values); field requirements are (path, negate, value).
"""

import re

from .util import bad_request

_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _check_key(key, text):
    prefix, _, name = key.rpartition("/")
    ok = 0 < len(name) <= 63 and _NAME.match(name)
    if "/" in key:
        ok = ok and 0 < len(prefix) <= 253 and _DNS_SUBDOMAIN.match(prefix)
    if not ok:
        raise bad_request('unable to parse requirement: invalid label key "%s" in selector "%s"' % (key, text))


def _check_value(value, text):
    if len(value) > 63 or not _NAME.match(value):
        raise bad_request('unable to parse requirement: invalid label value "%s" in selector "%s"' % (value, text))


# Operators and punctuation of the label selector language; anything else up to the
# next blank or special character is a word (a key, a value or the words in/notin).
_TOKEN = re.compile(r"\s*(==|!=|=|!|\(|\)|,|<|>|[^\s,()=!<>]+)")


def _tokenize(text):
    tokens = []
    pos = 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        if not m:
            if text[pos:].strip() == "":
                break
            raise bad_request('unable to parse label selector "%s"' % text)
        tokens.append(m.group(1))
        pos = m.end()
    return tokens


_SPECIAL = {"==", "!=", "=", "!", "(", ")", ",", "<", ">"}


def parse_labels(text):
    """Parse a label selector; the empty selector gives [] which matches everything."""
    if text is None or text.strip() == "":
        return []
    toks = _tokenize(text)
    reqs = []
    i = 0

    def fail(why):
        raise bad_request('unable to parse label selector "%s": %s' % (text, why))

    def word(j, what):
        if j >= len(toks) or toks[j] in _SPECIAL:
            fail("expected " + what)
        return toks[j]

    while True:
        if i < len(toks) and toks[i] == "!":
            key = word(i + 1, "a key after '!'")
            _check_key(key, text)
            reqs.append(("!", key, None))
            i += 2
        else:
            key = word(i, "a key")
            _check_key(key, text)
            i += 1
            op = toks[i] if i < len(toks) else ","
            if op == ",":
                reqs.append(("exists", key, None))
            elif op in ("=", "==", "!="):
                i += 1
                # An empty value is allowed: "k=" selects objects whose label k is "".
                if i < len(toks) and toks[i] not in _SPECIAL:
                    value = toks[i]
                    i += 1
                else:
                    value = ""
                _check_value(value, text)
                reqs.append(("!=" if op == "!=" else "=", key, value))
            elif op in ("in", "notin"):
                i += 1
                if i >= len(toks) or toks[i] != "(":
                    fail("expected '(' after " + op)
                i += 1
                values = set()
                while True:
                    if i < len(toks) and toks[i] not in _SPECIAL:
                        values.add(toks[i])
                        _check_value(toks[i], text)
                        i += 1
                    if i < len(toks) and toks[i] == ",":
                        i += 1
                        continue
                    if i < len(toks) and toks[i] == ")":
                        i += 1
                        break
                    fail("unterminated value set")
                if not values:
                    fail("for 'in', 'notin' operators, values set can't be empty")
                reqs.append((op, key, values))
            elif op in ("<", ">"):
                value = word(i + 1, "an integer")
                try:
                    number = int(value)
                except ValueError:
                    fail("for 'Gt', 'Lt' operators, the value must be an integer")
                reqs.append((op, key, number))
                i += 2
            else:
                fail("unexpected '%s'" % op)
        if i >= len(toks):
            return reqs
        if toks[i] != ",":
            fail("expected ',' but got '%s'" % toks[i])
        i += 1


def match_labels(reqs, obj):
    if not reqs:
        return True
    labels = (obj.get("metadata") or {}).get("labels") or {}
    for op, key, val in reqs:
        have = key in labels
        cur = labels.get(key)
        if op == "=":
            ok = have and cur == val
        elif op == "!=":
            ok = not have or cur != val
        elif op == "in":
            ok = have and cur in val
        elif op == "notin":
            ok = not have or cur not in val
        elif op == "exists":
            ok = have
        elif op == "!":
            ok = not have
        else:  # "<" or ">": the label must hold an integer
            try:
                n = int(cur) if have else None
            except ValueError:
                n = None
            ok = n is not None and (n < val if op == "<" else n > val)
        if not ok:
            return False
    return True


def _split_unescaped(text, sep):
    """Split on sep where it is not preceded by a backslash escape."""
    parts, cur, i = [], [], 0
    while i < len(text):
        c = text[i]
        if c == "\\" and i + 1 < len(text):
            cur.append(text[i:i + 2])
            i += 2
            continue
        if c == sep:
            parts.append("".join(cur))
            cur = []
        else:
            cur.append(c)
        i += 1
    parts.append("".join(cur))
    return parts


def _unescape(value, text):
    out, i = [], 0
    while i < len(value):
        c = value[i]
        if c == "\\":
            if i + 1 >= len(value) or value[i + 1] not in "\\,=":
                raise bad_request('invalid field selector "%s": invalid escape sequence' % text)
            out.append(value[i + 1])
            i += 2
            continue
        if c in ",=":
            raise bad_request('invalid field selector "%s": unescaped "%s"' % (text, c))
        out.append(c)
        i += 1
    return "".join(out)


def parse_fields(text):
    """Parse a field selector: comma-separated path=value, path==value or path!=value."""
    if text is None or text.strip() == "":
        return []
    reqs = []
    for term in _split_unescaped(text, ","):
        # The first operator in the term that is not escaped decides.
        i, found = 0, None
        while i < len(term):
            if term[i] == "\\":
                i += 2
                continue
            for op in ("!=", "==", "="):
                if term.startswith(op, i):
                    found = (i, op)
                    break
            if found:
                break
            i += 1
        if not found:
            raise bad_request('invalid selector: \'%s\'; can\'t understand \'%s\'' % (text, term))
        pos, op = found
        path = term[:pos].strip()
        if not path:
            raise bad_request('invalid field selector "%s": empty field name' % text)
        value = _unescape(term[pos + len(op):], text)
        reqs.append((path.split("."), op == "!=", value))
    return reqs


def _field_text(obj, parts):
    cur = obj
    for p in parts:
        if not isinstance(cur, dict) or p not in cur:
            return ""
        cur = cur[p]
    if cur is None:
        return ""
    if isinstance(cur, bool):
        return "true" if cur else "false"
    if isinstance(cur, str):
        return cur
    return str(cur)


def match_fields(reqs, obj):
    for parts, negate, value in reqs:
        if (_field_text(obj, parts) == value) == negate:
            return False
    return True


class Filter:
    """Namespace plus selectors, as one watch or list asks for them."""

    __slots__ = ("namespace", "labels", "fields")

    def __init__(self, namespace=None, label_selector=None, field_selector=None):
        self.namespace = namespace
        self.labels = parse_labels(label_selector)
        self.fields = parse_fields(field_selector)

    @property
    def selective(self):
        return bool(self.labels or self.fields)

    def matches(self, obj):
        """Selectors only; the namespace is checked by the callers, who know it cheaply."""
        return match_labels(self.labels, obj) and match_fields(self.fields, obj)
