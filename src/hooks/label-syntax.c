/* SPDX-License-Identifier: Apache-2.0 */
/*
 * What a label key, a label value and a field name may contain, checked when
 * a hook's configuration is parsed. The selectors are sent to the API server
 * as text ("app=web,tier in (a,b)"), so a value holding ',', '=' or '(' would
 * change what the query means; the API server's own rules (a qualified name
 * for keys, at most 63 characters of [A-Za-z0-9-_.] for values) rule that
 * out, and the Go operator refuses the same selectors.
 */
#include "ao/hook-config.h"

#include <stdbool.h>
#include <string.h>

#define LABEL_NAME_MAX   63
#define LABEL_PREFIX_MAX 253

static bool is_alnum(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

static bool is_lower_alnum(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
}

/* [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])? of at most 63 characters; "" when @empty_ok. */
static const char *check_name(const char *s, size_t len, bool empty_ok)
{
        if (len == 0)
                return empty_ok ? NULL : "must not be empty";
        if (len > LABEL_NAME_MAX)
                return "is longer than 63 characters";
        if (!is_alnum(s[0]) || !is_alnum(s[len - 1]))
                return "must start and end with a letter or digit";
        for (size_t i = 1; i + 1 < len; i++)
                if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
                        return "may only hold letters, digits, '-', '_' and '.'";
        return NULL;
}

/* A DNS subdomain: dot-separated lowercase labels of [a-z0-9-], each starting and ending alphanumeric. */
static const char *check_prefix(const char *s, size_t len)
{
        if (len == 0)
                return "has an empty prefix before '/'";
        if (len > LABEL_PREFIX_MAX)
                return "has a prefix longer than 253 characters";
        for (size_t i = 0; i < len; i++) {
                bool label_edge = i == 0 || i + 1 == len || s[i - 1] == '.' || s[i + 1] == '.';
                if (s[i] == '.' && !label_edge)
                        continue;
                if (is_lower_alnum(s[i]) || (s[i] == '-' && !label_edge))
                        continue;
                return "has a prefix that is not a lowercase DNS subdomain";
        }
        return NULL;
}

const char *ao_label_key_problem(const char *key)
{
        const char *slash = strchr(key, '/');
        if (!slash)
                return check_name(key, strlen(key), false);
        const char *why = check_prefix(key, (size_t) (slash - key));
        return why ? why : check_name(slash + 1, strlen(slash + 1), false);
}

const char *ao_label_value_problem(const char *value)
{
        return check_name(value, strlen(value), true);
}

/* Field paths are "metadata.name", "spec.nodeName", "status.phase": anything else could be query syntax. */
const char *ao_field_name_problem(const char *field)
{
        if (field[0] == '\0')
                return "must not be empty";
        for (const char *p = field; *p; p++)
                if (!is_alnum(*p) && *p != '.' && *p != '-' && *p != '_')
                        return "may only hold letters, digits, '.', '-' and '_'";
        return NULL;
}
