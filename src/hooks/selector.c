/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Selectors as the API server's list and watch queries take them
 * (?labelSelector=...&fieldSelector=...), in the syntax of
 * k8s.io/apimachinery pkg/labels and pkg/fields.
 */
#include "ao/hook-config.h"

#include <stdlib.h>

#include "ao/strbuf.h"

static void append_values(struct ao_strbuf *sb, const struct ao_strv *values)
{
        ao_strbuf_append_c(sb, '(');
        for (size_t i = 0; i < values->n; i++) {
                if (i > 0)
                        ao_strbuf_append_c(sb, ',');
                ao_strbuf_append(sb, values->items[i]);
        }
        ao_strbuf_append_c(sb, ')');
}

char *ao_label_selector_format(const struct ao_label_selector *sel)
{
        struct ao_strbuf sb = {0};

        for (size_t i = 0; sel && i < sel->n_requirements; i++) {
                const struct ao_label_requirement *req = &sel->requirements[i];
                if (i > 0)
                        ao_strbuf_append_c(&sb, ',');
                switch (req->op) {
                case AO_SELECTOR_IN:
                        /* matchLabels entries: "key=value", as LabelSelectorAsSelector writes them. */
                        if (req->values.n == 1) {
                                ao_strbuf_appendf(&sb, "%s=%s", req->key, req->values.items[0]);
                                break;
                        }
                        ao_strbuf_appendf(&sb, "%s in ", req->key);
                        append_values(&sb, &req->values);
                        break;
                case AO_SELECTOR_NOT_IN:
                        ao_strbuf_appendf(&sb, "%s notin ", req->key);
                        append_values(&sb, &req->values);
                        break;
                case AO_SELECTOR_EXISTS:
                        ao_strbuf_append(&sb, req->key);
                        break;
                case AO_SELECTOR_DOES_NOT_EXIST:
                        ao_strbuf_appendf(&sb, "!%s", req->key);
                        break;
                default:
                        break;
                }
        }
        return ao_strbuf_steal(&sb);
}

/* fields.EscapeValue: '\', ',' and '=' are the syntax of the query, so a value escapes them. */
static void append_field_value(struct ao_strbuf *sb, const char *value)
{
        for (const char *p = value; *p; p++) {
                if (*p == '\\' || *p == ',' || *p == '=')
                        ao_strbuf_append_c(sb, '\\');
                ao_strbuf_append_c(sb, *p);
        }
}

char *ao_field_selector_format(const struct ao_field_requirement *reqs, size_t n)
{
        struct ao_strbuf sb = {0};

        for (size_t i = 0; i < n; i++) {
                if (i > 0)
                        ao_strbuf_append_c(&sb, ',');
                ao_strbuf_append(&sb, reqs[i].field);
                ao_strbuf_append(&sb, reqs[i].negated ? "!=" : "=");
                append_field_value(&sb, reqs[i].value);
        }
        return ao_strbuf_steal(&sb);
}

void ao_strv_done(struct ao_strv *v)
{
        if (!v)
                return;
        for (size_t i = 0; i < v->n; i++)
                free(v->items[i]);
        free(v->items);
        *v = (struct ao_strv){0};
}
