/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/yaml.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <search.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>
#include <yaml.h>

#include "ao/alloc.h"
#include "ao/input.h"
#include "ao/quote.h"
#include "ao/strbuf.h"

#include "yaml-internal.h"

/*
 * libyaml events → cJSON, built iteratively on an explicit stack of open
 * collections (at most max_depth), so nesting never grows the C stack.
 *
 * Plain scalars resolve as go-yaml v2 resolves them (gopkg.in/yaml.v2
 * resolve.go), which is what sigs.k8s.io/yaml, kubectl, Helm and the Go
 * addon-operator use:
 *   ""  ~  null Null NULL                                   → null
 *   y Y yes Yes YES true True TRUE on On ON                 → true
 *   n N no No NO false False FALSE off Off OFF              → false
 *   .inf .Inf .INF +.inf +.Inf +.INF / -.inf -.Inf -.INF    → ±infinity
 *   .nan .NaN .NAN                                          → NaN
 *   starting with a digit or sign, '_' removed first:
 *     strconv.ParseInt/ParseUint base 0: 42 -7 +3 0x1F 0o17 0b101 and
 *     YAML 1.1 octal 017 (= 15); up to 2^64-1
 *     else [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?: 1.5 -2e3 1.
 *     08 (not octal, so the float 8); overflow to infinity stays a string
 *   starting with '.': Go float syntax, '_' only between digits: .5 .5e3
 *   anything else (timestamps, 1:20 sexagesimal, 0x with nothing) → string
 * Quoted and block scalars are strings. Explicit !!str !!int !!float !!bool
 * !!null !!map !!seq are honoured (also on quoted scalars, as YAML says);
 * !!float accepts integers, any other mismatch is an error. "!" alone means
 * string. Every other tag (local !foo, !!binary, !!timestamp...) is ignored
 * and the node resolved as if untagged: go-yaml would keep such a scalar a
 * string, but a tag nobody here interprets should not change the value.
 *
 * Keys are strings in JSON: null, booleans and numbers become "null",
 * "true", "1" (integers exactly, floats like ao_json_canonical, infinities
 * and NaN as ".inf" "-.inf" ".nan" as sigs.k8s.io/yaml writes them); so
 * "on:" is the key "true", as in Kubernetes. A mapping or sequence as a key
 * is an error. Two keys with the same string form are a duplicate.
 *
 * Merge keys: a plain '<<' (or !!merge '<<') takes a mapping, an alias of
 * one, or a sequence of those. Keys written in the mapping win over merged
 * ones, earlier merged mappings over later ones (YAML merge spec; go-yaml v2
 * lets a later '<<' override explicit keys written before it, which is a bug).
 *
 * Aliases are copied (cJSON_Duplicate) once the anchored node is complete;
 * an alias inside its own anchor's node is an error. Before copying, the
 * anchor's size, string bytes and height are checked against the limits, so
 * a billion laughs fails before allocating anything big.
 */

/* go-yaml v2 decode.go: the share of nodes that may come from aliases slides from 99% to 10%. */
#define ALIAS_RATIO_RANGE_LOW  400000.0
#define ALIAS_RATIO_RANGE_HIGH 4000000.0

#define MERGE_TAG "tag:yaml.org,2002:merge"

struct limits {
        size_t max_nodes;
        size_t max_alias_bytes;
        unsigned max_depth;
};

static const struct limits default_limits = {
    .max_nodes = AO_YAML_MAX_NODES,
    .max_alias_bytes = AO_YAML_MAX_ALIAS_BYTES,
    .max_depth = AO_YAML_MAX_DEPTH,
};

enum kind {
        KIND_NULL,
        KIND_BOOL,
        KIND_INT,
        KIND_UINT,
        KIND_FLOAT,
        KIND_STRING,
};

/* A resolved scalar; only the field of its kind is meaningful. */
struct scalar {
        enum kind kind;
        bool b;
        int64_t i;
        uint64_t u;
        double d;
        const char *s; /* borrowed from the event, KIND_STRING */
};

enum tag {
        TAG_NONE, /* untagged, or a tag we do not interpret */
        TAG_NONSPECIFIC,
        TAG_STR,
        TAG_NULL,
        TAG_BOOL,
        TAG_INT,
        TAG_FLOAT,
        TAG_MAP,
        TAG_SEQ,
        TAG_MERGE,
};

static const struct {
        const char *uri;
        const char *name;
} known_tags[] = {
    [TAG_STR] = {YAML_STR_TAG, "!!str"},       [TAG_NULL] = {YAML_NULL_TAG, "!!null"},
    [TAG_BOOL] = {YAML_BOOL_TAG, "!!bool"},    [TAG_INT] = {YAML_INT_TAG, "!!int"},
    [TAG_FLOAT] = {YAML_FLOAT_TAG, "!!float"}, [TAG_MAP] = {YAML_MAP_TAG, "!!map"},
    [TAG_SEQ] = {YAML_SEQ_TAG, "!!seq"},       [TAG_MERGE] = {MERGE_TAG, "!!merge"},
};

/* The plain scalars go-yaml v2 looks up by exact spelling (resolve.go resolveMapList). */
static const struct {
        const char *word;
        enum kind kind;
        int value; /* bool: 0/1; float: +1 inf, -1 -inf, 0 NaN */
} special_words[] = {
    {"y", KIND_BOOL, 1},       {"Y", KIND_BOOL, 1},       {"yes", KIND_BOOL, 1},    {"Yes", KIND_BOOL, 1},
    {"YES", KIND_BOOL, 1},     {"true", KIND_BOOL, 1},    {"True", KIND_BOOL, 1},   {"TRUE", KIND_BOOL, 1},
    {"on", KIND_BOOL, 1},      {"On", KIND_BOOL, 1},      {"ON", KIND_BOOL, 1},     {"n", KIND_BOOL, 0},
    {"N", KIND_BOOL, 0},       {"no", KIND_BOOL, 0},      {"No", KIND_BOOL, 0},     {"NO", KIND_BOOL, 0},
    {"false", KIND_BOOL, 0},   {"False", KIND_BOOL, 0},   {"FALSE", KIND_BOOL, 0},  {"off", KIND_BOOL, 0},
    {"Off", KIND_BOOL, 0},     {"OFF", KIND_BOOL, 0},     {"~", KIND_NULL, 0},      {"null", KIND_NULL, 0},
    {"Null", KIND_NULL, 0},    {"NULL", KIND_NULL, 0},    {".nan", KIND_FLOAT, 0},  {".NaN", KIND_FLOAT, 0},
    {".NAN", KIND_FLOAT, 0},   {".inf", KIND_FLOAT, 1},   {".Inf", KIND_FLOAT, 1},  {".INF", KIND_FLOAT, 1},
    {"+.inf", KIND_FLOAT, 1},  {"+.Inf", KIND_FLOAT, 1},  {"+.INF", KIND_FLOAT, 1}, {"-.inf", KIND_FLOAT, -1},
    {"-.Inf", KIND_FLOAT, -1}, {"-.INF", KIND_FLOAT, -1},
};

struct anchor {
        char *name;        /* owned */
        const cJSON *node; /* borrowed (tree or graveyard, both live until the end); NULL while open */
        size_t nodes;      /* what one copy adds to the counters */
        size_t bytes;
        unsigned height; /* collection levels in the node, 0 for a scalar */
        unsigned gen;    /* bumped at each (re)definition of the name */
};

struct merge_source {
        const cJSON *node; /* borrowed: an anchored node or one in the graveyard */
        yaml_mark_t mark;
};

/* One open mapping or sequence. */
struct frame {
        cJSON *node;           /* borrowed: owned by the parent, loader.root or loader.graveyard */
        yaml_mark_t mark;      /* where it starts */
        struct anchor *anchor; /* borrowed from loader.anchors: defined on this node, or NULL */
        unsigned anchor_gen;
        size_t nodes_at_start;
        size_t bytes_at_start;
        unsigned height;  /* 1 + the height of the deepest child so far */
        bool merge_value; /* the value of its parent's '<<' */
        /* Mappings only. */
        void *keys;                   /* tsearch tree of owned strings: keys written or merged so far */
        const char *key;              /* borrowed from keys: the key whose value comes next */
        bool merge_key;               /* the value coming next is a '<<' one */
        struct merge_source *sources; /* owned array, in order of precedence */
        size_t n_sources;
};

struct loader {
        const char *filename; /* borrowed */
        const char *text;     /* borrowed: the input, to place reader errors */
        size_t len;
        struct limits limits;
        struct ao_error *reterr; /* borrowed */
        struct frame *frames;    /* owned, limits.max_depth entries */
        unsigned n_frames;
        cJSON *root;                         /* owned */
        cJSON *graveyard;                    /* owned array: nodes alive only for anchors and merge keys */
        void *anchors;                       /* tsearch tree of owned struct anchor */
        size_t n_nodes, n_bytes;             /* every node and string byte created */
        size_t n_alias_nodes, n_alias_bytes; /* the part created by copying */
        cJSON *docs;                         /* owned: ao_yaml_load_stream()'s documents; NULL for one */
};

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

/* A user string for an error message: escaped, cut to about 60 bytes. */
static const char *describe(char *buf, size_t size, const char *s)
{
        struct ao_strbuf sb = {0};
        ao_quote_text(&sb, s, strlen(s), 60);
        (void) snprintf(buf, size, "%s", ao_strbuf_str(&sb));
        ao_strbuf_done(&sb);
        return buf;
}

static int fail(struct loader *l, int code, const yaml_mark_t *mark, const char *fmt, ...) _printf_(4, 5);
static int fail(struct loader *l, int code, const yaml_mark_t *mark, const char *fmt, ...)
{
        char msg[AO_ERROR_MSG_MAX];
        va_list ap;
        va_start(ap, fmt);
        (void) vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        return ao_error_set(l->reterr, code, "%s:%zu:%zu: %s", l->filename, mark->line + 1, mark->column + 1,
                            msg);
}

static int oom(struct loader *l)
{
        return ao_error_set(l->reterr, -ENOMEM, "%s: out of memory", l->filename);
}

/* ---- scalar resolution ------------------------------------------------------------------------- */

static enum tag parse_tag(const yaml_char_t *tag)
{
        if (!tag)
                return TAG_NONE;
        if (strcmp((const char *) tag, "!") == 0)
                return TAG_NONSPECIFIC;
        for (size_t i = 0; i < AO_ARRAY_SIZE(known_tags); i++)
                if (known_tags[i].uri && strcmp((const char *) tag, known_tags[i].uri) == 0)
                        return (enum tag) i;
        return TAG_NONE;
}

static unsigned digit_value(char c)
{
        if (is_digit(c))
                return (unsigned) (c - '0');
        if (c >= 'a' && c <= 'z')
                return (unsigned) (c - 'a' + 10);
        if (c >= 'A' && c <= 'Z')
                return (unsigned) (c - 'A' + 10);
        return 99;
}

/* Go's strconv.ParseUint(s, 0, 64) on a string without '_': no sign, 0x 0o 0b or leading-0 octal. */
static bool go_parse_uint(const char *s, uint64_t *ret)
{
        size_t len = strlen(s);
        unsigned base = 10;
        if (len == 0)
                return false;
        if (s[0] == '0') {
                char c = (char) (s[1] | 0x20);
                if (len >= 3 && (c == 'b' || c == 'o' || c == 'x')) {
                        base = c == 'b' ? 2 : c == 'o' ? 8 : 16;
                        s += 2;
                } else {
                        base = 8;
                        s += 1;
                }
        }
        uint64_t v = 0;
        for (; *s; s++) {
                unsigned d = digit_value(*s);
                if (d >= base || v > (UINT64_MAX - d) / base)
                        return false;
                v = v * base + d;
        }
        *ret = v;
        return true;
}

/* Go's strconv.ParseInt(s, 0, 64): an optional sign, then ParseUint's syntax, within int64. */
static bool go_parse_int(const char *s, int64_t *ret)
{
        bool neg = s[0] == '-';
        uint64_t u;
        if (s[0] == '+' || s[0] == '-')
                s++;
        if (!go_parse_uint(s, &u))
                return false;
        if (!neg && u > (uint64_t) INT64_MAX)
                return false;
        if (neg && u > (uint64_t) INT64_MAX + 1)
                return false;
        if (!neg)
                *ret = (int64_t) u;
        else /* 2^63 has no positive int64 to negate */
                *ret = u == (uint64_t) INT64_MAX + 1 ? INT64_MIN : -(int64_t) u;
        return true;
}

/* go-yaml's yamlStyleFloat: ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ */
static bool is_yaml_float(const char *p)
{
        if (*p == '+' || *p == '-')
                p++;
        if (*p == '.') {
                if (!is_digit(*++p))
                        return false;
        } else {
                if (!is_digit(*p))
                        return false;
                while (is_digit(*p))
                        p++;
                if (*p == '.')
                        p++;
        }
        while (is_digit(*p))
                p++;
        if (*p == 'e' || *p == 'E') {
                p++;
                if (*p == '+' || *p == '-')
                        p++;
                if (!is_digit(*p))
                        return false;
                while (is_digit(*p))
                        p++;
        }
        return *p == '\0';
}

/* Digits with single '_' between two of them (Go's underscoreOK); advances *p. */
static bool skip_go_digits(const char **p)
{
        const char *q = *p;
        if (!is_digit(*q))
                return false;
        while (is_digit(*q) || (*q == '_' && is_digit(q[1])))
                q++;
        *p = q;
        return true;
}

/* What strconv.ParseFloat accepts for a string starting with '.'. */
static bool is_go_dot_float(const char *p)
{
        p++;
        if (!skip_go_digits(&p))
                return false;
        if (*p == 'e' || *p == 'E') {
                p++;
                if (*p == '+' || *p == '-')
                        p++;
                if (!skip_go_digits(&p))
                        return false;
        }
        return *p == '\0';
}

/* strtod() on a checked float syntax; a value beyond double range stays a string, as in Go. */
static void resolve_float(const char *digits, struct scalar *ret)
{
        /* No setlocale() in this program, so strtod() reads '.' as the decimal point. */
        double d = strtod(digits, NULL);
        if (isinf(d))
                return;
        ret->kind = KIND_FLOAT;
        ret->d = d;
}

/* A plain scalar starting with a digit, a sign or '.' (go-yaml hints 'D', 'S' and '.'). */
static void resolve_number(const char *s, size_t len, struct scalar *ret)
{
        char small[64];
        char *plain = len < sizeof(small) ? small : ao_xmalloc(len + 1);
        size_t n = 0;
        for (size_t i = 0; i < len; i++)
                if (s[i] != '_')
                        plain[n++] = s[i];
        plain[n] = '\0';

        if (s[0] == '.') {
                if (is_go_dot_float(s))
                        resolve_float(plain, ret);
        } else if (go_parse_int(plain, &ret->i)) {
                ret->kind = KIND_INT;
        } else if (go_parse_uint(plain, &ret->u)) {
                ret->kind = KIND_UINT;
        } else if (is_yaml_float(plain)) {
                resolve_float(plain, ret);
        }
        if (plain != small)
                free(plain);
}

static void resolve_plain(const char *s, size_t len, struct scalar *ret)
{
        *ret = (struct scalar){.kind = KIND_STRING, .s = s};
        if (len == 0) {
                ret->kind = KIND_NULL;
                return;
        }
        for (size_t i = 0; i < AO_ARRAY_SIZE(special_words); i++) {
                if (strcmp(s, special_words[i].word) != 0)
                        continue;
                ret->kind = special_words[i].kind;
                ret->b = special_words[i].value;
                if (ret->kind == KIND_FLOAT)
                        ret->d = special_words[i].value == 0 ? NAN : special_words[i].value * INFINITY;
                return;
        }
        if (is_digit(s[0]) || s[0] == '+' || s[0] == '-' || s[0] == '.')
                resolve_number(s, len, ret);
}

bool yaml_plain_is_string(const char *s)
{
        struct scalar sc;
        resolve_plain(s, strlen(s), &sc);
        return sc.kind == KIND_STRING;
}

/* Apply an explicit scalar tag to the resolved value; false when the value does not fit it. */
static bool apply_tag(enum tag tag, struct scalar *sc)
{
        switch (tag) {
        case TAG_INT:
                return sc->kind == KIND_INT || sc->kind == KIND_UINT;
        case TAG_FLOAT:
                if (sc->kind == KIND_INT)
                        sc->d = (double) sc->i;
                else if (sc->kind == KIND_UINT)
                        sc->d = (double) sc->u;
                else
                        return sc->kind == KIND_FLOAT;
                sc->kind = KIND_FLOAT;
                return true;
        case TAG_BOOL:
                return sc->kind == KIND_BOOL;
        case TAG_NULL:
                return sc->kind == KIND_NULL;
        default:
                return true;
        }
}

static int resolve_scalar(struct loader *l, const yaml_event_t *ev, struct scalar *ret)
{
        const char *value = (const char *) ev->data.scalar.value;
        size_t len = ev->data.scalar.length;
        enum tag tag = parse_tag(ev->data.scalar.tag);
        char what[256];

        /* "\0" escapes are valid YAML, but a C string would silently cut the value there. */
        if (memchr(value, '\0', len))
                return fail(l, -EINVAL, &ev->start_mark, "NUL characters in strings are not supported");

        switch (tag) {
        case TAG_STR:
        case TAG_NONSPECIFIC:
                *ret = (struct scalar){.kind = KIND_STRING, .s = value};
                return 0;
        case TAG_MAP:
        case TAG_SEQ:
                return fail(l, -EINVAL, &ev->start_mark, "%s cannot tag a scalar", known_tags[tag].name);
        case TAG_NONE:
        case TAG_MERGE:
                if (ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE)
                        resolve_plain(value, len, ret);
                else
                        *ret = (struct scalar){.kind = KIND_STRING, .s = value};
                return 0;
        default:
                resolve_plain(value, len, ret);
                if (!apply_tag(tag, ret))
                        return fail(l, -EINVAL, &ev->start_mark, "'%s' is not a valid %s",
                                    describe(what, sizeof(what), value), known_tags[tag].name);
                return 0;
        }
}

static bool is_merge_key(const yaml_event_t *ev)
{
        enum tag tag = parse_tag(ev->data.scalar.tag);
        if (strcmp((const char *) ev->data.scalar.value, "<<") != 0)
                return false;
        return tag == TAG_MERGE ||
               (ev->data.scalar.tag == NULL && ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE);
}

/* cJSON_CreateNumber() casts to int for valueint, which is undefined for NaN. */
static cJSON *create_number(double d)
{
        cJSON *n = cJSON_CreateNumber(isnan(d) ? 0 : d);
        if (n)
                n->valuedouble = d;
        return n;
}

static cJSON *create_node(const struct scalar *sc)
{
        switch (sc->kind) {
        case KIND_NULL:
                return cJSON_CreateNull();
        case KIND_BOOL:
                return cJSON_CreateBool(sc->b);
        case KIND_INT:
                return create_number((double) sc->i);
        case KIND_UINT:
                return create_number((double) sc->u);
        case KIND_FLOAT:
                return create_number(sc->d);
        default:
                return cJSON_CreateString(sc->s);
        }
}

/* ---- keys -------------------------------------------------------------------------------------- */

static char *float_key(double d)
{
        if (isnan(d))
                return ao_xstrdup(".nan");
        if (isinf(d))
                return ao_xstrdup(d > 0 ? ".inf" : "-.inf");
        cJSON number = {.type = cJSON_Number, .valuedouble = d};
        return ao_json_canonical(&number);
}

static char *scalar_key(const struct scalar *sc)
{
        char buf[32];
        switch (sc->kind) {
        case KIND_NULL:
                return ao_xstrdup("null");
        case KIND_BOOL:
                return ao_xstrdup(sc->b ? "true" : "false");
        case KIND_INT:
                (void) snprintf(buf, sizeof(buf), "%" PRId64, sc->i);
                return ao_xstrdup(buf);
        case KIND_UINT:
                (void) snprintf(buf, sizeof(buf), "%" PRIu64, sc->u);
                return ao_xstrdup(buf);
        case KIND_FLOAT:
                return float_key(sc->d);
        default:
                return ao_xstrdup(sc->s);
        }
}

/* The key form of an anchored scalar used as a key through an alias. */
static char *node_key(const cJSON *node)
{
        if (cJSON_IsString(node))
                return ao_xstrdup(node->valuestring);
        if (cJSON_IsBool(node))
                return ao_xstrdup(cJSON_IsTrue(node) ? "true" : "false");
        if (cJSON_IsNumber(node))
                return float_key(node->valuedouble);
        return ao_xstrdup("null");
}

static int check_key_length(struct loader *l, const char *key, const yaml_mark_t *mark)
{
        char what[256];
        /* A JSON escape takes at most 6 characters per byte: short keys need no measuring. */
        if (strlen(key) <= AO_YAML_MAX_KEY_CHARS / 6)
                return 0;
        cJSON string = {.type = cJSON_String, .valuestring = (char *) key};
        _cleanup_free_ char *json = ao_json_canonical(&string);
        size_t chars = 0;
        for (const char *p = json; *p; p++)
                chars += ((unsigned char) *p & 0xC0) != 0x80;
        if (chars - 2 > AO_YAML_MAX_KEY_CHARS)
                return fail(l, -E2BIG, mark, "mapping key '%s' is longer than %u characters",
                            describe(what, sizeof(what), key), AO_YAML_MAX_KEY_CHARS);
        return 0;
}

static int compare_strings(const void *a, const void *b)
{
        return strcmp(a, b);
}

/* Make @key (owned, taken) the pending key of mapping @f. */
static int set_key(struct loader *l, struct frame *f, char *key, const yaml_mark_t *mark)
{
        char what[256];
        if (tfind(key, &f->keys, compare_strings)) {
                int r = fail(l, -EINVAL, mark, "duplicate key '%s'", describe(what, sizeof(what), key));
                free(key);
                return r;
        }
        int r = check_key_length(l, key, mark);
        if (r < 0) {
                free(key);
                return r;
        }
        if (!tsearch(key, &f->keys, compare_strings)) {
                free(key);
                return oom(l);
        }
        f->key = key;
        return 0;
}

/* ---- limits and anchors ------------------------------------------------------------------------ */

static double allowed_alias_ratio(size_t nodes)
{
        if (nodes <= ALIAS_RATIO_RANGE_LOW)
                return 0.99;
        if (nodes >= ALIAS_RATIO_RANGE_HIGH)
                return 0.10;
        return 0.99 - 0.89 * (((double) nodes - ALIAS_RATIO_RANGE_LOW) /
                              (ALIAS_RATIO_RANGE_HIGH - ALIAS_RATIO_RANGE_LOW));
}

/* Account for @nodes nodes holding @bytes string bytes about to be created; @copied by an alias or merge. */
static int count(struct loader *l, size_t nodes, size_t bytes, bool copied, const yaml_mark_t *mark)
{
        if (nodes > l->limits.max_nodes - l->n_nodes)
                return fail(l, -E2BIG, mark, "more than %zu nodes after alias expansion",
                            l->limits.max_nodes);
        if (copied && bytes > l->limits.max_alias_bytes - l->n_alias_bytes)
                return fail(l, -E2BIG, mark, "aliases copy more than %zu bytes of strings",
                            l->limits.max_alias_bytes);
        l->n_nodes += nodes;
        l->n_bytes += bytes;
        if (copied) {
                l->n_alias_nodes += nodes;
                l->n_alias_bytes += bytes;
        }
        /* The same test as go-yaml v2's decoder, so what kubectl loads loads here and the reverse. */
        if (l->n_alias_nodes > 100 && l->n_nodes > 1000 &&
            (double) l->n_alias_nodes / (double) l->n_nodes > allowed_alias_ratio(l->n_nodes))
                return fail(l, -E2BIG, mark, "document contains excessive aliasing");
        return 0;
}

/* Nodes (keys included) and string bytes of @node's subtree; recursion bounded by the tree's height. */
static void tree_size(const cJSON *node, size_t *nodes, size_t *bytes)
{
        *nodes += 1;
        if (cJSON_IsString(node) && node->valuestring)
                *bytes += strlen(node->valuestring);
        for (const cJSON *c = node->child; c; c = c->next) {
                if (cJSON_IsObject(node) && c->string) {
                        *nodes += 1;
                        *bytes += strlen(c->string);
                }
                tree_size(c, nodes, bytes);
        }
}

static int compare_anchors(const void *a, const void *b)
{
        return strcmp(((const struct anchor *) a)->name, ((const struct anchor *) b)->name);
}

static void free_anchor(void *p)
{
        struct anchor *a = p;
        free(a->name);
        free(a);
}

static struct anchor *find_anchor(struct loader *l, const char *name)
{
        struct anchor key = {.name = (char *) name};
        void **found = tfind(&key, &l->anchors, compare_anchors);
        return found ? *found : NULL;
}

/* (Re)define anchor @name, still open; a later definition of a name replaces the earlier one. */
static int define_anchor(struct loader *l, const char *name, struct anchor **ret)
{
        struct anchor *a = find_anchor(l, name);
        if (!a) {
                a = ao_xcalloc(1, sizeof(*a));
                a->name = ao_xstrdup(name);
                if (!tsearch(a, &l->anchors, compare_anchors)) {
                        free_anchor(a);
                        return oom(l);
                }
        }
        a->gen++;
        a->node = NULL;
        *ret = a;
        return 0;
}

static int define_scalar_anchor(struct loader *l, const char *name, const cJSON *node, size_t bytes)
{
        struct anchor *a;
        int r = define_anchor(l, name, &a);
        if (r < 0)
                return r;
        a->node = node;
        a->nodes = 1;
        a->bytes = bytes;
        a->height = 0;
        return 0;
}

/* ---- building ---------------------------------------------------------------------------------- */

static struct frame *top(struct loader *l)
{
        return l->n_frames > 0 ? &l->frames[l->n_frames - 1] : NULL;
}

static bool wants_key(const struct frame *f)
{
        return f && cJSON_IsObject(f->node) && !f->key && !f->merge_key;
}

static void frame_done(struct frame *f)
{
        tdestroy(f->keys, free);
        free(f->sources);
        *f = (struct frame){0};
}

/* Attach a new value node to where the document is (parent, or root); takes @node even on failure. */
static int attach(struct loader *l, cJSON *node)
{
        struct frame *p = top(l);
        if (!p) {
                l->root = node;
                return 0;
        }
        if (cJSON_IsArray(p->node)) {
                (void) cJSON_AddItemToArray(p->node, node);
                return 0;
        }
        if (!cJSON_AddItemToObject(p->node, p->key, node)) {
                cJSON_Delete(node);
                return oom(l);
        }
        p->key = NULL;
        return 0;
}

static void grow_height(struct loader *l, unsigned child_height)
{
        struct frame *p = top(l);
        if (p)
                p->height = AO_MAX(p->height, child_height + 1);
}

static int merge_value_error(struct loader *l, const yaml_mark_t *mark)
{
        return fail(l, -EINVAL, mark,
                    "merge key '<<' needs a mapping or a sequence of mappings as its value");
}

/* @node (borrowed, complete) is the value of @f's '<<': remember the mappings to merge at the end of @f. */
static int add_merge_value(struct loader *l, struct frame *f, const cJSON *node, unsigned height,
                           const yaml_mark_t *mark)
{
        size_t n = 0;
        if (cJSON_IsObject(node)) {
                n = 1;
        } else if (cJSON_IsArray(node)) {
                for (const cJSON *c = node->child; c; c = c->next, n++)
                        if (!cJSON_IsObject(c))
                                return merge_value_error(l, mark);
        } else {
                return merge_value_error(l, mark);
        }
        f->sources = ao_xreallocarray(f->sources, f->n_sources + n, sizeof(*f->sources));
        if (cJSON_IsObject(node))
                f->sources[f->n_sources++] = (struct merge_source){node, *mark};
        else
                for (const cJSON *c = node->child; c; c = c->next)
                        f->sources[f->n_sources++] = (struct merge_source){c, *mark};
        f->merge_key = false;
        f->height = AO_MAX(f->height, height);
        return 0;
}

/* At the end of mapping @f: copy in the merged keys that were not written in it. */
static int apply_merges(struct loader *l, struct frame *f)
{
        for (size_t i = 0; i < f->n_sources; i++) {
                const struct merge_source *s = &f->sources[i];
                for (const cJSON *item = s->node->child; item; item = item->next) {
                        if (!item->string || tfind(item->string, &f->keys, compare_strings))
                                continue;
                        size_t nodes = 1, bytes = strlen(item->string);
                        tree_size(item, &nodes, &bytes);
                        int r = count(l, nodes, bytes, true, &s->mark);
                        if (r < 0)
                                return r;
                        char *key = ao_xstrdup(item->string);
                        if (!tsearch(key, &f->keys, compare_strings)) {
                                free(key);
                                return oom(l);
                        }
                        cJSON *copy = cJSON_Duplicate(item, true);
                        if (!copy)
                                return oom(l);
                        if (!cJSON_AddItemToObject(f->node, key, copy)) {
                                cJSON_Delete(copy);
                                return oom(l);
                        }
                }
        }
        return 0;
}

static int on_scalar_key(struct loader *l, struct frame *p, const yaml_event_t *ev, const struct scalar *sc)
{
        const char *anchor = (const char *) ev->data.scalar.anchor;
        size_t len = ev->data.scalar.length;
        int r = count(l, 1, len, false, &ev->start_mark);
        if (r < 0)
                return r;
        if (is_merge_key(ev))
                p->merge_key = true;
        else if ((r = set_key(l, p, scalar_key(sc), &ev->start_mark)) < 0)
                return r;
        if (!anchor)
                return 0;
        /* An anchored key can be aliased as a value later: keep it as a node. */
        cJSON *node = create_node(sc);
        if (!node)
                return oom(l);
        (void) cJSON_AddItemToArray(l->graveyard, node);
        return define_scalar_anchor(l, anchor, node, sc->kind == KIND_STRING ? len : 0);
}

static int on_scalar(struct loader *l, const yaml_event_t *ev)
{
        const char *anchor = (const char *) ev->data.scalar.anchor;
        struct frame *p = top(l);
        struct scalar sc;
        int r = resolve_scalar(l, ev, &sc);
        if (r < 0)
                return r;
        if (wants_key(p))
                return on_scalar_key(l, p, ev, &sc);
        if (p && p->merge_key)
                return merge_value_error(l, &ev->start_mark);

        size_t bytes = sc.kind == KIND_STRING ? ev->data.scalar.length : 0;
        if ((r = count(l, 1, bytes, false, &ev->start_mark)) < 0)
                return r;
        cJSON *node = create_node(&sc);
        if (!node)
                return oom(l);
        if ((r = attach(l, node)) < 0)
                return r;
        grow_height(l, 0);
        return anchor ? define_scalar_anchor(l, anchor, node, bytes) : 0;
}

static int on_alias(struct loader *l, const yaml_event_t *ev)
{
        const char *name = (const char *) ev->data.alias.anchor;
        const yaml_mark_t *mark = &ev->start_mark;
        struct anchor *a = find_anchor(l, name);
        struct frame *p = top(l);
        char what[256];
        int r;

        if (!a)
                return fail(l, -EINVAL, mark, "unknown anchor '%s'", describe(what, sizeof(what), name));
        if (!a->node)
                return fail(l, -EINVAL, mark, "anchor '%s' is used inside its own node",
                            describe(what, sizeof(what), name));
        if (wants_key(p)) {
                if (cJSON_IsArray(a->node) || cJSON_IsObject(a->node))
                        return fail(l, -EINVAL, mark, "a mapping or sequence cannot be a mapping key");
                if ((r = count(l, 1, a->bytes, true, mark)) < 0)
                        return r;
                return set_key(l, p, node_key(a->node), mark);
        }
        if (l->n_frames + a->height > l->limits.max_depth)
                return fail(l, -E2BIG, mark, "nesting deeper than %u levels", l->limits.max_depth);
        if (p && p->merge_key)
                return add_merge_value(l, p, a->node, a->height, mark);

        if ((r = count(l, a->nodes, a->bytes, true, mark)) < 0)
                return r;
        cJSON *copy = cJSON_Duplicate(a->node, true);
        if (!copy)
                return oom(l);
        if ((r = attach(l, copy)) < 0)
                return r;
        grow_height(l, a->height);
        return 0;
}

/* A tag on a mapping or sequence: only !!map, !!seq, "!" and tags we ignore fit. */
static int check_collection_tag(struct loader *l, const yaml_event_t *ev, bool mapping)
{
        const yaml_char_t *raw = mapping ? ev->data.mapping_start.tag : ev->data.sequence_start.tag;
        enum tag tag = parse_tag(raw);
        if (tag == TAG_NONE || tag == TAG_NONSPECIFIC || tag == (mapping ? TAG_MAP : TAG_SEQ))
                return 0;
        return fail(l, -EINVAL, &ev->start_mark, "%s cannot tag a %s", known_tags[tag].name,
                    mapping ? "mapping" : "sequence");
}

static int on_start(struct loader *l, const yaml_event_t *ev, bool mapping)
{
        const char *anchor =
            (const char *) (mapping ? ev->data.mapping_start.anchor : ev->data.sequence_start.anchor);
        const yaml_mark_t *mark = &ev->start_mark;
        struct frame *p = top(l);
        int r = check_collection_tag(l, ev, mapping);
        if (r < 0)
                return r;
        if (wants_key(p))
                return fail(l, -EINVAL, mark, "a mapping or sequence cannot be a mapping key");
        if (l->n_frames >= l->limits.max_depth)
                return fail(l, -E2BIG, mark, "nesting deeper than %u levels", l->limits.max_depth);
        if ((r = count(l, 1, 0, false, mark)) < 0)
                return r;

        cJSON *node = mapping ? cJSON_CreateObject() : cJSON_CreateArray();
        if (!node)
                return oom(l);
        bool merge_value = p && p->merge_key;
        if (merge_value) {
                /* Only its keys are used, at the end of the parent: park it where anchors can still see it. */
                (void) cJSON_AddItemToArray(l->graveyard, node);
                p->merge_key = false;
        } else if ((r = attach(l, node)) < 0) {
                return r;
        }

        struct frame *f = &l->frames[l->n_frames++];
        *f = (struct frame){
            .node = node,
            .mark = *mark,
            .nodes_at_start = l->n_nodes - 1,
            .bytes_at_start = l->n_bytes,
            .height = 1,
            .merge_value = merge_value,
        };
        if (!anchor)
                return 0;
        if ((r = define_anchor(l, anchor, &f->anchor)) < 0)
                return r;
        f->anchor_gen = f->anchor->gen;
        return 0;
}

static int on_end(struct loader *l)
{
        struct frame *f = top(l);
        int r = cJSON_IsObject(f->node) ? apply_merges(l, f) : 0;
        if (r < 0)
                return r; /* the frame stays open: loader_done() frees it */

        if (f->anchor && f->anchor->gen == f->anchor_gen) {
                f->anchor->node = f->node;
                f->anchor->nodes = l->n_nodes - f->nodes_at_start;
                f->anchor->bytes = l->n_bytes - f->bytes_at_start;
                f->anchor->height = f->height;
        }
        const cJSON *node = f->node;
        yaml_mark_t mark = f->mark;
        unsigned height = f->height;
        bool merge_value = f->merge_value;
        frame_done(f);
        l->n_frames--;

        if (merge_value)
                return add_merge_value(l, top(l), node, height, &mark);
        grow_height(l, height);
        return 0;
}

static int on_event(struct loader *l, const yaml_event_t *ev)
{
        switch (ev->type) {
        case YAML_SCALAR_EVENT:
                return on_scalar(l, ev);
        case YAML_ALIAS_EVENT:
                return on_alias(l, ev);
        case YAML_SEQUENCE_START_EVENT:
                return on_start(l, ev, false);
        case YAML_MAPPING_START_EVENT:
                return on_start(l, ev, true);
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
                return on_end(l);
        default:
                return 0;
        }
}

/* ---- errors from libyaml ----------------------------------------------------------------------- */

/* Reader errors carry a byte offset only: count lines and characters up to it. */
static yaml_mark_t mark_at_offset(const struct loader *l, size_t offset)
{
        yaml_mark_t mark = {0};
        for (size_t i = 0; i < offset && i < l->len; i++) {
                unsigned char c = (unsigned char) l->text[i];
                if (c == '\n' || (c == '\r' && (i + 1 >= l->len || l->text[i + 1] != '\n'))) {
                        mark.line++;
                        mark.column = 0;
                } else if (c != '\r' && (c & 0xC0) != 0x80) {
                        mark.column++;
                }
        }
        return mark;
}

static int parser_error(struct loader *l, const yaml_parser_t *parser)
{
        const char *problem = parser->problem ? parser->problem : "invalid YAML";
        if (parser->error == YAML_MEMORY_ERROR)
                return oom(l);
        if (parser->error == YAML_READER_ERROR) {
                yaml_mark_t mark = mark_at_offset(l, parser->problem_offset);
                if (parser->problem_value < 0)
                        return fail(l, -EINVAL, &mark, "%s", problem);
                return fail(l, -EINVAL, &mark, "%s (0x%x)", problem, (unsigned) parser->problem_value);
        }
        if (parser->context)
                return fail(l, -EINVAL, &parser->problem_mark, "%s (%s that starts at %zu:%zu)", problem,
                            parser->context, parser->context_mark.line + 1, parser->context_mark.column + 1);
        return fail(l, -EINVAL, &parser->problem_mark, "%s", problem);
}

/* ---- entry points ------------------------------------------------------------------------------ */

static void loader_done(struct loader *l)
{
        while (l->n_frames > 0)
                frame_done(&l->frames[--l->n_frames]);
        free(l->frames);
        tdestroy(l->anchors, free_anchor);
        cJSON_Delete(l->graveyard);
        cJSON_Delete(l->root);
        cJSON_Delete(l->docs);
        *l = (struct loader){0};
}

/*
 * A document ends (stream mode): keep it unless it is empty or null, as
 * kubectl does. Anchors do not reach into the next document (YAML 1.2 §6.9.2,
 * go-yaml v3); the nodes they point at stay alive in l->docs or the graveyard.
 */
static int end_document(struct loader *l)
{
        cJSON *root = TAKE_PTR(l->root);

        tdestroy(l->anchors, free_anchor);
        l->anchors = NULL;
        if (!root || cJSON_IsNull(root)) {
                cJSON_Delete(root);
                return 0;
        }
        if (!cJSON_AddItemToArray(l->docs, root)) {
                cJSON_Delete(root);
                return oom(l);
        }
        return 0;
}

static int parse_stream(struct loader *l, yaml_parser_t *parser)
{
        unsigned documents = 0;
        for (;;) {
                yaml_event_t ev;
                int r = 0;
                if (!yaml_parser_parse(parser, &ev))
                        return parser_error(l, parser);
                if (ev.type == YAML_STREAM_END_EVENT) {
                        yaml_event_delete(&ev);
                        return 0;
                }
                if (ev.type == YAML_DOCUMENT_START_EVENT && documents++ > 0 && !l->docs)
                        r = fail(l, -EINVAL, &ev.start_mark,
                                 "only one document is allowed, a second one starts here");
                else if (ev.type == YAML_DOCUMENT_END_EVENT && l->docs)
                        r = end_document(l);
                else
                        r = on_event(l, &ev);
                yaml_event_delete(&ev);
                if (r < 0)
                        return r;
        }
}

/* Load one document into @ret, or with @stream every document into a new array in @ret. */
static int load_any(const char *text, size_t len, const char *filename, const struct limits *limits,
                    bool stream, cJSON **ret, struct ao_error *reterr)
{
        struct loader l = {
            .filename = filename ? filename : "<input>",
            .text = text,
            .len = len,
            .limits = *limits,
            .reterr = reterr,
        };
        yaml_parser_t parser;
        int r;

        r = ao_input_check_size(len, AO_YAML_MAX_INPUT, l.filename, "input", reterr);
        if (r < 0)
                return r;
        if (!yaml_parser_initialize(&parser))
                return oom(&l);
        yaml_parser_set_input_string(&parser, (const unsigned char *) text, len);
        l.frames = ao_xcalloc(limits->max_depth, sizeof(*l.frames));
        l.graveyard = cJSON_CreateArray();
        if (stream)
                l.docs = cJSON_CreateArray();

        r = l.graveyard && (!stream || l.docs) ? parse_stream(&l, &parser) : oom(&l);
        yaml_parser_delete(&parser);
        if (r >= 0 && stream)
                *ret = TAKE_PTR(l.docs);
        else if (r >= 0 && !l.root && !(l.root = cJSON_CreateNull()))
                r = oom(&l);
        else if (r >= 0)
                *ret = TAKE_PTR(l.root);
        loader_done(&l);
        return r < 0 ? r : 0;
}

static int load(const char *text, size_t len, const char *filename, const struct limits *limits, cJSON **ret,
                struct ao_error *reterr)
{
        return load_any(text, len, filename, limits, false, ret, reterr);
}

int ao_yaml_load(const char *text, size_t len, const char *filename, struct cJSON **ret,
                 struct ao_error *reterr)
{
        return load(text, len, filename, &default_limits, ret, reterr);
}

int ao_yaml_load_stream(const char *text, size_t len, const char *filename, struct cJSON **ret_array,
                        struct ao_error *reterr)
{
        return load_any(text, len, filename, &default_limits, true, ret_array, reterr);
}

/* Read all of @fd, at most AO_YAML_MAX_INPUT bytes; @size_hint from fstat. */
static int read_capped(int fd, size_t size_hint, char **ret, size_t *ret_len)
{
        size_t cap = AO_MIN(AO_MAX(size_hint + 1, (size_t) 4096), (size_t) AO_YAML_MAX_INPUT + 1), len = 0;
        _cleanup_free_ char *buf = ao_xmalloc(cap);
        for (;;) {
                if (len == cap) {
                        if (cap > AO_YAML_MAX_INPUT)
                                return -EFBIG;
                        cap = AO_MIN(2 * cap, (size_t) AO_YAML_MAX_INPUT + 1);
                        buf = ao_xrealloc(buf, cap);
                }
                ssize_t n = read(fd, buf + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return ao_negative_errno();
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

/* The whole of @path, capped at AO_YAML_MAX_INPUT; errors name the file. */
static int read_input_file(const char *path, char **ret_text, size_t *ret_len, struct ao_error *reterr)
{
        _cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        struct stat st;
        int r;

        if (fd < 0 || fstat(fd, &st) < 0) {
                r = ao_negative_errno();
                return ao_error_set(reterr, r, "cannot read '%s': %s", path, strerror(-r));
        }
        if (S_ISREG(st.st_mode) && st.st_size > (off_t) AO_YAML_MAX_INPUT)
                r = -EFBIG;
        else
                r = read_capped(fd, S_ISREG(st.st_mode) ? (size_t) st.st_size : 0, ret_text, ret_len);
        if (r == -EFBIG)
                return ao_error_set(reterr, r, "cannot read '%s': larger than %u bytes", path,
                                    AO_YAML_MAX_INPUT);
        if (r < 0)
                return ao_error_set(reterr, r, "cannot read '%s': %s", path, strerror(-r));
        return 0;
}

int ao_yaml_load_file(const char *path, struct cJSON **ret, struct ao_error *reterr)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = read_input_file(path, &text, &len, reterr);
        return r < 0 ? r : ao_yaml_load(text, len, path, ret, reterr);
}

int ao_yaml_load_stream_file(const char *path, struct cJSON **ret_array, struct ao_error *reterr)
{
        _cleanup_free_ char *text = NULL;
        size_t len = 0;
        int r = read_input_file(path, &text, &len, reterr);
        return r < 0 ? r : ao_yaml_load_stream(text, len, path, ret_array, reterr);
}

/* ---- JSON streams ------------------------------------------------------------------------------ */

/*
 * A JSON stream is cut into values by a small scanner before cJSON sees any
 * of it (as src/metrics/operations.c does): it finds where each top-level
 * value ends, counts nodes and nesting against the YAML limits so cJSON
 * never builds more than they allow, and refuses what cJSON would let
 * through although JSON does not: raw control characters, "\u0000" (a NUL
 * that cuts the string short) and numbers outside JSON's grammar ("01",
 * "1.", which strtod() takes). Keys twice in one object are refused after
 * the parse, as the YAML loader refuses them.
 */

struct json_stream {
        const char *filename; /* borrowed */
        const char *text;     /* borrowed: NUL-terminated copy of the input */
        size_t len;
        size_t nodes; /* keys included, as the YAML loader counts them */
        struct ao_error *reterr;
};

static int json_fail(const struct json_stream *s, size_t offset, int code, const char *fmt, ...)
    _printf_(4, 5);
static int json_fail(const struct json_stream *s, size_t offset, int code, const char *fmt, ...)
{
        struct loader l = {.text = s->text, .len = s->len};
        yaml_mark_t mark = mark_at_offset(&l, offset);
        char what[AO_ERROR_MSG_MAX];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        return ao_error_set(s->reterr, code, "%s:%zu:%zu: %s", s->filename, mark.line + 1, mark.column + 1,
                            what);
}

static bool is_json_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Count one more node at @offset. */
static int json_count(struct json_stream *s, size_t offset)
{
        if (++s->nodes > AO_YAML_MAX_NODES)
                return json_fail(s, offset, -E2BIG, "more than %u nodes", AO_YAML_MAX_NODES);
        return 0;
}

/* Past the string opening at @pos: 0, or 1 with @pos itself when the input ends first. */
static int json_scan_string(const struct json_stream *s, size_t pos, size_t *ret_end)
{
        const char *t = s->text;
        size_t i = pos + 1;

        for (; i < s->len && t[i] != '"'; i++) {
                unsigned char c = (unsigned char) t[i];
                if (c < 0x20)
                        return json_fail(s, i, -EINVAL, "control character 0x%02x in a string", c);
                if (c == '\\') {
                        if (strncmp(t + i + 1, "u0000", 5) == 0)
                                return json_fail(s, i, -EINVAL, "\\u0000 in a string is not supported");
                        if (i + 1 < s->len)
                                i++;
                }
        }
        *ret_end = i < s->len ? i + 1 : pos;
        return i < s->len ? 0 : 1;
}

/*
 * Find the end of the value starting at @pos. Returns 0 with @ret_end after
 * it, or 1 when the input ends first, with @ret_end at the string left open
 * or at the end of the input (cJSON then looks for an earlier error).
 */
static int json_scan_value(struct json_stream *s, size_t pos, size_t *ret_end)
{
        const char *t = s->text;
        size_t depth = 0, i = pos;
        bool done = false;
        int r;

        while (i < s->len && !done) {
                unsigned char c = (unsigned char) t[i];
                size_t start = i;

                if (c == '{' || c == '[') {
                        if ((r = json_count(s, i)) < 0)
                                return r;
                        if (++depth > AO_YAML_MAX_DEPTH)
                                return json_fail(s, i, -E2BIG, "nesting deeper than %u levels",
                                                 AO_YAML_MAX_DEPTH);
                        i++;
                        continue;
                }
                if (c == '}' || c == ']') {
                        i++;
                        done = depth <= 1;
                        depth -= depth > 0;
                        continue;
                }
                if (c == ',' || c == ':' || is_json_space((char) c)) {
                        i++;
                        continue;
                }
                if (c < 0x20)
                        return json_fail(s, i, -EINVAL, "control character 0x%02x outside a string", c);
                if ((r = json_count(s, i)) < 0)
                        return r;
                if (c == '"') {
                        if ((r = json_scan_string(s, i, &i)) != 0) {
                                if (r < 0)
                                        return r;
                                break; /* not closed */
                        }
                } else if (c == '-' || is_digit((char) c)) {
                        i = ao_json_number_end(t, i);
                        if (i == 0 || i > s->len)
                                return json_fail(s, start, -EINVAL, "invalid number");
                } else {
                        /* true, false, null, or garbage for cJSON to refuse. */
                        i++;
                        while (i < s->len && t[i] >= 'a' && t[i] <= 'z')
                                i++;
                }
                done = depth == 0;
        }
        *ret_end = AO_MIN(i, s->len);
        return done ? 0 : 1;
}

static int compare_member_names(const void *a, const void *b)
{
        const cJSON *x = *(const cJSON *const *) a, *y = *(const cJSON *const *) b;
        return strcmp(x->string ? x->string : "", y->string ? y->string : "");
}

/* A member name twice in one object of @json, at any depth (at most AO_YAML_MAX_DEPTH), or NULL. */
static const char *json_duplicate_key(const cJSON *json)
{
        const char *dup = NULL;
        size_t n = 0;

        if (cJSON_IsObject(json))
                for (const cJSON *c = json->child; c; c = c->next)
                        n++;
        if (n > 1) {
                const cJSON **members = ao_xreallocarray(NULL, n, sizeof(*members));
                size_t i = 0;
                for (const cJSON *c = json->child; c; c = c->next)
                        members[i++] = c;
                qsort(members, n, sizeof(*members), compare_member_names);
                for (i = 1; i < n && !dup; i++)
                        if (compare_member_names(&members[i - 1], &members[i]) == 0)
                                dup = members[i]->string;
                free(members);
        }
        if (cJSON_IsObject(json) || cJSON_IsArray(json))
                for (const cJSON *c = json->child; c && !dup; c = c->next)
                        dup = json_duplicate_key(c);
        return dup;
}

/* Parse the value at *@pos into @docs and move past it. */
static int json_parse_value(struct json_stream *s, cJSON *docs, size_t *pos)
{
        const char *stop = NULL;
        char what[256];
        size_t end = 0;
        int r = json_scan_value(s, *pos, &end);

        if (r < 0)
                return r;
        if (r > 0) {
                /* Cut short. cJSON may find an earlier error; with the NUL it is not clamped to the last byte. */
                cJSON_Delete(cJSON_ParseWithLengthOpts(s->text + *pos, s->len + 1 - *pos, &stop, 0));
                if (stop && stop < s->text + end)
                        return json_fail(s, (size_t) (stop - s->text), -EINVAL, "invalid JSON");
                if (end < s->len)
                        return json_fail(s, end, -EINVAL, "unterminated string");
                return json_fail(s, s->len, -EINVAL, "unexpected end of input");
        }
        cJSON *json = cJSON_ParseWithLengthOpts(s->text + *pos, end - *pos, &stop, 0);
        if (!json || stop != s->text + end) {
                cJSON_Delete(json);
                return json_fail(s, stop ? (size_t) (stop - s->text) : *pos, -EINVAL, "invalid JSON");
        }
        const char *dup = json_duplicate_key(json);
        if (dup) {
                r = json_fail(s, *pos, -EINVAL, "duplicate key '%s'", describe(what, sizeof(what), dup));
                cJSON_Delete(json);
                return r;
        }
        (void) cJSON_AddItemToArray(docs, json);
        *pos = end;
        return 0;
}

int ao_json_load_stream(const char *text, size_t len, const char *filename, struct cJSON **ret_array,
                        struct ao_error *reterr)
{
        struct json_stream s = {.filename = filename ? filename : "<input>", .len = len, .reterr = reterr};
        _cleanup_free_ char *copy = NULL;
        cJSON *docs = NULL;
        size_t pos = 0;

        /* The scanner and cJSON look a few bytes ahead, which the NUL terminator stops. */
        int r = ao_input_copy(text, len, AO_YAML_MAX_INPUT, s.filename, "input", &copy, &pos, reterr);
        if (r < 0)
                return r;
        s.text = copy;
        docs = cJSON_CreateArray();
        if (!docs)
                return ao_error_set(reterr, -ENOMEM, "%s: out of memory", s.filename);
        for (;;) {
                while (pos < len && is_json_space(copy[pos]))
                        pos++;
                if (pos >= len)
                        break;
                r = json_parse_value(&s, docs, &pos);
                if (r < 0) {
                        cJSON_Delete(docs);
                        return r;
                }
        }
        *ret_array = docs;
        return 0;
}
