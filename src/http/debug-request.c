/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The debug API's request: format suffix, route, module name and query
 * flags. Paths arrive normalized by h2o ("." and ".." resolved, %XX of
 * unreserved characters and '/' decoded), so a module name is one segment
 * that holds no '/'. Query values are percent-decoded here; a bad escape or
 * a global= that is not a boolean is refused rather than guessed at.
 */
#include "ao/debug-request.h"

#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/quote.h"
#include "ao/strbuf.h"

enum ao_http_format ao_http_format_from_path(const char *path, size_t *len)
{
        static const struct {
                const char *suffix;
                enum ao_http_format format;
        } suffixes[] = {
            {".json", AO_HTTP_FORMAT_JSON},
            {".yaml", AO_HTTP_FORMAT_YAML},
            {".text", AO_HTTP_FORMAT_TEXT},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(suffixes); i++) {
                size_t n = strlen(suffixes[i].suffix);
                /* Only a suffix of the last segment, and not the whole segment ("/x/.json" stays). */
                if (*len > n + 1 && memcmp(path + *len - n, suffixes[i].suffix, n) == 0 &&
                    path[*len - n - 1] != '/') {
                        *len -= n;
                        return suffixes[i].format;
                }
        }
        return AO_HTTP_FORMAT_DEFAULT;
}

/* --- the path -------------------------------------------------------------- */

static const struct {
        const char *path;
        enum ao_debug_route route;
} fixed_routes[] = {
    {"/status/converge", AO_DEBUG_CONVERGE},
    {"/queue/list", AO_DEBUG_QUEUE_LIST},
    {"/queue/main", AO_DEBUG_QUEUE_MAIN},
    {"/global/values", AO_DEBUG_GLOBAL_VALUES},
    {"/global/config", AO_DEBUG_GLOBAL_CONFIG},
    {"/global/patches", AO_DEBUG_GLOBAL_PATCHES},
    {"/global/snapshots", AO_DEBUG_GLOBAL_SNAPSHOTS},
    {"/module/list", AO_DEBUG_MODULE_LIST},
    {"/module/resource-monitor", AO_DEBUG_MODULE_RESOURCE_MONITOR},
    {"/global/list", AO_DEBUG_GLOBAL_LIST},
    {"/config/list", AO_DEBUG_CONFIG_LIST},
    {"/config/set", AO_DEBUG_CONFIG_SET},
};

static const struct {
        const char *what;
        enum ao_debug_route route;
} module_routes[] = {
    {"values", AO_DEBUG_MODULE_VALUES},   {"config", AO_DEBUG_MODULE_CONFIG},
    {"patches", AO_DEBUG_MODULE_PATCHES}, {"snapshots", AO_DEBUG_MODULE_SNAPSHOTS},
    {"render", AO_DEBUG_MODULE_RENDER},
};

static int unknown_path(struct ao_error *reterr)
{
        return ao_error_set(reterr, -ENOENT, "unknown path");
}

/* "/module/<name>/<what>": the name is one non-empty segment. */
static int parse_module_path(const char *rest, struct ao_debug_request *req, struct ao_error *reterr)
{
        const char *slash = strchr(rest, '/');
        size_t len = slash ? (size_t) (slash - rest) : 0;

        if (len == 0 || len > AO_DEBUG_MODULE_NAME_MAX)
                return unknown_path(reterr);
        for (size_t i = 0; i < AO_ARRAY_SIZE(module_routes); i++) {
                if (strcmp(slash + 1, module_routes[i].what) != 0)
                        continue;
                memcpy(req->module, rest, len);
                req->module[len] = '\0';
                req->route = module_routes[i].route;
                return 0;
        }
        return unknown_path(reterr);
}

static int parse_path(const char *path, struct ao_debug_request *req, struct ao_error *reterr)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(fixed_routes); i++) {
                if (strcmp(path, fixed_routes[i].path) == 0) {
                        req->route = fixed_routes[i].route;
                        return 0;
                }
        }
        if (strncmp(path, "/module/", 8) == 0)
                return parse_module_path(path + 8, req, reterr);
        return unknown_path(reterr);
}

/* --- the query ------------------------------------------------------------- */

static int hex_digit(char c)
{
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        if (c >= 'A' && c <= 'F')
                return c - 'A' + 10;
        return -1;
}

/* The byte "XX" of a %XX stands for; -1 for no hex pair, 0 for %00 (a NUL would cut the C string short). */
static int escaped_byte(const char *xx)
{
        int hi = hex_digit(xx[0]), lo = hi < 0 ? -1 : hex_digit(xx[1]);
        return lo < 0 ? -1 : hi * 16 + lo;
}

/* url.QueryUnescape of @len bytes: "%XX" and '+' for a space. A malloc'd string, or NULL for a bad escape. */
static char *query_unescape(const char *s, size_t len)
{
        char *out = ao_xmalloc(len + 1), *o = out;

        for (size_t i = 0; i < len; i++) {
                if (s[i] == '+') {
                        *o++ = ' ';
                } else if (s[i] != '%') {
                        *o++ = s[i];
                } else if (i + 2 < len && escaped_byte(s + i + 1) > 0) {
                        *o++ = (char) escaped_byte(s + i + 1);
                        i += 2;
                } else {
                        free(out);
                        return NULL;
                }
        }
        *o = '\0';
        return out;
}

/* Query text is the client's: quoted with control bytes escaped, and cut short, so messages stay one line. */
static int query_error(struct ao_error *reterr, const char *what, const char *text, size_t len)
{
        _cleanup_(ao_strbuf_done) struct ao_strbuf sb = {0};

        ao_quote_text(&sb, text, len, 64);
        return ao_error_set(reterr, -EINVAL, "query: %s '%s'", what, ao_strbuf_str(&sb));
}

/* strconv.ParseBool's spellings. */
static int parse_bool(const char *s, bool *ret)
{
        static const char *const yes[] = {"1", "t", "T", "true", "TRUE", "True"};
        static const char *const no[] = {"0", "f", "F", "false", "FALSE", "False"};

        for (size_t i = 0; i < AO_ARRAY_SIZE(yes); i++) {
                if (strcmp(s, yes[i]) == 0 || strcmp(s, no[i]) == 0) {
                        *ret = strcmp(s, yes[i]) == 0;
                        return 0;
                }
        }
        return -EINVAL;
}

/* The boolean query keys this API reads, each a flag of the request; the first of repeated keys counts. */
static bool *bool_key(struct ao_debug_request *req, const char *key, unsigned *bit)
{
        static const char *const keys[] = {"global", "showEmpty", "debug", "diff", "detail"};
        bool *const flags[] = {&req->global, &req->show_empty, &req->debug, &req->diff, &req->detail};

        for (size_t i = 0; i < AO_ARRAY_SIZE(keys); i++) {
                if (strcmp(key, keys[i]) == 0) {
                        *bit = 1u << i;
                        return flags[i];
                }
        }
        return NULL;
}

/* Bits of the keys seen already, past those of bool_key(). */
enum {
        SEEN_OUTPUT = 1 << 8,
        SEEN_MODULE = 1 << 9,
};

static int apply_pair(const char *key, const char *value, unsigned *seen, struct ao_debug_request *req,
                      struct ao_error *reterr)
{
        unsigned bit = 0;
        bool *flag = bool_key(req, key, &bit);

        if (flag && !(*seen & bit)) {
                *seen |= bit;
                if (parse_bool(value, flag) < 0) {
                        _cleanup_free_ char *what = ao_xasprintf("%s is not a boolean:", key);
                        return query_error(reterr, what, value, strlen(value));
                }
        } else if (strcmp(key, "output") == 0 && !(*seen & SEEN_OUTPUT)) {
                *seen |= SEEN_OUTPUT;
                req->output_json = strcmp(value, "json") == 0;
        } else if (strcmp(key, "module") == 0 && !(*seen & SEEN_MODULE)) {
                *seen |= SEEN_MODULE;
                if (strlen(value) > AO_DEBUG_MODULE_NAME_MAX)
                        return query_error(reterr, "module name too long:", value, strlen(value));
                strcpy(req->only_module, value);
        }
        return 0;
}

/* One "key=value" (or "key") of @len bytes. */
static int parse_pair(const char *s, size_t len, unsigned *seen, struct ao_debug_request *req,
                      struct ao_error *reterr)
{
        const char *eq = memchr(s, '=', len);
        size_t key_len = eq ? (size_t) (eq - s) : len;
        _cleanup_free_ char *key = query_unescape(s, key_len);
        _cleanup_free_ char *value = eq ? query_unescape(eq + 1, len - key_len - 1) : ao_xstrdup("");

        if (!key || !value)
                return query_error(reterr, "invalid %-escape in", s, len);
        return apply_pair(key, value, seen, req, reterr);
}

static int parse_query(const char *query, struct ao_debug_request *req, struct ao_error *reterr)
{
        unsigned seen = 0;

        for (const char *p = query; *p;) {
                size_t len = strcspn(p, "&");
                if (len > 0) {
                        int r = parse_pair(p, len, &seen, req, reterr);
                        if (r < 0)
                                return r;
                }
                p += len;
                if (*p == '&')
                        p++;
        }
        return 0;
}

bool ao_debug_route_is_post(enum ao_debug_route route)
{
        return route == AO_DEBUG_CONFIG_SET;
}

int ao_debug_form_get(const char *form, const char *key, char **ret, struct ao_error *reterr)
{
        *ret = NULL;
        for (const char *p = form; *p;) {
                size_t len = strcspn(p, "&");
                const char *eq = memchr(p, '=', len);
                size_t key_len = eq ? (size_t) (eq - p) : len;
                _cleanup_free_ char *k = query_unescape(p, key_len);
                if (!k)
                        return query_error(reterr, "invalid %-escape in", p, len);
                if (strcmp(k, key) == 0) {
                        *ret = eq ? query_unescape(eq + 1, len - key_len - 1) : ao_xstrdup("");
                        return *ret ? 1 : query_error(reterr, "invalid %-escape in", p, len);
                }
                p += len;
                if (*p == '&')
                        p++;
        }
        return 0;
}

int ao_debug_request_parse(const char *path, const char *query, struct ao_debug_request *ret,
                           struct ao_error *reterr)
{
        struct ao_debug_request req = {.route = _AO_DEBUG_ROUTE_INVALID};
        int r = parse_path(path, &req, reterr);

        if (r >= 0)
                r = parse_query(query ? query : "", &req, reterr);
        if (r < 0)
                return r;
        *ret = req;
        return 0;
}
