/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/settings.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "internal.h"

/*
 * Value parsers for settings. Each accepts exactly one spelling of a value
 * and rejects anything around it (blanks, trailing junk, a second sign):
 * a setting that is silently read as something else is worse than an
 * operator that refuses to start.
 */

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

static bool is_alpha(char c)
{
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool is_lower_alnum(char c)
{
        return (c >= 'a' && c <= 'z') || is_digit(c);
}

static bool is_alnum(char c)
{
        return is_alpha(c) || is_digit(c);
}

static bool is_blank(char c)
{
        return c == ' ' || c == '\t';
}

/* ---- booleans ----------------------------------------------------------- */

int ao_parse_bool(const char *s, bool *ret)
{
        /* strconv.ParseBool is case-sensitive and takes exactly these spellings. */
        static const char *const yes[] = {"1", "t", "T", "TRUE", "true", "True"};
        static const char *const no[] = {"0", "f", "F", "FALSE", "false", "False"};

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < AO_ARRAY_SIZE(yes); i++) {
                if (strcmp(s, yes[i]) == 0) {
                        *ret = true;
                        return 0;
                }
                if (strcmp(s, no[i]) == 0) {
                        *ret = false;
                        return 0;
                }
        }
        /* The documented HELM3=yes, and the spellings people write in YAML, in any case. */
        if (strcasecmp(s, "yes") == 0 || strcasecmp(s, "on") == 0) {
                *ret = true;
                return 0;
        }
        if (strcasecmp(s, "no") == 0 || strcasecmp(s, "off") == 0) {
                *ret = false;
                return 0;
        }
        return -EINVAL;
}

/* ---- numbers ------------------------------------------------------------ */

int parse_int64(const char *s, int64_t min, int64_t max, int64_t *ret)
{
        const char *p = s;
        bool neg = false, overflow = false;
        uint64_t v = 0;
        int64_t x;

        if (!s)
                return -EINVAL;
        if (*p == '+' || *p == '-')
                neg = *p++ == '-';
        if (!is_digit(*p))
                return -EINVAL;
        for (; *p; p++) {
                if (!is_digit(*p))
                        return -EINVAL;
                uint64_t digit = (uint64_t) (*p - '0');
                /* Keep scanning after an overflow so that "99999999999999999999x" reads as junk. */
                if (v > (UINT64_MAX - digit) / 10)
                        overflow = true;
                else
                        v = v * 10 + digit;
        }
        if (overflow)
                return -ERANGE;
        if (neg) {
                if (v > (uint64_t) INT64_MAX + 1)
                        return -ERANGE;
                x = v == (uint64_t) INT64_MAX + 1 ? INT64_MIN : -(int64_t) v;
        } else {
                if (v > (uint64_t) INT64_MAX)
                        return -ERANGE;
                x = (int64_t) v;
        }
        if (x < min || x > max)
                return -ERANGE;
        *ret = x;
        return 0;
}

int parse_port(const char *s, uint16_t *ret)
{
        int64_t v;
        int r = parse_int64(s, 0, UINT16_MAX, &v);
        if (r < 0)
                return r;
        *ret = (uint16_t) v;
        return 0;
}

int parse_double_positive(const char *s, double *ret)
{
        char *end;
        double d;

        /* strtod() would skip leading blanks; a value is not allowed any. */
        if (!s || *s == '\0' || is_blank(*s) || *s == '\n' || *s == '\r' || *s == '\v' || *s == '\f')
                return -EINVAL;
        /* No setlocale() in this program, so strtod() always reads '.' as the decimal point. */
        errno = 0;
        d = strtod(s, &end);
        if (end == s || *end != '\0')
                return -EINVAL;
        if (errno == ERANGE || !isfinite(d) || !(d > 0))
                return -ERANGE;
        *ret = d;
        return 0;
}

/* ---- names -------------------------------------------------------------- */

int parse_metric_prefix(const char *s)
{
        /* Prometheus metric names are [a-zA-Z_:][a-zA-Z0-9_:]*; the prefix is their start, or nothing. */
        if (!s)
                return -EINVAL;
        for (const char *p = s; *p; p++)
                if (!(is_alpha(*p) || *p == '_' || *p == ':' || (p != s && is_digit(*p))))
                        return -EINVAL;
        return 0;
}

int parse_reactor(const char *s, enum ao_reactor_backend_choice *ret)
{
        static const struct {
                const char *name;
                enum ao_reactor_backend_choice choice;
        } names[] = {
            {"auto", AO_REACTOR_CHOICE_AUTO},
            {"io_uring", AO_REACTOR_CHOICE_IO_URING},
            {"uring", AO_REACTOR_CHOICE_IO_URING},
            {"epoll", AO_REACTOR_CHOICE_EPOLL},
        };

        if (!s)
                return -EINVAL;
        for (size_t i = 0; i < AO_ARRAY_SIZE(names); i++)
                if (strcasecmp(s, names[i].name) == 0) {
                        *ret = names[i].choice;
                        return 0;
                }
        return -EINVAL;
}

/* ---- Kubernetes labels -------------------------------------------------- */

/* A label name or value: [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63 bytes (apimachinery IsQualifiedName). */
static bool label_name_ok(const char *s, size_t len)
{
        if (len == 0 || len > 63)
                return false;
        if (!is_alnum(s[0]) || !is_alnum(s[len - 1]))
                return false;
        for (size_t i = 1; i + 1 < len; i++)
                if (!is_alnum(s[i]) && s[i] != '-' && s[i] != '_' && s[i] != '.')
                        return false;
        return true;
}

/* A DNS-1123 subdomain, the optional "example.com/" prefix of a label key. */
static bool dns_subdomain_ok(const char *s, size_t len)
{
        if (len == 0 || len > 253)
                return false;
        for (size_t i = 0; i < len; i++) {
                bool edge = i == 0 || i + 1 == len || s[i - 1] == '.' || s[i + 1] == '.';
                if (is_lower_alnum(s[i]))
                        continue;
                if (edge || (s[i] != '-' && s[i] != '.'))
                        return false;
        }
        return true;
}

static bool label_key_ok(const char *s, size_t len)
{
        const char *slash = memchr(s, '/', len);
        if (!slash)
                return label_name_ok(s, len);
        return dns_subdomain_ok(s, (size_t) (slash - s)) &&
               label_name_ok(slash + 1, len - (size_t) (slash + 1 - s));
}

static bool label_value_ok(const char *s, size_t len)
{
        return len == 0 || label_name_ok(s, len);
}

/* Trim blanks from [*s, *s + *len): label selectors allow "a = b, c = d". */
static void trim_span(const char **s, size_t *len)
{
        while (*len > 0 && is_blank(**s)) {
                (*s)++;
                (*len)--;
        }
        while (*len > 0 && is_blank((*s)[*len - 1]))
                (*len)--;
}

static bool label_seen(const char *list, const char *key, size_t key_len, const char *upto)
{
        /* Lists are short (a handful of labels), so a rescan beats a set. */
        for (const char *p = list; p < upto;) {
                const char *comma = memchr(p, ',', (size_t) (upto - p));
                const char *end = comma ? comma : upto;
                const char *eq = memchr(p, '=', (size_t) (end - p));
                const char *k = p;
                size_t klen = (size_t) ((eq ? eq : end) - p);
                trim_span(&k, &klen);
                if (klen == key_len && memcmp(k, key, key_len) == 0)
                        return true;
                p = comma ? comma + 1 : upto;
        }
        return false;
}

int parse_label_list(const char *s)
{
        const char *p = s;

        if (!s)
                return -EINVAL;
        while (is_blank(*p))
                p++;
        if (*p == '\0')
                return 0; /* no extra labels */

        for (p = s;;) {
                const char *comma = strchr(p, ',');
                const char *end = comma ? comma : p + strlen(p);
                const char *eq = memchr(p, '=', (size_t) (end - p));
                if (!eq)
                        return -EINVAL;

                const char *k = p, *v = eq + 1;
                size_t klen = (size_t) (eq - p), vlen = (size_t) (end - v);
                trim_span(&k, &klen);
                trim_span(&v, &vlen);
                if (!label_key_ok(k, klen) || !label_value_ok(v, vlen))
                        return -EINVAL;
                /* Two values for one label cannot both be stamped on an object. */
                if (label_seen(s, k, klen, p))
                        return -EINVAL;
                if (!comma)
                        return 0;
                p = comma + 1;
        }
}

/* ---- lists -------------------------------------------------------------- */

char **config_strv_free(char **v)
{
        if (v)
                for (char **i = v; *i; i++)
                        free(*i);
        free(v);
        return NULL;
}

int config_split(const char *s, char sep, bool trim, char ***ret)
{
        _cleanup_(config_strv_freep) char **v = NULL;
        size_t n = 0, cap = 1;

        for (const char *p = s; *p; p++)
                cap += *p == sep;
        v = calloc(cap + 1, sizeof(char *));
        if (!v)
                return -ENOMEM;

        for (const char *p = s;;) {
                const char *end = strchr(p, sep);
                size_t len = end ? (size_t) (end - p) : strlen(p);
                const char *item = p;
                if (trim)
                        trim_span(&item, &len);
                if (len > 0) {
                        v[n] = strndup(item, len);
                        if (!v[n])
                                return -ENOMEM;
                        n++;
                }
                if (!end)
                        break;
                p = end + 1;
        }
        *ret = TAKE_PTR(v);
        return 0;
}

/* ---- messages ----------------------------------------------------------- */

const char *config_escape(const char *s, char *buf, size_t size)
{
        static const char ellipsis[] = "...";
        size_t o = 0;

        /* Room for the longest escape ("\xNN", 4 bytes), the ellipsis and the NUL. */
        const size_t limit = size - 4 - sizeof(ellipsis);
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                if (o >= limit) {
                        memcpy(buf + o, ellipsis, sizeof(ellipsis));
                        return buf;
                }
                switch (*p) {
                case '\n':
                        buf[o++] = '\\';
                        buf[o++] = 'n';
                        break;
                case '\t':
                        buf[o++] = '\\';
                        buf[o++] = 't';
                        break;
                case '\r':
                        buf[o++] = '\\';
                        buf[o++] = 'r';
                        break;
                case '\\':
                        buf[o++] = '\\';
                        buf[o++] = '\\';
                        break;
                default:
                        if (*p < 0x20 || *p == 0x7f)
                                o += (size_t) snprintf(buf + o, size - o, "\\x%02x", *p);
                        else
                                buf[o++] = (char) *p;
                }
        }
        buf[o] = '\0';
        return buf;
}
