/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/schema.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <oniguruma.h>

#include "ao/alloc.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"
#include "schema-internal.h"

/*
 * Validation walks the loaded schema (a cJSON tree) and the value side by
 * side. Every violation becomes one line "<path>: <message> (<keyword>)" in
 * document order. Inside anyOf/oneOf/not only "does it match" matters, so
 * there failures are counted, not written, and the walk stops at the first.
 * A step budget bounds the work that recursive $refs under anyOf/oneOf could
 * otherwise multiply; running out of it is itself an error.
 */

/* Longest path written in an error line; deeper paths keep their tail. */
#define MAX_PATH_IN_LINE 1024
/* Longest rendering of enum or const values in a message. */
#define MAX_VALUES_TEXT 256

struct vctx {
        const struct ao_schema_doc *doc; /* borrowed */
        struct ao_strbuf path;           /* path of the current value, starting with the root name */
        size_t root_len;                 /* length of the root name in path */
        struct ao_strbuf out;            /* NUL-separated error lines */
        unsigned n_errors;
        unsigned quiet;          /* > 0 inside anyOf/oneOf/not: failures are counted only */
        unsigned quiet_failures; /* failures since the innermost quiet level began */
        size_t steps;
        bool aborted;       /* the budget or the error cap ran out: nothing more is checked */
        OnigMatchParam *mp; /* owned: regex retry limits */
        /* the $ref targets being validated now, each with its value: a loop back to one is no progress */
        const cJSON *ref_schema[AO_SCHEMA_MAX_DEPTH + 2];
        const cJSON *ref_value[AO_SCHEMA_MAX_DEPTH + 2];
        size_t n_refs;
};

static const cJSON *get(const cJSON *s, const char *key)
{
        return cJSON_GetObjectItemCaseSensitive(s, key);
}

static bool stopped(const struct vctx *c)
{
        return c->aborted || (c->quiet > 0 && c->quiet_failures > 0);
}

/* ---- error lines ------------------------------------------------------------------------------- */

static void append_path(struct vctx *c, size_t len)
{
        const char *p = ao_strbuf_str(&c->path);

        if (len <= MAX_PATH_IN_LINE) {
                ao_strbuf_append_n(&c->out, p, len);
                return;
        }
        /* Keep the tail, which says where; start on a UTF-8 sequence boundary. */
        p += len - MAX_PATH_IN_LINE;
        while ((*p & 0xC0) == 0x80)
                p++;
        ao_strbuf_append(&c->out, "...");
        ao_strbuf_append(&c->out, p);
}

static void append_line(struct vctx *c, size_t path_len, const char *msg, const char *keyword)
{
        append_path(c, path_len);
        if (path_len > 0)
                ao_strbuf_append(&c->out, ": ");
        ao_strbuf_append_sanitized(&c->out, msg);
        if (keyword)
                ao_strbuf_appendf(&c->out, " (%s)", keyword);
        ao_strbuf_append_c(&c->out, '\0');
        c->n_errors++;
}

/* Stop validating, with one line at the root saying why (written even inside anyOf & co). */
static void abort_validation(struct vctx *c, const char *why)
{
        if (c->aborted)
                return;
        c->aborted = true;
        append_line(c, c->root_len, why, NULL);
}

/*
 * Count @n units of work against the budget: schema nodes visited, plus
 * what a keyword does in one go (items sorted, enum entries compared,
 * string bytes searched), so that no keyword multiplies past it.
 */
static bool charge(struct vctx *c, size_t n)
{
        if (c->aborted)
                return false;
        c->steps += n;
        if (c->steps <= AO_SCHEMA_MAX_STEPS)
                return true;
        abort_validation(c, "validation stopped: the schema takes too many steps for this value");
        return false;
}

_printf_(3, 4) static void fail(struct vctx *c, const char *keyword, const char *fmt, ...)
{
        struct ao_strbuf msg = {0};
        va_list ap;

        if (c->quiet > 0) {
                c->quiet_failures++;
                return;
        }
        if (c->aborted)
                return;
        if (c->n_errors + 1 >= AO_SCHEMA_MAX_ERRORS) {
                abort_validation(c, "too many errors, the rest are not shown");
                return;
        }
        va_start(ap, fmt);
        ao_strbuf_vappendf(&msg, fmt, ap);
        va_end(ap);
        append_line(c, c->path.len, ao_strbuf_str(&msg), keyword);
        ao_strbuf_done(&msg);
}

static bool plain_key(const char *k)
{
        if (*k == '\0')
                return false;
        for (; *k; k++)
                if (!isalnum((unsigned char) *k) && *k != '_' && *k != '-' && !((unsigned char) *k & 0x80))
                        return false;
        return true;
}

/* ".key" when the key reads unambiguously, else ["key"] as a JSON string. */
static size_t path_push_key(struct vctx *c, const char *key)
{
        size_t old = c->path.len;

        if (plain_key(key)) {
                if (c->path.len > 0)
                        ao_strbuf_append_c(&c->path, '.');
                ao_strbuf_append(&c->path, key);
        } else {
                ao_strbuf_append_c(&c->path, '[');
                ao_strbuf_append_json_string(&c->path, key);
                ao_strbuf_append_c(&c->path, ']');
        }
        return old;
}

static size_t path_push_index(struct vctx *c, size_t i)
{
        size_t old = c->path.len;

        ao_strbuf_appendf(&c->path, "[%zu]", i);
        return old;
}

static void path_pop(struct vctx *c, size_t len)
{
        c->path.len = len;
        if (c->path.buf)
                c->path.buf[len] = '\0';
}

/* Shortest of %.15g/%.16g/%.17g that reads back as @d. */
static const char *fmt_number(char buf[static 32], double d)
{
        for (int prec = 15; prec <= 17; prec++) {
                snprintf(buf, 32, "%.*g", prec, d);
                if (strtod(buf, NULL) == d)
                        break;
        }
        return buf;
}

/* 'string' for strings, canonical JSON for the rest. */
static void append_value(struct ao_strbuf *sb, const cJSON *v)
{
        _cleanup_free_ char *text = NULL;

        if (cJSON_IsString(v)) {
                ao_strbuf_appendf(sb, "'%s'", v->valuestring);
                return;
        }
        text = ao_json_canonical(v);
        ao_strbuf_append(sb, text);
}

/* ---- regular expressions ----------------------------------------------------------------------- */

static bool utf8_valid(const char *s, size_t n)
{
        size_t len;

        for (size_t i = 0; i < n; i += len) {
                len = ao_utf8_sequence_length((const unsigned char *) s + i, n - i);
                if (len == 0)
                        return false;
        }
        return true;
}

int schema_regex_search(OnigRegex re, const char *s, OnigMatchParam *mp)
{
        const OnigUChar *start = (const OnigUChar *) s, *end;
        size_t n = strlen(s);
        int r;

        if (!utf8_valid(s, n))
                return 0;
        end = start + n;
        r = onig_search_with_param(re, start, end, start, end, NULL, ONIG_OPTION_NONE, mp);
        if (r >= 0)
                return 1;
        if (r == ONIG_MISMATCH)
                return 0;
        return -E2BIG;
}

/* ---- formats ----------------------------------------------------------------------------------- */

static bool digits(const char *s, int n)
{
        for (int i = 0; i < n; i++)
                if (!isdigit((unsigned char) s[i]))
                        return false;
        return true;
}

static int num2(const char *s)
{
        return (s[0] - '0') * 10 + (s[1] - '0');
}

/* RFC 3339 full-date at @s; returns the characters consumed or 0. */
static size_t parse_date(const char *s)
{
        static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
        int year, month, day;

        if (!digits(s, 4) || s[4] != '-' || !digits(s + 5, 2) || s[7] != '-' || !digits(s + 8, 2))
                return 0;
        year = num2(s) * 100 + num2(s + 2);
        month = num2(s + 5);
        day = num2(s + 8);
        if (month < 1 || month > 12 || day < 1 || day > mdays[month - 1])
                return 0;
        if (month == 2 && day == 29 && !(year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)))
                return 0;
        return 10;
}

/*
 * date [Tt ] HH:MM[:SS[.frac]] [Z | ±HH:MM | ±HHMM]: RFC 3339 plus the
 * relaxed ISO 8601 forms go-openapi/strfmt's DateTime also accepts.
 */
static bool is_date_time(const char *s)
{
        size_t n = parse_date(s);

        if (n == 0 || (s[n] != 'T' && s[n] != 't' && s[n] != ' '))
                return false;
        s += n + 1;
        if (!digits(s, 2) || s[2] != ':' || !digits(s + 3, 2) || num2(s) > 23 || num2(s + 3) > 59)
                return false;
        s += 5;
        if (*s == ':') {
                if (!digits(s + 1, 2) || num2(s + 1) > 60)
                        return false;
                s += 3;
                if (*s == '.') {
                        if (!isdigit((unsigned char) s[1]))
                                return false;
                        for (s++; isdigit((unsigned char) *s); s++)
                                ;
                }
        }
        if (*s == '\0' || ((*s == 'Z' || *s == 'z') && s[1] == '\0'))
                return true;
        if (*s != '+' && *s != '-')
                return false;
        s++;
        if (!digits(s, 2) || num2(s) > 23)
                return false;
        s += 2;
        if (*s == ':')
                s++;
        return digits(s, 2) && num2(s) <= 59 && s[2] == '\0';
}

static bool is_hostname(const char *s)
{
        size_t total = strlen(s), label = 0;

        if (total == 0 || total > 255)
                return false;
        for (const char *p = s; *p; p++) {
                unsigned char ch = (unsigned char) *p;

                if (ch == '.') {
                        if (label == 0 || p[-1] == '-')
                                return false;
                        label = 0;
                        continue;
                }
                /* Bytes of non-ASCII letters are accepted, as strfmt accepts \p{L} (IDN). */
                if (!isalnum(ch) && ch != '-' && ch < 0x80)
                        return false;
                if (ch == '-' && label == 0)
                        return false;
                if (++label > 63)
                        return false;
        }
        return label > 0 && s[total - 1] != '-';
}

static bool is_email(const char *s)
{
        const char *at = strchr(s, '@');

        if (!at || at == s || at[1] == '\0' || strchr(at + 1, '@'))
                return false;
        for (const char *p = s; *p; p++)
                if ((unsigned char) *p <= ' ' || *p == '<' || *p == '>' || *p == 0x7F)
                        return false;
        return at[1] != '.' && s[strlen(s) - 1] != '.';
}

static bool is_uri(const char *s)
{
        const char *p = s;

        if (!isalpha((unsigned char) *p))
                return false;
        while (isalnum((unsigned char) *p) || *p == '+' || *p == '-' || *p == '.')
                p++;
        if (*p != ':')
                return false;
        for (; *p; p++)
                if ((unsigned char) *p <= ' ' || *p == 0x7F)
                        return false;
        return true;
}

static bool is_uuid(const char *s)
{
        for (int i = 0; i < 36; i++) {
                if (i == 8 || i == 13 || i == 18 || i == 23) {
                        if (s[i] != '-')
                                return false;
                } else if (!isxdigit((unsigned char) s[i]))
                        return false;
        }
        return s[36] == '\0';
}

/* Standard base64 with padding, as Go's base64.StdEncoding decodes it. */
static bool is_base64(const char *s)
{
        size_t n = strlen(s), pad = 0;

        if (n % 4 != 0)
                return false;
        for (size_t i = 0; i < n; i++) {
                unsigned char ch = (unsigned char) s[i];

                if (ch == '=') {
                        pad++;
                        continue;
                }
                if (pad > 0 || !(isalnum(ch) || ch == '+' || ch == '/'))
                        return false;
        }
        return pad <= 2;
}

static bool is_ip(int family, const char *s)
{
        unsigned char buf[sizeof(struct in6_addr)];

        return inet_pton(family, s, buf) == 1;
}

/* Unknown formats (and byte counts, passwords, ...) are annotations and always pass. */
static bool format_ok(const char *format, const cJSON *v)
{
        if (cJSON_IsNumber(v)) {
                double d = v->valuedouble;

                if (strcmp(format, "int32") == 0)
                        return d >= -2147483648.0 && d <= 2147483647.0;
                if (strcmp(format, "int64") == 0)
                        return d >= -9223372036854775808.0 && d < 9223372036854775808.0;
                return true;
        }
        if (!cJSON_IsString(v))
                return true;
        const char *s = v->valuestring;
        if (strcmp(format, "date-time") == 0)
                return is_date_time(s);
        if (strcmp(format, "date") == 0)
                return parse_date(s) == 10 && s[10] == '\0';
        if (strcmp(format, "email") == 0)
                return is_email(s);
        if (strcmp(format, "hostname") == 0)
                return is_hostname(s);
        if (strcmp(format, "ipv4") == 0)
                return is_ip(AF_INET, s);
        if (strcmp(format, "ipv6") == 0)
                return is_ip(AF_INET6, s);
        if (strcmp(format, "uri") == 0)
                return is_uri(s);
        if (strcmp(format, "uuid") == 0)
                return is_uuid(s);
        if (strcmp(format, "byte") == 0)
                return is_base64(s);
        return true;
}

/* ---- keywords ---------------------------------------------------------------------------------- */

static void validate(struct vctx *c, const cJSON *s, const cJSON *v, int depth);

static bool is_integer(double d)
{
        return isfinite(d) && floor(d) == d;
}

static bool type_matches(const char *t, const cJSON *v)
{
        if (strcmp(t, "string") == 0)
                return cJSON_IsString(v);
        if (strcmp(t, "number") == 0)
                return cJSON_IsNumber(v);
        if (strcmp(t, "integer") == 0)
                return cJSON_IsNumber(v) && is_integer(v->valuedouble);
        if (strcmp(t, "boolean") == 0)
                return cJSON_IsBool(v);
        if (strcmp(t, "object") == 0)
                return cJSON_IsObject(v);
        if (strcmp(t, "array") == 0)
                return cJSON_IsArray(v);
        return strcmp(t, "null") == 0 && cJSON_IsNull(v);
}

static const char *type_article(const char *t)
{
        if (strcmp(t, "null") == 0)
                return "";
        return strchr("aeiou", t[0]) ? "an " : "a ";
}

/* Returns false (after reporting) when @v has none of the types. */
static bool check_type(struct vctx *c, const cJSON *type, const cJSON *v)
{
        struct ao_strbuf want = {0};
        const cJSON *t;

        if (cJSON_IsString(type)) {
                if (type_matches(type->valuestring, v))
                        return true;
                fail(c, "type", "must be %s%s", type_article(type->valuestring), type->valuestring);
                return false;
        }
        cJSON_ArrayForEach(t, type)
        {
                if (type_matches(t->valuestring, v))
                        return true;
        }
        cJSON_ArrayForEach(t, type)
        {
                ao_strbuf_appendf(&want, "%s%s%s",
                                  t == type->child ? ""
                                  : t->next        ? ", "
                                                   : " or ",
                                  type_article(t->valuestring), t->valuestring);
        }
        fail(c, "type", "must be %s", ao_strbuf_str(&want));
        ao_strbuf_done(&want);
        return false;
}

/*
 * Deep equality (object key order does not matter). cJSON_Compare looks each
 * key up linearly, so collections of different sizes are told apart first
 * and equal sizes are charged to the budget.
 */
static bool values_equal(struct vctx *c, const cJSON *a, const cJSON *b)
{
        size_t n;

        if ((a->type & 0xFF) != (b->type & 0xFF))
                return false;
        if (cJSON_IsArray(a) || cJSON_IsObject(a)) {
                n = (size_t) cJSON_GetArraySize(a);
                if (n != (size_t) cJSON_GetArraySize(b) || !charge(c, n * n))
                        return false;
        }
        return cJSON_Compare(a, b, true);
}

static void check_enum(struct vctx *c, const cJSON *list, const cJSON *v)
{
        struct ao_strbuf text = {0};
        const cJSON *e;

        cJSON_ArrayForEach(e, list)
        {
                if (!charge(c, 1))
                        return;
                if (values_equal(c, e, v))
                        return;
        }
        cJSON_ArrayForEach(e, list)
        {
                if (text.len > MAX_VALUES_TEXT) {
                        ao_strbuf_append(&text, ", ...");
                        break;
                }
                if (e != list->child)
                        ao_strbuf_append(&text, ", ");
                append_value(&text, e);
        }
        fail(c, "enum", "must be one of %s", ao_strbuf_str(&text));
        ao_strbuf_done(&text);
}

static void check_const(struct vctx *c, const cJSON *want, const cJSON *v)
{
        struct ao_strbuf text = {0};

        if (values_equal(c, want, v) || c->aborted)
                return;
        append_value(&text, want);
        fail(c, "const", "must be equal to %s", ao_strbuf_str(&text));
        ao_strbuf_done(&text);
}

static void check_bound(struct vctx *c, const cJSON *s, double x, bool lower)
{
        const char *kw = lower ? "minimum" : "maximum",
                   *xkw = lower ? "exclusiveMinimum" : "exclusiveMaximum";
        const cJSON *bound = get(s, kw), *excl = get(s, xkw);
        char buf[32];

        /* OpenAPI 3.0: a boolean next to minimum/maximum; JSON Schema draft 6+: the bound itself. */
        if (cJSON_IsNumber(bound)) {
                double b = bound->valuedouble;
                bool strict = cJSON_IsTrue(excl);
                bool ok = lower ? (strict ? x > b : x >= b) : (strict ? x < b : x <= b);

                if (!ok)
                        fail(c, strict ? xkw : kw, "must be %s%s %s", lower ? ">" : "<", strict ? "" : "=",
                             fmt_number(buf, b));
        }
        if (cJSON_IsNumber(excl)) {
                double b = excl->valuedouble;

                if (lower ? !(x > b) : !(x < b))
                        fail(c, xkw, "must be %s %s", lower ? ">" : "<", fmt_number(buf, b));
        }
}

/* Floating-point tolerant: 0.3 is a multiple of 0.1 although 0.3/0.1 is 2.9999999999999996. */
static bool is_multiple(double x, double m)
{
        double q = x / m;

        if (!isfinite(q))
                return false;
        return fabs(q - nearbyint(q)) <= 1e-9 * fmax(1.0, fabs(q));
}

static void check_number(struct vctx *c, const cJSON *s, const cJSON *v)
{
        const cJSON *m = get(s, "multipleOf");
        double x = v->valuedouble;
        char buf[32];

        check_bound(c, s, x, true);
        check_bound(c, s, x, false);
        if (cJSON_IsNumber(m) && !is_multiple(x, m->valuedouble))
                fail(c, "multipleOf", "must be a multiple of %s", fmt_number(buf, m->valuedouble));
}

static size_t utf8_length(const char *s)
{
        size_t n = 0;

        for (; *s; s++)
                if (((unsigned char) *s & 0xC0) != 0x80)
                        n++;
        return n;
}

static void check_string(struct vctx *c, const cJSON *s, const cJSON *v)
{
        const cJSON *min = get(s, "minLength"), *max = get(s, "maxLength"), *pattern = get(s, "pattern");
        size_t len = utf8_length(v->valuestring);
        OnigRegex re;
        int r;

        if (cJSON_IsNumber(min) && (double) len < min->valuedouble)
                fail(c, "minLength", "must be at least %.0f characters long", min->valuedouble);
        if (cJSON_IsNumber(max) && (double) len > max->valuedouble)
                fail(c, "maxLength", "must be at most %.0f characters long", max->valuedouble);
        if (cJSON_IsString(pattern) && (re = schema_regex_find(c->doc, pattern)) &&
            charge(c, 1 + strlen(v->valuestring) / 32)) {
                r = schema_regex_search(re, v->valuestring, c->mp);
                if (r == 0)
                        fail(c, "pattern", "must match '%s'", pattern->valuestring);
                else if (r < 0)
                        fail(c, "pattern", "matching '%s' takes too long", pattern->valuestring);
        }
}

struct item_text {
        char *text; /* owned: canonical JSON */
        size_t index;
};

static int compare_item_text(const void *a, const void *b)
{
        const struct item_text *x = a, *y = b;
        int r = strcmp(x->text, y->text);

        if (r != 0)
                return r;
        return x->index < y->index ? -1 : x->index > y->index;
}

/* Sorting canonical texts finds duplicates in O(n log n), where pairwise comparison is O(n²). */
static void check_unique(struct vctx *c, const cJSON *v)
{
        size_t n = (size_t) cJSON_GetArraySize(v), i = 0, first = SIZE_MAX, second = SIZE_MAX;
        struct item_text *items;
        const cJSON *e;

        if (n < 2 || !charge(c, n))
                return;
        items = ao_xcalloc(n, sizeof(*items));
        cJSON_ArrayForEach(e, v)
        {
                items[i].text = ao_json_canonical(e);
                items[i].index = i;
                i++;
        }
        qsort(items, n, sizeof(*items), compare_item_text);
        /* Report the pair whose later item comes first in the document. */
        for (i = 1; i < n; i++)
                if (strcmp(items[i - 1].text, items[i].text) == 0 && items[i].index < second) {
                        size_t j = i - 1;

                        while (j > 0 && strcmp(items[j - 1].text, items[i].text) == 0)
                                j--;
                        first = items[j].index;
                        second = items[i].index;
                }
        for (i = 0; i < n; i++)
                free(items[i].text);
        free(items);
        if (second != SIZE_MAX)
                fail(c, "uniqueItems", "must not contain duplicates ([%zu] and [%zu] are equal)", first,
                     second);
}

/* Every item of @v from @first on against @sub (list validation, or the items past a tuple). */
static void check_items_from(struct vctx *c, const cJSON *sub, const cJSON *first, size_t index, int depth)
{
        size_t old;

        for (const cJSON *e = first; e && !stopped(c); e = e->next) {
                old = path_push_index(c, index++);
                validate(c, sub, e, depth + 1);
                path_pop(c, old);
        }
}

/*
 * Tuple validation (JSON Schema draft 4): item i against items[i]; the
 * items past the tuple against additionalItems when it is a schema,
 * refused when it is false, unchecked when it is true or absent. An empty
 * list is no tuple (the draft 4 meta-schema requires one schema at least,
 * and go-openapi then ignores additionalItems), so it checks nothing.
 */
static void check_tuple(struct vctx *c, const cJSON *s, const cJSON *tuple, const cJSON *v, int depth)
{
        const cJSON *additional = get(s, "additionalItems"), *sub = tuple->child, *e = v->child;
        size_t i = 0, old;

        for (; sub && e && !stopped(c); sub = sub->next, e = e->next) {
                old = path_push_index(c, i++);
                validate(c, sub, e, depth + 1);
                path_pop(c, old);
        }
        if (!e || sub)
                return;
        if (cJSON_IsFalse(additional))
                fail(c, "additionalItems", "must have at most %zu items, has %d", i, cJSON_GetArraySize(v));
        else if (cJSON_IsObject(additional))
                check_items_from(c, additional, e, i, depth);
}

static void check_array(struct vctx *c, const cJSON *s, const cJSON *v, int depth)
{
        const cJSON *min = get(s, "minItems"), *max = get(s, "maxItems"), *items = get(s, "items");
        size_t n = (size_t) cJSON_GetArraySize(v);

        if (cJSON_IsNumber(min) && (double) n < min->valuedouble)
                fail(c, "minItems", "must have at least %.0f items", min->valuedouble);
        if (cJSON_IsNumber(max) && (double) n > max->valuedouble)
                fail(c, "maxItems", "must have at most %.0f items", max->valuedouble);
        if (cJSON_IsTrue(get(s, "uniqueItems")))
                check_unique(c, v);
        /* With a single schema (or none), additionalItems has no say, as in draft 4. */
        if (cJSON_IsObject(items))
                check_items_from(c, items, v->child, 0, depth);
        else if (cJSON_IsArray(items) && items->child)
                check_tuple(c, s, items, v, depth);
}

static bool pattern_properties(struct vctx *c, const cJSON *patterns, const cJSON *m, int depth)
{
        const cJSON *p;
        bool matched = false;
        OnigRegex re;

        cJSON_ArrayForEach(p, patterns)
        {
                re = schema_regex_find(c->doc, p);
                if (!re || !charge(c, 1 + strlen(m->string) / 32) ||
                    schema_regex_search(re, m->string, c->mp) != 1)
                        continue;
                matched = true;
                validate(c, p, m, depth + 1);
        }
        return matched;
}

static void check_members(struct vctx *c, const cJSON *s, const cJSON *v, int depth)
{
        const cJSON *props = get(s, "properties"), *patterns = get(s, "patternProperties");
        const cJSON *additional = get(s, "additionalProperties"), *m, *sub;
        bool matched;
        size_t old;

        cJSON_ArrayForEach(m, v)
        {
                if (stopped(c))
                        return;
                old = path_push_key(c, m->string);
                sub = props ? get(props, m->string) : NULL;
                matched = sub != NULL;
                if (sub)
                        validate(c, sub, m, depth + 1);
                if (patterns && pattern_properties(c, patterns, m, depth))
                        matched = true;
                if (!matched && cJSON_IsObject(additional))
                        validate(c, additional, m, depth + 1);
                path_pop(c, old);
                if (!matched && cJSON_IsFalse(additional))
                        fail(c, "additionalProperties", "'%s' is not allowed", m->string);
        }
}

static void check_object(struct vctx *c, const cJSON *s, const cJSON *v, int depth)
{
        const cJSON *min = get(s, "minProperties"), *max = get(s, "maxProperties"), *e;
        size_t n = (size_t) cJSON_GetArraySize(v);

        cJSON_ArrayForEach(e, get(s, "required"))
        {
                if (cJSON_IsString(e) && !get(v, e->valuestring))
                        fail(c, "required", "'%s' is required", e->valuestring);
        }
        if (cJSON_IsNumber(min) && (double) n < min->valuedouble)
                fail(c, "minProperties", "must have at least %.0f properties", min->valuedouble);
        if (cJSON_IsNumber(max) && (double) n > max->valuedouble)
                fail(c, "maxProperties", "must have at most %.0f properties", max->valuedouble);
        check_members(c, s, v, depth);
}

/* Does @v match @s? Failures inside are counted, not reported. */
static bool matches(struct vctx *c, const cJSON *s, const cJSON *v, int depth)
{
        unsigned saved = c->quiet_failures;
        bool ok;

        c->quiet++;
        c->quiet_failures = 0;
        validate(c, s, v, depth + 1);
        ok = c->quiet_failures == 0 && !c->aborted;
        c->quiet--;
        c->quiet_failures = saved;
        return ok;
}

static void check_combinators(struct vctx *c, const cJSON *s, const cJSON *v, int depth)
{
        const cJSON *all = get(s, "allOf"), *any = get(s, "anyOf"), *one = get(s, "oneOf"),
                    *not = get(s, "not");
        const cJSON *sub;
        unsigned n;

        cJSON_ArrayForEach(sub, all) validate(c, sub, v, depth + 1);
        if (any) {
                n = 0;
                cJSON_ArrayForEach(sub, any)
                {
                        if (matches(c, sub, v, depth)) {
                                n++;
                                break;
                        }
                }
                if (n == 0)
                        fail(c, "anyOf", "must match at least one of the schemas");
        }
        if (one) {
                n = 0;
                cJSON_ArrayForEach(sub, one)
                {
                        if (matches(c, sub, v, depth) && ++n > 1)
                                break;
                }
                if (n != 1)
                        fail(c, "oneOf", "must match exactly one of the schemas, matches %s",
                             n == 0 ? "none" : "more than one");
        }
        if (not &&matches(c, not, v, depth))
                fail(c, "not", "must not match the schema");
}

/*
 * Validate @v against the $ref's @target, unless that target is already
 * being validated for this very value further up: such a loop never gets
 * to a smaller value, and with two branches (anyOf: [$ref: a, $ref: a]) it
 * would double the work at every level until the step budget runs out.
 */
static void follow_ref(struct vctx *c, const char *ref, const cJSON *target, const cJSON *v, int depth)
{
        for (size_t i = 0; i < c->n_refs; i++)
                if (c->ref_schema[i] == target && c->ref_value[i] == v) {
                        fail(c, "$ref", "'%s' leads back to itself for the same value", ref);
                        return;
                }
        if (c->n_refs == AO_ARRAY_SIZE(c->ref_schema)) {
                fail(c, NULL, "nested more than %d levels deep", AO_SCHEMA_MAX_DEPTH);
                return;
        }
        c->ref_schema[c->n_refs] = target;
        c->ref_value[c->n_refs++] = v;
        validate(c, target, v, depth + 1);
        c->n_refs--;
}

static void validate(struct vctx *c, const cJSON *s, const cJSON *v, int depth)
{
        const cJSON *ref, *type, *e, *format;

        if (stopped(c))
                return;
        if (!charge(c, 1))
                return;
        if (depth > AO_SCHEMA_MAX_DEPTH) {
                fail(c, NULL, "nested more than %d levels deep", AO_SCHEMA_MAX_DEPTH);
                return;
        }
        /* As in JSON Schema draft 4 (and go-openapi), keywords next to $ref are ignored. */
        ref = get(s, "$ref");
        if (cJSON_IsString(ref)) {
                const cJSON *target = schema_ref_target(c->doc, ref);

                if (target)
                        follow_ref(c, ref->valuestring, target, v, depth);
                return;
        }
        if (cJSON_IsNull(v) && cJSON_IsTrue(get(s, "nullable")))
                return;
        type = get(s, "type");
        if (type && !check_type(c, type, v))
                return;
        if ((e = get(s, "enum")))
                check_enum(c, e, v);
        if ((e = get(s, "const")))
                check_const(c, e, v);
        format = get(s, "format");
        if (cJSON_IsString(format) && !format_ok(format->valuestring, v))
                fail(c, "format", "must be a valid %s", format->valuestring);
        if (cJSON_IsNumber(v))
                check_number(c, s, v);
        else if (cJSON_IsString(v))
                check_string(c, s, v);
        else if (cJSON_IsArray(v))
                check_array(c, s, v, depth);
        else if (cJSON_IsObject(v))
                check_object(c, s, v, depth);
        check_combinators(c, s, v, depth);
}

int ao_schema_validate(const struct ao_schema *s, enum ao_schema_kind kind, const char *root_name,
                       const cJSON *value, char **ret_errors)
{
        cJSON null_value = {.type = cJSON_NULL};
        struct vctx c = {0};

        if (!ao_schema_has(s, kind)) {
                if (ret_errors)
                        *ret_errors = NULL;
                return 0;
        }
        c.doc = &s->docs[kind];
        c.mp = onig_new_match_param();
        if (!c.mp)
                return -ENOMEM;
        onig_initialize_match_param(c.mp);
        (void) onig_set_retry_limit_in_match_of_match_param(c.mp, AO_SCHEMA_REGEX_RETRY_MATCH);
        (void) onig_set_retry_limit_in_search_of_match_param(c.mp, AO_SCHEMA_REGEX_RETRY_SEARCH);
        ao_strbuf_append(&c.path, root_name ? root_name : "");
        c.root_len = c.path.len;

        validate(&c, c.doc->root, value ? value : &null_value, 0);

        onig_free_match_param(c.mp);
        ao_strbuf_done(&c.path);
        if (c.n_errors == 0) {
                if (ret_errors)
                        *ret_errors = NULL;
                return 0;
        }
        /* Each line ends in its NUL and the buffer keeps one more: the list is double-NUL-terminated. */
        if (ret_errors)
                *ret_errors = ao_strbuf_steal(&c.out);
        ao_strbuf_done(&c.out);
        return -EINVAL;
}
