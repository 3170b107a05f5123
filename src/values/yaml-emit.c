/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/yaml.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <yaml.h>

#include "ao/alloc.h"
#include "ao/strbuf.h"

#include "yaml-internal.h"

/*
 * cJSON → YAML text through libyaml's emitter, walking the tree on an
 * explicit stack (any depth, no recursion; libyaml keeps its own state on
 * the heap too).
 *
 * libyaml decides whether a scalar *can* be written plain (indicators,
 * leading or trailing spaces, line breaks, unprintable characters) and
 * falls back to a quoted style by itself; what it does not know is how a
 * plain scalar resolves. So a string is requested plain only when the
 * loader would read the plain scalar back as that same string
 * (yaml_plain_is_string(): not "", "true", "yes", "~", "0x1F", ".inf"...),
 * and double-quoted otherwise, as go-yaml and kubectl write them
 * (enabled: "true").
 *
 * Multi-line strings ask for the literal style ('|', libyaml adds the
 * chomping and indentation indicators, and falls back to double quotes when
 * a line ends in spaces or a line starts with a space after a break); a
 * string with a line break other than '\n' is always double-quoted, because
 * libyaml copies '\r' raw into literal and single-quoted scalars and the
 * parser then normalises it to '\n'. Mapping keys with a line break are
 * double-quoted too. Double-quoted scalars escape every break and
 * unprintable character, so they carry any string.
 *
 * Numbers: finite ones as ao_json_canonical() writes them (integers below
 * 1e21 without exponent, others the shortest text that reads back),
 * infinities and NaN as .inf/-.inf/.nan (canonical JSON makes those null
 * either way). Raw nodes (never produced by the loader) are written as null.
 *
 * Allocation failures abort, as for ao_strbuf: the emitter never fails on
 * content, since strings are made valid UTF-8 first (invalid bytes become
 * U+FFFD, as in ao_json_canonical()).
 */

/* One open array or object: the child to write next. */
struct frame {
        const cJSON *next; /* borrowed */
        bool object;
};

struct emitter {
        yaml_emitter_t yaml;
        struct ao_strbuf out;
};

static int write_output(void *data, unsigned char *buffer, size_t size)
{
        ao_strbuf_append_n(data, (const char *) buffer, size);
        return 1;
}

/* libyaml refuses an event only when out of memory (we never build an invalid sequence). */
static void emit(struct emitter *e, yaml_event_t *ev, int ok)
{
        if (!ok || !yaml_emitter_emit(&e->yaml, ev))
                abort();
}

/* @s with invalid UTF-8 replaced: @s itself when valid, else a copy in *ret_owned. */
static const char *valid_utf8(const char *s, char **ret_owned)
{
        const unsigned char *p = (const unsigned char *) s;
        size_t len = strlen(s), i = 0;
        while (i < len) {
                size_t n = ao_utf8_sequence_length(p + i, len - i);
                if (n == 0)
                        break;
                i += n;
        }
        if (i == len)
                return s;

        struct ao_strbuf sb = {0};
        ao_strbuf_append_n(&sb, s, i);
        while (i < len) {
                size_t n = ao_utf8_sequence_length(p + i, len - i);
                if (n == 0) {
                        ao_strbuf_append(&sb, "\xEF\xBF\xBD");
                        n = 1;
                } else {
                        ao_strbuf_append_n(&sb, s + i, n);
                }
                i += n;
        }
        *ret_owned = ao_strbuf_steal(&sb);
        return *ret_owned;
}

/* YAML 1.1 line breaks: '\n' sets *ret_newlines, the others ('\r', NEL, LS, PS) make it return true. */
static bool has_other_breaks(const char *s, bool *ret_newlines)
{
        bool newlines = false;
        for (const unsigned char *p = (const unsigned char *) s; *p; p++) {
                if (*p == '\n')
                        newlines = true;
                else if (*p == '\r' || (p[0] == 0xC2 && p[1] == 0x85) ||
                         (p[0] == 0xE2 && p[1] == 0x80 && (p[2] == 0xA8 || p[2] == 0xA9)))
                        return true;
        }
        *ret_newlines = newlines;
        return false;
}

static yaml_scalar_style_t string_style(const char *s, bool key)
{
        bool newlines = false;
        if (has_other_breaks(s, &newlines))
                return YAML_DOUBLE_QUOTED_SCALAR_STYLE;
        if (newlines)
                return key ? YAML_DOUBLE_QUOTED_SCALAR_STYLE : YAML_LITERAL_SCALAR_STYLE;
        /* A plain '<<' key is a merge key. */
        if (!yaml_plain_is_string(s) || strcmp(s, "<<") == 0)
                return YAML_DOUBLE_QUOTED_SCALAR_STYLE;
        return YAML_PLAIN_SCALAR_STYLE;
}

static void emit_text(struct emitter *e, const char *text, yaml_scalar_style_t style)
{
        yaml_event_t ev;
        /* plain_implicit and quoted_implicit: no tag is ever written. */
        emit(e, &ev,
             yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *) text, (int) strlen(text), 1, 1,
                                          style));
}

static void emit_string(struct emitter *e, const char *s, bool key)
{
        _cleanup_free_ char *owned = NULL;
        const char *text = valid_utf8(s ? s : "", &owned);
        emit_text(e, text, string_style(text, key));
}

static void emit_number(struct emitter *e, double d)
{
        if (isnan(d)) {
                emit_text(e, ".nan", YAML_PLAIN_SCALAR_STYLE);
                return;
        }
        if (isinf(d)) {
                emit_text(e, d > 0 ? ".inf" : "-.inf", YAML_PLAIN_SCALAR_STYLE);
                return;
        }
        cJSON number = {.type = cJSON_Number, .valuedouble = d};
        _cleanup_free_ char *text = ao_json_canonical(&number);
        emit_text(e, text, YAML_PLAIN_SCALAR_STYLE);
}

static void emit_scalar(struct emitter *e, const cJSON *node)
{
        if (cJSON_IsTrue(node))
                emit_text(e, "true", YAML_PLAIN_SCALAR_STYLE);
        else if (cJSON_IsFalse(node))
                emit_text(e, "false", YAML_PLAIN_SCALAR_STYLE);
        else if (cJSON_IsNumber(node))
                emit_number(e, node->valuedouble);
        else if (cJSON_IsString(node))
                emit_string(e, node->valuestring, false);
        else
                emit_text(e, "null", YAML_PLAIN_SCALAR_STYLE);
}

static void emit_start(struct emitter *e, bool object, bool empty)
{
        yaml_event_t ev;
        /* Empty collections as {} and [] (libyaml would pick the flow style for them anyway). */
        if (object)
                emit(e, &ev,
                     yaml_mapping_start_event_initialize(
                         &ev, NULL, NULL, 1, empty ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE));
        else
                emit(e, &ev,
                     yaml_sequence_start_event_initialize(
                         &ev, NULL, NULL, 1, empty ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE));
}

static void emit_end(struct emitter *e, bool object)
{
        yaml_event_t ev;
        if (object)
                emit(e, &ev, yaml_mapping_end_event_initialize(&ev));
        else
                emit(e, &ev, yaml_sequence_end_event_initialize(&ev));
}

char *ao_yaml_emit(const struct cJSON *json)
{
        struct emitter e = {0};
        struct frame *stack = NULL;
        size_t depth = 0, cap = 0;
        yaml_event_t ev;

        if (!yaml_emitter_initialize(&e.yaml))
                abort();
        yaml_emitter_set_output(&e.yaml, write_output, &e.out);
        yaml_emitter_set_unicode(&e.yaml, 1);
        yaml_emitter_set_indent(&e.yaml, 2);
        yaml_emitter_set_width(&e.yaml, -1); /* no folding of long scalars */
        yaml_emitter_set_break(&e.yaml, YAML_LN_BREAK);

        emit(&e, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
        emit(&e, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));

        const cJSON *node = json;
        for (;;) {
                bool object = cJSON_IsObject(node);
                if (!node) {
                        emit_text(&e, "null", YAML_PLAIN_SCALAR_STYLE);
                } else if (object || cJSON_IsArray(node)) {
                        emit_start(&e, object, !node->child);
                        if (!node->child) {
                                emit_end(&e, object);
                        } else {
                                if (depth == cap) {
                                        cap = cap ? 2 * cap : 16;
                                        stack = ao_xreallocarray(stack, cap, sizeof(*stack));
                                }
                                stack[depth++] = (struct frame){.next = node->child, .object = object};
                        }
                } else {
                        emit_scalar(&e, node);
                }

                /* Close finished levels, then move to the next child of the innermost open one. */
                node = NULL;
                while (depth > 0) {
                        struct frame *f = &stack[depth - 1];
                        if (f->next) {
                                node = f->next;
                                f->next = node->next;
                                if (f->object)
                                        emit_string(&e, node->string, true);
                                break;
                        }
                        emit_end(&e, f->object);
                        depth--;
                }
                if (!node)
                        break;
        }

        emit(&e, &ev, yaml_document_end_event_initialize(&ev, 1));
        emit(&e, &ev, yaml_stream_end_event_initialize(&ev));
        yaml_emitter_delete(&e.yaml);
        free(stack);
        return ao_strbuf_steal(&e.out);
}
