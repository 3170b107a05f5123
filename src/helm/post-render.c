/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/helm-post-render.h"

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
#include "ao/quote.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"

/*
 * The manifest goes through libyaml's document API: each document is loaded
 * as a graph of nodes, its objects get their labels, and the dumper writes it
 * back. Nodes keep what the text said (a scalar's value, style and tag, a
 * collection's style), so a number stays the digits it was and a quoted
 * string stays quoted; a node reached twice is written with an anchor and an
 * alias again. What the dumper cannot keep is comments. Those between
 * documents ("# Source: ...", helm's, and whatever a test fake adds) are
 * copied from the text: they lie after the last scalar or flow collection of
 * one document and before the top node of the next (libyaml's marks for
 * block collections run past trailing comments, so those are not used).
 * libyaml's marks count characters, not bytes: they are turned into byte
 * offsets walking forward through the UTF-8 text.
 *
 * The stream is first run through the event parser alone, which checks the
 * nesting (the dumper recurses) and the node count before anything is
 * loaded; its errors are ao_yaml_load_stream()'s, so they read as every
 * other YAML error.
 */

#define WHAT          "rendered manifest"
#define SOURCE_PREFIX "# Source: "
#define NAME_MAX_LEN  200 /* bytes of a source path shown in errors */

#define TAG_NULL   "tag:yaml.org,2002:null"
#define TAG_MERGE  "tag:yaml.org,2002:merge"
#define TAG_BINARY "tag:yaml.org,2002:binary"

/* ---- labels -------------------------------------------------------------------------------------- */

static bool is_blank(char c)
{
        return c == ' ' || c == '\t';
}

static void trim(const char **s, size_t *len)
{
        while (*len > 0 && is_blank(**s)) {
                (*s)++;
                (*len)--;
        }
        while (*len > 0 && is_blank((*s)[*len - 1]))
                (*len)--;
}

/* Labels are ASCII: anything else could only be written as YAML escapes. */
static bool is_printable(const char *s, size_t len)
{
        for (size_t i = 0; i < len; i++)
                if (s[i] < 0x20 || s[i] > 0x7E)
                        return false;
        return true;
}

static void put_label(struct ao_helm_labels *l, const char *key, size_t key_len, const char *value,
                      size_t value_len)
{
        for (size_t i = 0; i < l->n; i++)
                if (strlen(l->items[i].key) == key_len && memcmp(l->items[i].key, key, key_len) == 0) {
                        free(l->items[i].value);
                        l->items[i].value = ao_xstrndup(value, value_len);
                        return;
                }
        l->items = ao_xreallocarray(l->items, l->n + 1, sizeof(*l->items));
        l->items[l->n++] = (struct ao_helm_label){ao_xstrndup(key, key_len), ao_xstrndup(value, value_len)};
}

int ao_helm_labels_parse(const char *text, struct ao_helm_labels *ret, struct ao_error *reterr)
{
        struct ao_helm_labels l = {0};
        for (const char *p = text; *p;) {
                size_t item_len = strcspn(p, ",");
                const char *item = p, *eq = memchr(p, '=', item_len);
                p += item_len + (p[item_len] == ',');
                const char *key = item, *value = eq ? eq + 1 : NULL;
                size_t key_len = eq ? (size_t) (eq - item) : item_len;
                size_t value_len = eq ? item_len - key_len - 1 : 0;
                trim(&key, &key_len);
                if (!eq && key_len == 0)
                        continue; /* an empty item */
                const char *problem = !eq || key_len == 0             ? "is not key=value"
                                      : !is_printable(item, item_len) ? "is not printable ASCII"
                                                                      : NULL;
                if (problem) {
                        _cleanup_(ao_strbuf_done) struct ao_strbuf sb = {0};
                        ao_quote_text(&sb, item, item_len, NAME_MAX_LEN);
                        ao_helm_labels_clear(&l);
                        return ao_error_set(reterr, -EINVAL, "labels: '%s' %s", ao_strbuf_str(&sb), problem);
                }
                trim(&value, &value_len);
                put_label(&l, key, key_len, value, value_len);
        }
        *ret = l;
        return 0;
}

char *ao_helm_labels_format(const struct ao_helm_labels *labels)
{
        struct ao_strbuf sb = {0};
        for (size_t i = 0; i < labels->n; i++)
                ao_strbuf_appendf(&sb, "%s%s=%s", i ? "," : "", labels->items[i].key, labels->items[i].value);
        return ao_strbuf_steal(&sb);
}

void ao_helm_labels_clear(struct ao_helm_labels *labels)
{
        if (!labels)
                return;
        for (size_t i = 0; i < labels->n; i++) {
                free(labels->items[i].key);
                free(labels->items[i].value);
        }
        free(labels->items);
        *labels = (struct ao_helm_labels){0};
}

/* Turns libyaml's character indices, asked in increasing order, into byte offsets. */
struct cursor {
        const char *text;
        size_t len;
        size_t offset; /* byte offset of character @index */
        size_t index;
};

struct render {
        const char *text;
        size_t len;
        size_t bom; /* bytes of a UTF-8 byte order mark, which libyaml does not count */
        struct cursor cursor;
        const struct ao_helm_labels *labels;
        struct ao_strbuf out;
        const char *source; /* the last "# Source: " comment so far: its path (borrowed), or NULL */
        size_t source_len;
        char name[NAME_MAX_LEN + 8]; /* the document being labelled, for errors */
        /*
         * owned: which scalars (numbered in the order of the stream, from 0) are plain and tagged
         * !!str or "!"; the loader makes one node per scalar, in the same order.
         */
        size_t *str_tagged;
        size_t n_str_tagged, next_str_tagged;
        size_t scalars; /* the scalar nodes of the documents loaded so far */
};

/* ---- the stream's limits --------------------------------------------------------------------------- */

static void json_deletep(cJSON **json)
{
        cJSON_Delete(*json);
}

/* libyaml refused the stream: ao_yaml_load_stream()'s message, which refuses the same text. */
static int stream_error(const char *text, size_t len, int code, const char *problem, struct ao_error *reterr)
{
        _cleanup_(json_deletep) cJSON *docs = NULL;
        int r = ao_yaml_load_stream(text, len, WHAT, &docs, reterr);
        if (r < 0) {
                if (r == -EINVAL)
                        reterr->code = r = -EBADMSG;
                return r;
        }
        return ao_error_set(reterr, code, "%s: %s", WHAT, problem);
}

/* A plain scalar with a tag that makes it a string: "!!str 12", "! 12". */
static bool is_str_tagged(const yaml_event_t *ev)
{
        const char *tag = (const char *) ev->data.scalar.tag;
        return ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && tag &&
               (strcmp(tag, "!") == 0 || strcmp(tag, YAML_STR_TAG) == 0);
}

/* The limits, and where the plain scalars tagged as strings are (the loader forgets the tag). */
static int check_stream(struct render *rd, struct ao_error *reterr)
{
        const char *text = rd->text;
        size_t len = rd->len, cap = 0, scalars = 0;
        yaml_parser_t parser;
        unsigned depth = 0;
        size_t nodes = 0;
        int r = 0;
        if (!yaml_parser_initialize(&parser))
                return ao_error_set(reterr, -ENOMEM, "%s: out of memory", WHAT);
        yaml_parser_set_input_string(&parser, (const unsigned char *) text, len);
        for (bool done = false; !done && r >= 0;) {
                yaml_event_t ev;
                if (!yaml_parser_parse(&parser, &ev)) {
                        r = parser.error == YAML_MEMORY_ERROR
                                ? ao_error_set(reterr, -ENOMEM, "%s: out of memory", WHAT)
                                : stream_error(text, len, -EBADMSG,
                                               parser.problem ? parser.problem : "invalid YAML", reterr);
                        break;
                }
                switch (ev.type) {
                case YAML_SEQUENCE_START_EVENT:
                case YAML_MAPPING_START_EVENT:
                        if (++depth > AO_YAML_MAX_DEPTH)
                                r = ao_error_set(reterr, -E2BIG, "%s:%zu:%zu: nesting deeper than %d levels",
                                                 WHAT, ev.start_mark.line + 1, ev.start_mark.column + 1,
                                                 AO_YAML_MAX_DEPTH);
                        /* fall through */
                case YAML_SCALAR_EVENT:
                        if (ev.type == YAML_SCALAR_EVENT && is_str_tagged(&ev)) {
                                if (rd->n_str_tagged == cap) {
                                        cap = cap ? 2 * cap : 16;
                                        rd->str_tagged =
                                            ao_xreallocarray(rd->str_tagged, cap, sizeof(size_t));
                                }
                                rd->str_tagged[rd->n_str_tagged++] = scalars;
                        }
                        if (ev.type == YAML_SCALAR_EVENT)
                                scalars++;
                        if (++nodes > AO_YAML_MAX_NODES)
                                r = ao_error_set(reterr, -E2BIG, "%s: more than %u nodes", WHAT,
                                                 AO_YAML_MAX_NODES);
                        break;
                case YAML_SEQUENCE_END_EVENT:
                case YAML_MAPPING_END_EVENT:
                        depth--;
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

/* ---- positions and the comments between documents ------------------------------------------------ */

static size_t offset_of(struct cursor *c, size_t index)
{
        while (c->index < index && c->offset < c->len) {
                c->offset++;
                while (c->offset < c->len && ((unsigned char) c->text[c->offset] & 0xC0) == 0x80)
                        c->offset++;
                c->index++;
        }
        return c->offset;
}

static bool is_line_break(char c)
{
        return c == '\n' || c == '\r';
}

/*
 * The comment lines of text[from, to), which holds no YAML content: those before the first "---"
 * line are the previous document's (they go out now, before this document's "---"), the others
 * this document's (after it). A "# Source: " line names the documents after it.
 */
static void copy_comments(struct render *r, size_t from, size_t to, struct ao_strbuf *after)
{
        struct ao_strbuf *sink = &r->out;
        for (size_t i = from; i < to;) {
                size_t end = i;
                while (end < to && !is_line_break(r->text[end]))
                        end++;
                bool line_start = i == r->bom || is_line_break(r->text[i - 1]);
                size_t c = i;
                if (line_start && end - i >= 3 && memcmp(r->text + i, "---", 3) == 0 &&
                    (end - i == 3 || is_blank(r->text[i + 3]))) {
                        sink = after;
                        c = i + 3;
                }
                while (c < end && is_blank(r->text[c]))
                        c++;
                if (c < end && r->text[c] == '#') {
                        size_t last = end;
                        while (last > c && is_blank(r->text[last - 1]))
                                last--;
                        ao_strbuf_append_n(sink, r->text + c, last - c);
                        ao_strbuf_append_c(sink, '\n');
                        size_t prefix = strlen(SOURCE_PREFIX);
                        if (c == i && last - c > prefix && memcmp(r->text + c, SOURCE_PREFIX, prefix) == 0) {
                                r->source = r->text + c + prefix;
                                r->source_len = last - c - prefix;
                        }
                }
                i = end + 1;
        }
}

/* How errors name the document: its source path (sanitised, cut) or "document N". */
static void name_document(struct render *r, size_t number)
{
        if (!r->source) {
                (void) snprintf(r->name, sizeof(r->name), "document %zu", number);
                return;
        }
        _cleanup_(ao_strbuf_done) struct ao_strbuf sb = {0};
        ao_quote_text(&sb, r->source, r->source_len, NAME_MAX_LEN);
        (void) snprintf(r->name, sizeof(r->name), "%s", ao_strbuf_str(&sb));
}

/* Where a document's content ends: its last scalar or flow collection. */
static size_t content_end(yaml_document_t *doc)
{
        size_t end = 0;
        for (yaml_node_t *n = doc->nodes.start; n < doc->nodes.top; n++) {
                bool flow =
                    (n->type == YAML_MAPPING_NODE && n->data.mapping.style == YAML_FLOW_MAPPING_STYLE) ||
                    (n->type == YAML_SEQUENCE_NODE && n->data.sequence.style == YAML_FLOW_SEQUENCE_STYLE);
                if ((n->type == YAML_SCALAR_NODE || flow) && n->end_mark.index > end)
                        end = n->end_mark.index;
        }
        return end;
}

/* ---- nodes ------------------------------------------------------------------------------------------ */

static yaml_node_t *node_at(yaml_document_t *doc, int id)
{
        return yaml_document_get_node(doc, id);
}

static bool scalar_is(const yaml_node_t *n, const char *s)
{
        return n && n->type == YAML_SCALAR_NODE && n->data.scalar.length == strlen(s) &&
               memcmp(n->data.scalar.value, s, n->data.scalar.length) == 0;
}

/* What kube reads as null: "", ~ and null unquoted, or the null tag. */
static bool is_null(const yaml_node_t *n)
{
        if (!n || n->type != YAML_SCALAR_NODE)
                return false;
        if (n->tag && strcmp((const char *) n->tag, TAG_NULL) == 0)
                return true;
        if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE ||
            (n->tag && strcmp((const char *) n->tag, YAML_DEFAULT_SCALAR_TAG) != 0))
                return false;
        return scalar_is(n, "") || scalar_is(n, "~") || scalar_is(n, "null") || scalar_is(n, "Null") ||
               scalar_is(n, "NULL");
}

static bool is_merge_key(const yaml_node_t *n)
{
        return n && n->type == YAML_SCALAR_NODE &&
               ((n->tag && strcmp((const char *) n->tag, TAG_MERGE) == 0) ||
                (n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE && scalar_is(n, "<<")));
}

static const char *kind_of(const yaml_node_t *n)
{
        if (n->type == YAML_MAPPING_NODE)
                return "a mapping";
        return n->type == YAML_SEQUENCE_NODE ? "a sequence" : "a scalar";
}

static int out_of_memory(struct ao_error *reterr)
{
        return ao_error_set(reterr, -ENOMEM, "%s: out of memory", WHAT);
}

/* ---- what the dumper would change ----------------------------------------------------------------- */

/*
 * An empty plain scalar, which reads as null (also under a tag the reader does not know) unless it
 * is a binary one. Strings tagged as such are quoted already.
 */
static bool is_empty_plain(const yaml_node_t *n)
{
        return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
               n->data.scalar.length == 0 && !(n->tag && strcmp((const char *) n->tag, TAG_BINARY) == 0);
}

/* An empty plain null where the emitter would write '' (a string) instead: written "~". */
static int spell_null(yaml_document_t *doc, int id)
{
        yaml_node_t *n = node_at(doc, id);
        if (!is_empty_plain(n))
                return 0;
        yaml_char_t *tilde = (yaml_char_t *) strdup("~");
        if (!tilde)
                return -ENOMEM;
        free(n->data.scalar.value);
        n->data.scalar.value = tilde;
        n->data.scalar.length = 1;
        return 0;
}

/*
 * The dumper writes a plain scalar with the string tag without its tag, where it would read back
 * as a number or boolean: those tagged in the text ("!!str 12") are double-quoted instead. And it
 * writes an empty plain scalar (null) as '' (a string) where plain cannot be empty: a mapping key,
 * or inside a flow collection.
 */
static int keep_meaning(struct render *r, yaml_document_t *doc, struct ao_error *reterr)
{
        int n = (int) (doc->nodes.top - doc->nodes.start);
        for (int id = 1; id <= n; id++) {
                yaml_node_t *s = node_at(doc, id);
                if (s->type != YAML_SCALAR_NODE)
                        continue;
                size_t number = r->scalars++;
                if (r->next_str_tagged < r->n_str_tagged && r->str_tagged[r->next_str_tagged] == number) {
                        r->next_str_tagged++;
                        s->data.scalar.style = YAML_DOUBLE_QUOTED_SCALAR_STYLE;
                }
        }
        /* Then the nulls: a scalar quoted above is a string, not one of them. */
        for (int id = 1; id <= n; id++) {
                yaml_node_t *c = node_at(doc, id);
                int k = 0;
                if (c->type == YAML_MAPPING_NODE) {
                        bool flow = c->data.mapping.style == YAML_FLOW_MAPPING_STYLE;
                        for (yaml_node_pair_t *p = c->data.mapping.pairs.start;
                             p < c->data.mapping.pairs.top && k >= 0; p++)
                                if ((k = spell_null(doc, p->key)) >= 0 && flow)
                                        k = spell_null(doc, p->value);
                } else if (c->type == YAML_SEQUENCE_NODE &&
                           c->data.sequence.style == YAML_FLOW_SEQUENCE_STYLE) {
                        for (yaml_node_item_t *i = c->data.sequence.items.start;
                             i < c->data.sequence.items.top && k >= 0; i++)
                                k = spell_null(doc, *i);
                }
                if (k < 0)
                        return out_of_memory(reterr);
        }
        return 0;
}

/* ---- labels into an object --------------------------------------------------------------------------- */

/* The pair of mapping @id whose key is @key: its index, or -1. -EBADMSG when there are two. */
static int find_pair(struct render *r, yaml_document_t *doc, int id, const char *key, const char *field,
                     bool *ret_merge, struct ao_error *reterr)
{
        yaml_node_t *m = node_at(doc, id);
        int found = -1;
        *ret_merge = false;
        for (yaml_node_pair_t *p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
                yaml_node_t *k = node_at(doc, p->key);
                if (is_merge_key(k)) {
                        *ret_merge = true;
                        continue;
                }
                if (!scalar_is(k, key))
                        continue;
                if (found >= 0)
                        return ao_error_set(reterr, -EBADMSG, "%s: %s appears twice", r->name, field);
                found = (int) (p - m->data.mapping.pairs.start);
        }
        return found;
}

/* A scalar is copied, so that the copy and the original are not written as anchor and alias. */
static int copy_scalar(yaml_document_t *doc, int id)
{
        yaml_node_t *n = node_at(doc, id);
        if (n->type != YAML_SCALAR_NODE)
                return id;
        return yaml_document_add_scalar(doc, n->tag, n->data.scalar.value, (int) n->data.scalar.length,
                                        n->data.scalar.style);
}

/*
 * A new mapping with the pairs of mapping @id (scalars copied, collections shared): changing it
 * leaves whatever else refers to @id (an alias) as it was. Adding nodes may move them all: nodes
 * are looked up by number after each.
 */
static int copy_mapping(yaml_document_t *doc, int id)
{
        yaml_node_t *m = node_at(doc, id);
        int copy = yaml_document_add_mapping(doc, m->tag, m->data.mapping.style);
        if (!copy)
                return 0;
        for (int i = 0;; i++) {
                m = node_at(doc, id);
                if (i >= m->data.mapping.pairs.top - m->data.mapping.pairs.start)
                        return copy;
                yaml_node_pair_t p = m->data.mapping.pairs.start[i];
                int key = copy_scalar(doc, p.key), value = key ? copy_scalar(doc, p.value) : 0;
                if (!value || !yaml_document_append_mapping_pair(doc, copy, key, value))
                        return 0;
        }
}

/*
 * A string that reads as itself unquoted: a letter first, then label characters, and no YAML 1.1
 * boolean or null word (kube's YAML reads "on" and "no" as booleans).
 */
static bool plain_is_string(const char *s)
{
        static const char *const words[] = {"y", "yes", "n", "no", "true", "false", "on", "off", "null"};
        if (!((s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z')))
                return false;
        for (const char *p = s; *p; p++)
                if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./", *p))
                        return false;
        for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
                if (strcasecmp(s, words[i]) == 0)
                        return false;
        return true;
}

static int add_string(yaml_document_t *doc, const char *s)
{
        yaml_scalar_style_t style =
            plain_is_string(s) ? YAML_PLAIN_SCALAR_STYLE : YAML_DOUBLE_QUOTED_SCALAR_STYLE;
        return yaml_document_add_scalar(doc, NULL, (const yaml_char_t *) s, (int) strlen(s), style);
}

/*
 * The mapping that pair @key of mapping @parent is to hold: a copy of its mapping, or a new one
 * when it is absent or null. *@ret_index is the pair's index (-1: absent).
 */
static int child_mapping(struct render *r, yaml_document_t *doc, int parent, const char *key,
                         const char *field, int *ret_child, int *ret_index, struct ao_error *reterr)
{
        bool merge;
        int index = find_pair(r, doc, parent, key, field, &merge, reterr);
        if (index < -1)
                return index;
        if (index < 0 && merge)
                return ao_error_set(reterr, -EBADMSG,
                                    "%s: %s comes from a merge key (<<): labels cannot be added", r->name,
                                    field);
        yaml_node_t *m = node_at(doc, parent);
        int value = index >= 0 ? m->data.mapping.pairs.start[index].value : 0;
        yaml_node_t *v = value ? node_at(doc, value) : NULL;
        int child;
        if (v && v->type == YAML_MAPPING_NODE)
                child = copy_mapping(doc, value);
        else if (!v || is_null(v))
                child = yaml_document_add_mapping(doc, NULL, YAML_BLOCK_MAPPING_STYLE);
        else
                return ao_error_set(reterr, -EBADMSG, "%s: %s is %s, not a mapping", r->name, field,
                                    kind_of(v));
        if (!child)
                return out_of_memory(reterr);
        *ret_child = child;
        *ret_index = index;
        return 0;
}

/* Pair @index of mapping @parent gets the value @value; -1 appends the pair @key: @value. */
static int set_pair(yaml_document_t *doc, int parent, int index, const char *key, int value,
                    struct ao_error *reterr)
{
        if (index >= 0) {
                node_at(doc, parent)->data.mapping.pairs.start[index].value = value;
                return 0;
        }
        int k = add_string(doc, key);
        if (!k || !yaml_document_append_mapping_pair(doc, parent, k, value))
                return out_of_memory(reterr);
        return 0;
}

static int put_labels(struct render *r, yaml_document_t *doc, int object, const char *item,
                      struct ao_error *reterr)
{
        char field[64];
        int metadata, metadata_index, labels, labels_index, r_;
        (void) snprintf(field, sizeof(field), "%smetadata", item);
        if ((r_ = child_mapping(r, doc, object, "metadata", field, &metadata, &metadata_index, reterr)) < 0)
                return r_;
        (void) snprintf(field, sizeof(field), "%smetadata.labels", item);
        if ((r_ = child_mapping(r, doc, metadata, "labels", field, &labels, &labels_index, reterr)) < 0)
                return r_;
        for (size_t i = 0; i < r->labels->n; i++) {
                bool merge;
                char label_field[sizeof(field) + 32];
                (void) snprintf(label_field, sizeof(label_field), "%s key '%s'", field,
                                r->labels->items[i].key);
                int index = find_pair(r, doc, labels, r->labels->items[i].key, label_field, &merge, reterr);
                int value = add_string(doc, r->labels->items[i].value);
                if (index < -1)
                        return index;
                if (!value)
                        return out_of_memory(reterr);
                if ((r_ = set_pair(doc, labels, index, r->labels->items[i].key, value, reterr)) < 0)
                        return r_;
        }
        if ((r_ = set_pair(doc, metadata, labels_index, "labels", labels, reterr)) < 0)
                return r_;
        return set_pair(doc, object, metadata_index, "metadata", metadata, reterr);
}

/* The objects of a document: the items of a List, or the document itself. */
static int label_document(struct render *r, yaml_document_t *doc, struct ao_error *reterr)
{
        yaml_node_t *root = yaml_document_get_root_node(doc);
        if (root->type != YAML_MAPPING_NODE)
                return ao_error_set(reterr, -EBADMSG, "%s: the document is %s, not a mapping", r->name,
                                    kind_of(root));
        int kind = 0, items = 0;
        for (yaml_node_pair_t *p = root->data.mapping.pairs.start; p < root->data.mapping.pairs.top; p++) {
                if (scalar_is(node_at(doc, p->key), "kind"))
                        kind = p->value;
                else if (scalar_is(node_at(doc, p->key), "items"))
                        items = p->value;
        }
        yaml_node_t *k = kind ? node_at(doc, kind) : NULL, *list = items ? node_at(doc, items) : NULL;
        bool is_list = k && k->type == YAML_SCALAR_NODE && k->data.scalar.length >= 4 &&
                       memcmp(k->data.scalar.value + k->data.scalar.length - 4, "List", 4) == 0 && list &&
                       list->type == YAML_SEQUENCE_NODE;
        if (!is_list)
                return put_labels(r, doc, 1, "", reterr);
        size_t n = (size_t) (list->data.sequence.items.top - list->data.sequence.items.start);
        for (size_t i = 0; i < n; i++) {
                int id = node_at(doc, items)->data.sequence.items.start[i];
                char item[32];
                (void) snprintf(item, sizeof(item), "items[%zu]", i);
                if (node_at(doc, id)->type != YAML_MAPPING_NODE)
                        return ao_error_set(reterr, -EBADMSG, "%s: %s is %s, not a mapping", r->name, item,
                                            kind_of(node_at(doc, id)));
                /* An item reached twice (an alias) is labelled once, as the one object it writes twice. */
                (void) snprintf(item, sizeof(item), "items[%zu].", i);
                int r_ = put_labels(r, doc, id, item, reterr);
                if (r_ < 0)
                        return r_;
        }
        return 0;
}

/* ---- writing ------------------------------------------------------------------------------------------- */

static int write_out(void *data, unsigned char *buffer, size_t size)
{
        ao_strbuf_append_n(data, (const char *) buffer, size);
        return 1;
}

/* @doc (deleted here) as YAML text: no "---" (ours is written before), no directives. */
static int emit(struct render *r, yaml_document_t *doc, struct ao_error *reterr)
{
        yaml_emitter_t emitter;
        if (!yaml_emitter_initialize(&emitter)) {
                yaml_document_delete(doc);
                return out_of_memory(reterr);
        }
        yaml_emitter_set_output(&emitter, write_out, &r->out);
        yaml_emitter_set_encoding(&emitter, YAML_UTF8_ENCODING);
        yaml_emitter_set_unicode(&emitter, 1);
        yaml_emitter_set_width(&emitter, -1); /* no folding of long lines */
        yaml_emitter_set_indent(&emitter, 2);
        /* Directives would need a "---" of the emitter's own; the tags they abbreviate are kept whole. */
        for (yaml_tag_directive_t *t = doc->tag_directives.start; t < doc->tag_directives.end; t++) {
                free(t->handle);
                free(t->prefix);
        }
        free(doc->tag_directives.start);
        doc->tag_directives.start = doc->tag_directives.end = NULL;
        free(doc->version_directive);
        doc->version_directive = NULL;
        doc->start_implicit = doc->end_implicit = 1;
        bool ok = yaml_emitter_open(&emitter) && yaml_emitter_dump(&emitter, doc) &&
                  yaml_emitter_close(&emitter) && yaml_emitter_flush(&emitter);
        int code = emitter.error == YAML_MEMORY_ERROR ? -ENOMEM : -EBADMSG;
        _cleanup_free_ char *problem =
            ok ? NULL : ao_xstrdup(emitter.problem ? emitter.problem : "unknown error");
        yaml_emitter_delete(&emitter);
        if (!ok)
                return ao_error_set(reterr, code, "%s: cannot be written: %s", r->name, problem);
        return 0;
}

/* Load, label and write each document in turn; empty and null ones are dropped. */
static int render_documents(struct render *r, struct ao_error *reterr)
{
        yaml_parser_t parser;
        size_t gap = r->bom, number = 0;
        int k = 0;
        if (!yaml_parser_initialize(&parser))
                return out_of_memory(reterr);
        yaml_parser_set_input_string(&parser, (const unsigned char *) r->text, r->len);
        _cleanup_(ao_strbuf_done) struct ao_strbuf after = {0};
        while (k >= 0) {
                yaml_document_t doc;
                if (!yaml_parser_load(&parser, &doc)) {
                        k = parser.error == YAML_MEMORY_ERROR
                                ? out_of_memory(reterr)
                                : stream_error(r->text, r->len, -EBADMSG,
                                               parser.problem ? parser.problem : "invalid YAML", reterr);
                        break;
                }
                yaml_node_t *root = yaml_document_get_root_node(&doc);
                if (!root) { /* the end of the stream */
                        yaml_document_delete(&doc);
                        break;
                }
                number++;
                if (is_null(root)) {
                        r->scalars++; /* its only node */
                        yaml_document_delete(&doc);
                        continue;
                }
                size_t start = offset_of(&r->cursor, root->start_mark.index);
                ao_strbuf_reset(&after);
                copy_comments(r, gap, start, &after);
                name_document(r, number);
                gap = offset_of(&r->cursor, content_end(&doc));
                ao_strbuf_append(&r->out, "---\n");
                ao_strbuf_append_n(&r->out, after.buf ? after.buf : "", after.len);
                k = keep_meaning(r, &doc, reterr);
                if (k >= 0)
                        k = label_document(r, &doc, reterr);
                if (k >= 0)
                        k = emit(r, &doc, reterr); /* deletes the document */
                else
                        yaml_document_delete(&doc);
        }
        yaml_parser_delete(&parser);
        if (k >= 0) {
                ao_strbuf_reset(&after);
                copy_comments(r, gap, r->len, &after);
                ao_strbuf_append_n(&r->out, after.buf ? after.buf : "", after.len);
        }
        return k;
}

int ao_helm_post_render(const char *text, size_t len, const struct ao_helm_labels *labels, char **ret,
                        size_t *ret_len, struct ao_error *reterr)
{
        if (len > AO_HELM_POST_RENDER_MAX_INPUT)
                return ao_error_set(reterr, -EFBIG, "%s: larger than %u MiB", WHAT,
                                    AO_HELM_POST_RENDER_MAX_INPUT >> 20);
        /* libyaml reads UTF-16 after its byte order mark; helm never writes it, and offsets here are UTF-8. */
        if (len >= 2 && (((unsigned char) text[0] == 0xFE && (unsigned char) text[1] == 0xFF) ||
                         ((unsigned char) text[0] == 0xFF && (unsigned char) text[1] == 0xFE)))
                return ao_error_set(reterr, -EBADMSG, "%s: UTF-16 is not supported", WHAT);
        size_t bom = ao_input_bom(text, len);
        struct render r = {
            .text = text, .len = len, .bom = bom, .cursor = {text, len, bom, 0}, .labels = labels};
        int k = check_stream(&r, reterr);
        if (k >= 0)
                k = render_documents(&r, reterr);
        free(r.str_tagged);
        if (k < 0) {
                ao_strbuf_done(&r.out);
                return k;
        }
        *ret_len = r.out.len;
        *ret = ao_strbuf_steal(&r.out);
        return 0;
}
