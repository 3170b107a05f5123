/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/helm-output.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <yaml.h>

#include "ao/alloc.h"
#include "ao/input.h"
#include "ao/json-type.h"
#include "ao/quote.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"

/*
 * A rendered manifest is read in two passes over the text.
 *
 * The first runs libyaml's event parser over the whole stream, as
 * ao_yaml_load_stream() would, and notes where each document starts and
 * where its top node starts, plus which "# Source: " lines are comments and
 * which sit inside a quoted or block scalar ("---" and "# Source:" inside a
 * ConfigMap value are text, which is why the stream is not split on lines).
 * libyaml marks count characters (code points, CRLF as two), so positions
 * are kept as character indices and turned into byte offsets by walking the
 * UTF-8 text forward.
 *
 * The second loads each document's bytes with ao_yaml_load(): from its
 * start to the next one's (every document but the first starts with a
 * directive or "---" at the start of a line, so the cut is clean), which
 * gives each document's value together with its name, with the loader's own
 * rules for what is null. Anchors never reach across documents, so this is
 * what the whole stream means. When a document fails to load, the whole
 * stream is loaded once more for the error, so that its position is one in
 * the whole text.
 */

#define WHAT          "rendered manifest"
#define SOURCE_PREFIX "# Source: "
#define LABEL_MAX     200 /* bytes of a source path shown in errors */

/* A line starting with SOURCE_PREFIX. */
struct source {
        size_t index;     /* libyaml character index of its '#' */
        const char *path; /* borrowed from the text: what follows the prefix */
        size_t len;
        bool in_scalar; /* part of a quoted or block scalar, not a comment */
};

/* A document of the stream (empty ones included). */
struct doc {
        size_t start;  /* character index of its first token: "---", a directive, or its content */
        size_t root;   /* character index of its top node */
        size_t offset; /* byte offset of start */
};

struct scan {
        const char *text; /* borrowed */
        size_t len;
        size_t bom; /* bytes of a UTF-8 byte order mark at the start, which libyaml does not count */
        struct source *sources; /* owned array, in order of the text */
        size_t n_sources;
        struct doc *docs; /* owned array */
        size_t n_docs;
};

static void scan_done(struct scan *s)
{
        free(s->sources);
        free(s->docs);
        *s = (struct scan){0};
}

static void json_deletep(cJSON **json)
{
        cJSON_Delete(*json);
}

static void object_done(struct ao_helm_object *o)
{
        free(o->api_version);
        free(o->kind);
        free(o->namespace);
        free(o->name);
        *o = (struct ao_helm_object){0};
}

void ao_helm_manifest_clear(struct ao_helm_manifest *m)
{
        if (!m)
                return;
        for (size_t i = 0; i < m->n; i++)
                object_done(&m->objects[i]);
        free(m->objects);
        *m = (struct ao_helm_manifest){0};
}

/* ---- the first pass ------------------------------------------------------------------------------ */

static bool is_line_break_at(const char *t, size_t len, size_t i)
{
        unsigned char c = (unsigned char) t[i];

        if (c == '\n' || c == '\r')
                return true;
        /* libyaml also breaks lines at NEL, LINE SEPARATOR and PARAGRAPH SEPARATOR. */
        if (c == 0xC2 && i + 1 < len && (unsigned char) t[i + 1] == 0x85)
                return true;
        return c == 0xE2 && i + 2 < len && (unsigned char) t[i + 1] == 0x80 &&
               ((unsigned char) t[i + 2] == 0xA8 || (unsigned char) t[i + 2] == 0xA9);
}

static bool is_continuation(char c)
{
        return ((unsigned char) c & 0xC0) == 0x80;
}

/* Every line that starts with SOURCE_PREFIX (lines end at \n or \r, as helm writes them). */
static void find_sources(struct scan *s)
{
        const size_t prefix = strlen(SOURCE_PREFIX);
        size_t cap = 0, index = 0;

        for (size_t i = s->bom; i < s->len; i++) {
                bool line_start = i == s->bom || s->text[i - 1] == '\n' || s->text[i - 1] == '\r';
                if (line_start && s->len - i > prefix && memcmp(s->text + i, SOURCE_PREFIX, prefix) == 0) {
                        size_t begin = i + prefix, end = begin;
                        while (end < s->len && !is_line_break_at(s->text, s->len, end))
                                end++;
                        while (end > begin && (s->text[end - 1] == ' ' || s->text[end - 1] == '\t'))
                                end--;
                        if (end > begin) {
                                if (s->n_sources == cap) {
                                        cap = cap ? 2 * cap : 16;
                                        s->sources = ao_xreallocarray(s->sources, cap, sizeof(*s->sources));
                                }
                                s->sources[s->n_sources++] = (struct source){
                                    .index = index,
                                    .path = s->text + begin,
                                    .len = end - begin,
                                };
                        }
                }
                if (!is_continuation(s->text[i]))
                        index++;
        }
}

static void add_doc(struct scan *s, size_t start, size_t *cap)
{
        if (s->n_docs == *cap) {
                *cap = *cap ? 2 * *cap : 16;
                s->docs = ao_xreallocarray(s->docs, *cap, sizeof(*s->docs));
        }
        s->docs[s->n_docs++] = (struct doc){.start = start, .root = SIZE_MAX};
}

/* The loader's -EINVAL (syntax, content) is malformed output here, as for the other parsers of helm's output. */
static int bad_output(int r, struct ao_error *reterr)
{
        if (r != -EINVAL)
                return r;
        if (reterr)
                reterr->code = -EBADMSG;
        return -EBADMSG;
}

/*
 * The error for a stream the first pass refuses: ao_yaml_load_stream()'s, so
 * that it reads as every other YAML error. It refuses the same text (same
 * libyaml, same depth limit); should it not, @code and @problem are used.
 */
static int stream_error(const struct scan *s, int code, const char *problem, struct ao_error *reterr)
{
        _cleanup_(json_deletep) cJSON *docs = NULL;
        int r = ao_yaml_load_stream(s->text, s->len, WHAT, &docs, reterr);

        if (r < 0)
                return bad_output(r, reterr);
        return ao_error_set(reterr, code, "%s: %s", WHAT, problem);
}

static void set_root(struct scan *s, const yaml_event_t *ev)
{
        if (s->n_docs > 0 && s->docs[s->n_docs - 1].root == SIZE_MAX)
                s->docs[s->n_docs - 1].root = ev->start_mark.index;
}

/* A scalar spans [start, end): the "# Source: " lines strictly inside it are text. */
static void place_sources(struct scan *s, const yaml_event_t *ev, size_t *next)
{
        while (*next < s->n_sources && s->sources[*next].index <= ev->start_mark.index)
                (*next)++;
        while (*next < s->n_sources && s->sources[*next].index < ev->end_mark.index)
                s->sources[(*next)++].in_scalar = true;
}

static int scan_events(struct scan *s, struct ao_error *reterr)
{
        yaml_parser_t parser;
        size_t next_source = 0, cap = 0;
        unsigned depth = 0;
        int r = 0;

        if (!yaml_parser_initialize(&parser))
                return ao_error_set(reterr, -ENOMEM, "%s: out of memory", WHAT);
        yaml_parser_set_input_string(&parser, (const unsigned char *) s->text, s->len);
        for (bool done = false; !done && r >= 0;) {
                yaml_event_t ev;
                if (!yaml_parser_parse(&parser, &ev)) {
                        r = parser.error == YAML_MEMORY_ERROR
                                ? ao_error_set(reterr, -ENOMEM, "%s: out of memory", WHAT)
                                : stream_error(s, -EBADMSG, parser.problem ? parser.problem : "invalid YAML",
                                               reterr);
                        break;
                }
                switch (ev.type) {
                case YAML_DOCUMENT_START_EVENT:
                        add_doc(s, ev.start_mark.index, &cap);
                        break;
                case YAML_SEQUENCE_START_EVENT:
                case YAML_MAPPING_START_EVENT:
                        set_root(s, &ev);
                        /* The loader's limit, checked here too: libyaml's stacks grow with the nesting. */
                        if (++depth > AO_YAML_MAX_DEPTH)
                                r = stream_error(s, -E2BIG, "nesting too deep", reterr);
                        break;
                case YAML_SEQUENCE_END_EVENT:
                case YAML_MAPPING_END_EVENT:
                        depth--;
                        break;
                case YAML_SCALAR_EVENT:
                        set_root(s, &ev);
                        place_sources(s, &ev, &next_source);
                        break;
                case YAML_ALIAS_EVENT:
                        set_root(s, &ev);
                        break;
                case YAML_STREAM_END_EVENT:
                        done = true;
                        break;
                default:
                        break;
                }
                yaml_event_delete(&ev);
        }
        yaml_parser_delete(&parser);
        return r;
}

/* Byte offsets of the documents' starts (character indices, in increasing order). */
static void locate_docs(struct scan *s)
{
        size_t offset = s->bom, index = 0;

        for (size_t d = 0; d < s->n_docs; d++) {
                while (index < s->docs[d].start && offset < s->len) {
                        offset++;
                        while (offset < s->len && is_continuation(s->text[offset]))
                                offset++;
                        index++;
                }
                s->docs[d].offset = d == 0 ? 0 : offset;
        }
}

/* ---- the second pass ----------------------------------------------------------------------------- */

/* How errors name a document: its source path (sanitised, cut) or "document N". */
static void doc_label(const struct source *src, size_t number, char *buf, size_t size)
{
        if (!src) {
                (void) snprintf(buf, size, "document %zu", number);
                return;
        }
        struct ao_strbuf sb = {0};
        ao_quote_text(&sb, src->path, src->len, LABEL_MAX);
        (void) snprintf(buf, size, "%s", ao_strbuf_str(&sb));
        ao_strbuf_done(&sb);
}

/* Where an object is: its document's label, and "items[N]: " for a List's items. */
struct where {
        const char *label;
        char item[48];
};

/* The string @key of @parent, copied to *@ret; "" and null count as absent, which @required refuses. */
static int read_string(const struct where *w, const cJSON *parent, const char *key, const char *field,
                       bool required, char **ret, struct ao_error *reterr)
{
        const cJSON *json = cJSON_GetObjectItemCaseSensitive(parent, key);

        *ret = NULL;
        if (json && !cJSON_IsNull(json) && !cJSON_IsString(json))
                return ao_error_set(reterr, -EBADMSG, "%s: %s%s is not a string", w->label, w->item, field);
        if (!cJSON_IsString(json) || json->valuestring[0] == '\0') {
                if (!required)
                        return 0;
                return ao_error_set(reterr, -EBADMSG, "%s: %s%s is %s", w->label, w->item, field,
                                    cJSON_IsString(json) ? "empty" : "missing");
        }
        *ret = ao_xstrdup(json->valuestring);
        return 0;
}

static int add_object(const struct where *w, const cJSON *json, struct ao_helm_manifest *m, size_t *cap,
                      struct ao_error *reterr)
{
        struct ao_helm_object o = {0};
        int r;

        if ((r = read_string(w, json, "apiVersion", "apiVersion", true, &o.api_version, reterr)) < 0 ||
            (r = read_string(w, json, "kind", "kind", true, &o.kind, reterr)) < 0)
                goto fail;
        const cJSON *metadata = cJSON_GetObjectItemCaseSensitive(json, "metadata");
        if (metadata && !cJSON_IsNull(metadata) && !cJSON_IsObject(metadata)) {
                r = ao_error_set(reterr, -EBADMSG, "%s: %smetadata is %s, not a mapping", w->label, w->item,
                                 ao_json_type_name(metadata, AO_JSON_WORDS_YAML));
                goto fail;
        }
        if ((r = read_string(w, metadata, "name", "metadata.name", true, &o.name, reterr)) < 0 ||
            (r = read_string(w, metadata, "namespace", "metadata.namespace", false, &o.namespace, reterr)) <
                0)
                goto fail;
        const cJSON *annotations = cJSON_GetObjectItemCaseSensitive(metadata, "annotations");
        o.hook = cJSON_IsObject(annotations) && cJSON_GetObjectItemCaseSensitive(annotations, "helm.sh/hook");

        if (m->n == *cap) {
                *cap = *cap ? 2 * *cap : 16;
                m->objects = ao_xreallocarray(m->objects, *cap, sizeof(*m->objects));
        }
        m->objects[m->n++] = o;
        return 0;
fail:
        object_done(&o);
        return r;
}

static bool is_list_kind(const char *kind)
{
        size_t n = strlen(kind);
        return n >= 4 && strcmp(kind + n - 4, "List") == 0;
}

/* The objects of one document: itself, or the items of a List. */
static int add_document(const char *label, const cJSON *doc, struct ao_helm_manifest *m, size_t *cap,
                        struct ao_error *reterr)
{
        struct where w = {.label = label};

        if (!cJSON_IsObject(doc))
                return ao_error_set(reterr, -EBADMSG, "%s: the document is %s, not a mapping", label,
                                    ao_json_type_name(doc, AO_JSON_WORDS_YAML));
        const cJSON *kind = cJSON_GetObjectItemCaseSensitive(doc, "kind");
        const cJSON *items = cJSON_GetObjectItemCaseSensitive(doc, "items");
        if (!cJSON_IsString(kind) || !is_list_kind(kind->valuestring) || !cJSON_IsArray(items))
                return add_object(&w, doc, m, cap, reterr);

        _cleanup_free_ char *api_version = NULL;
        int r = read_string(&w, doc, "apiVersion", "apiVersion", true, &api_version, reterr);
        if (r < 0)
                return r;
        size_t i = 0;
        for (const cJSON *item = items->child; item; item = item->next, i++) {
                (void) snprintf(w.item, sizeof(w.item), "items[%zu]: ", i);
                if (!cJSON_IsObject(item))
                        return ao_error_set(reterr, -EBADMSG, "%s: items[%zu] is %s, not a mapping", label, i,
                                            ao_json_type_name(item, AO_JSON_WORDS_YAML));
                if ((r = add_object(&w, item, m, cap, reterr)) < 0)
                        return r;
        }
        return 0;
}

/* A document that does not load alone: the whole stream's error, named after the document. */
static int doc_error(const struct scan *s, const char *label, const struct ao_error *doc_err, int code,
                     struct ao_error *reterr)
{
        _cleanup_(json_deletep) cJSON *docs = NULL;
        int r = ao_yaml_load_stream(s->text, s->len, WHAT, &docs, reterr);

        if (r < 0) {
                (void) ao_error_prefix(reterr, "%s", label);
                return bad_output(r, reterr);
        }
        /* Only the stream-wide alias ratio can tell them apart: keep the document's error. */
        return bad_output(ao_error_set(reterr, code, "%s", doc_err->msg), reterr);
}

static int load_docs(const struct scan *s, struct ao_helm_manifest *m, struct ao_error *reterr)
{
        size_t cap = 0, next_source = 0;
        const struct source *source = NULL;

        for (size_t d = 0; d < s->n_docs; d++) {
                while (next_source < s->n_sources && s->sources[next_source].index < s->docs[d].root) {
                        if (!s->sources[next_source].in_scalar)
                                source = &s->sources[next_source];
                        next_source++;
                }
                char label[LABEL_MAX + 8];
                doc_label(source, d + 1, label, sizeof(label));

                size_t end = d + 1 < s->n_docs ? s->docs[d + 1].offset : s->len;
                _cleanup_(json_deletep) cJSON *doc = NULL;
                struct ao_error err = {0};
                int r = ao_yaml_load(s->text + s->docs[d].offset, end - s->docs[d].offset, label, &doc, &err);
                if (r < 0)
                        return doc_error(s, label, &err, r, reterr);
                if (cJSON_IsNull(doc))
                        continue;
                if ((r = add_document(label, doc, m, &cap, reterr)) < 0)
                        return r;
        }
        return 0;
}

int ao_helm_manifest_parse(const char *text, size_t len, struct ao_helm_manifest *ret,
                           struct ao_error *reterr)
{
        _cleanup_(ao_helm_manifest_clear) struct ao_helm_manifest m = {0};
        struct scan s = {.text = text, .len = len};
        int r;

        if (len > AO_YAML_MAX_INPUT)
                return stream_error(&s, -EFBIG, "input is too large", reterr);
        /* libyaml reads UTF-16 after its byte order mark; helm never writes it, and offsets here are UTF-8. */
        if (len >= 2 && (((unsigned char) text[0] == 0xFE && (unsigned char) text[1] == 0xFF) ||
                         ((unsigned char) text[0] == 0xFF && (unsigned char) text[1] == 0xFE)))
                return ao_error_set(reterr, -EBADMSG, "%s: UTF-16 is not supported", WHAT);
        s.bom = ao_input_bom(text, len);

        find_sources(&s);
        r = scan_events(&s, reterr);
        if (r >= 0) {
                locate_docs(&s);
                r = load_docs(&s, &m, reterr);
        }
        scan_done(&s);
        if (r < 0)
                return r;
        *ret = m;
        m = (struct ao_helm_manifest){0};
        return 0;
}
