/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/kube-watch.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/quote.h"
#include "ao/strbuf.h"

/*
 * A list response is {"kind":"ConfigMapList","apiVersion":"v1","metadata":
 * {"resourceVersion":..,"continue":..,"remainingItemCount":..},"items":[..]}.
 * The API server leaves "kind" and "apiVersion" out of the items (they are
 * implied by the list), and sends "items": null for an empty list of some
 * resources. client-go's decoder sets them on every item again, and hooks
 * written for addon-operator expect complete objects, so the same is done
 * here. On errors (403, 410, ...) the body is a Status instead.
 */

#define EXCERPT_MAX    64  /* bytes of the body quoted in an error, "..." included */
#define MESSAGE_MAX    256 /* bytes of a Status message quoted */
#define CONTEXT_BEFORE 16  /* bytes shown before the position of a syntax error */

static void json_deletep(cJSON **json)
{
        cJSON_Delete(*json);
}

static const char *string_member(const cJSON *obj, const char *name)
{
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(obj, name);
        return cJSON_IsString(m) ? m->valuestring : NULL;
}

static int parse_body(const char *body, size_t len, cJSON **ret, struct ao_error *reterr)
{
        const char *end = NULL;
        char buf[EXCERPT_MAX];
        cJSON *doc;

        if (!body) {
                body = "";
                len = 0;
        }
        doc = cJSON_ParseWithLengthOpts(body, len, &end, false);
        if (!doc) {
                /* cJSON points at or just after the offending byte (the last one when the text ran out). */
                size_t at = end && end >= body && end <= body + len ? (size_t) (end - body) : 0;
                size_t from = at > CONTEXT_BEFORE ? at - CONTEXT_BEFORE : 0;
                return ao_error_set(reterr, -EBADMSG, "list: invalid JSON at byte %zu: '%s'", at,
                                    ao_quote_bytes(buf, sizeof(buf), body + from, len - from));
        }
        for (const char *p = end; p < body + len; p++)
                if (*p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') {
                        cJSON_Delete(doc);
                        return ao_error_set(reterr, -EBADMSG, "list: text after the list at byte %zu: '%s'",
                                            (size_t) (p - body),
                                            ao_quote_bytes(buf, sizeof(buf), p, (size_t) (body + len - p)));
                }
        *ret = doc;
        return 0;
}

/* An error reply (403, 410 Expired, ...) instead of a list: its message is what the user needs. */
static int refuse_status(const cJSON *doc, struct ao_error *reterr)
{
        struct ao_kube_status st;
        char reason[EXCERPT_MAX], message[MESSAGE_MAX];

        (void) ao_kube_status_from_json(doc, &st);
        return ao_error_set(
            reterr, -EPROTO, "list: the API server answered with a Status: %d %s: '%s'", st.code,
            st.reason[0] ? ao_quote_bytes(reason, sizeof(reason), st.reason, strlen(st.reason))
                         : "(no reason)",
            ao_quote_bytes(message, sizeof(message), st.message, strlen(st.message)));
}

/* "ConfigMapList" → "ConfigMap"; NULL when @list_kind names no item kind. */
static char *item_kind_of(const char *list_kind)
{
        size_t n = list_kind ? strlen(list_kind) : 0;

        if (n <= 4 || strcmp(list_kind + n - 4, "List") != 0)
                return NULL;
        return ao_xstrndup(list_kind, n - 4);
}

/* Put "@name": "@value" first in @item, where kubectl shows kind and apiVersion. */
static int prepend_string(cJSON *item, const char *name, const char *value)
{
        cJSON *node = cJSON_CreateString(value);

        if (!node || !cJSON_AddItemToObject(item, name, node)) {
                cJSON_Delete(node);
                return -ENOMEM;
        }
        (void) cJSON_DetachItemViaPointer(item, node);
        (void) cJSON_InsertItemInArray(item, 0, node);
        return 0;
}

/* What items lacking them get; NULL where neither the caller nor the list says. */
struct defaults {
        const char *kind;
        const char *api_version;
        const char *list_kind; /* for messages */
};

static int fill_member(cJSON *item, size_t i, const char *name, const char *value, const char *list_kind,
                       struct ao_error *reterr)
{
        const cJSON *m = cJSON_GetObjectItemCaseSensitive(item, name);
        char buf[EXCERPT_MAX];

        if (m) {
                if (!cJSON_IsString(m))
                        return ao_error_set(reterr, -EBADMSG, "list: items[%zu]: %s is not a string", i,
                                            name);
                return 0;
        }
        if (!value)
                return ao_error_set(reterr, -EBADMSG,
                                    "list: items[%zu]: %s missing and not implied by the list (kind '%s')", i,
                                    name, ao_quote_bytes(buf, sizeof(buf), list_kind, strlen(list_kind)));
        if (prepend_string(item, name, value) < 0)
                return ao_error_set(reterr, -ENOMEM, "list: items[%zu]: out of memory", i);
        return 0;
}

static int check_item(cJSON *item, size_t i, const struct defaults *def, struct ao_error *reterr)
{
        if (!cJSON_IsObject(item))
                return ao_error_set(reterr, -EBADMSG, "list: items[%zu]: not an object", i);
        const cJSON *metadata = cJSON_GetObjectItemCaseSensitive(item, "metadata");
        const cJSON *name = cJSON_GetObjectItemCaseSensitive(metadata, "name");
        if (!cJSON_IsObject(metadata) || !name)
                return ao_error_set(reterr, -EBADMSG, "list: items[%zu]: metadata.name missing", i);
        if (!cJSON_IsString(name))
                return ao_error_set(reterr, -EBADMSG, "list: items[%zu]: metadata.name is not a string", i);
        if (name->valuestring[0] == '\0')
                return ao_error_set(reterr, -EBADMSG, "list: items[%zu]: metadata.name is empty", i);

        /* kind first, then apiVersion in front of it: the order kubectl prints them in. */
        int r = fill_member(item, i, "kind", def->kind, def->list_kind, reterr);
        if (r < 0)
                return r;
        return fill_member(item, i, "apiVersion", def->api_version, def->list_kind, reterr);
}

static int check_items(cJSON *items, const struct defaults *def, struct ao_error *reterr)
{
        size_t i = 0;

        for (cJSON *item = items->child; item; item = item->next, i++) {
                int r = check_item(item, i, def, reterr);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* The "items" member, taken out of @doc: null (an empty list of some resources) becomes []. */
static int take_items(cJSON *doc, cJSON **ret, struct ao_error *reterr)
{
        cJSON *items = cJSON_GetObjectItemCaseSensitive(doc, "items");

        if (!items)
                return ao_error_set(reterr, -EBADMSG, "list: missing \"items\"");
        if (cJSON_IsNull(items)) {
                *ret = cJSON_CreateArray();
                return *ret ? 0 : ao_error_set(reterr, -ENOMEM, "list: out of memory");
        }
        if (!cJSON_IsArray(items))
                return ao_error_set(reterr, -EBADMSG, "list: \"items\" is not an array");
        *ret = cJSON_DetachItemViaPointer(doc, items);
        return 0;
}

int ao_kube_list_parse(const char *body, size_t len, const char *item_kind, const char *item_api_version,
                       struct ao_kube_list *ret, struct ao_error *reterr)
{
        _cleanup_(json_deletep) cJSON *doc = NULL;
        _cleanup_(json_deletep) cJSON *items = NULL;
        _cleanup_free_ char *derived_kind = NULL;
        int r;

        r = parse_body(body, len, &doc, reterr);
        if (r < 0)
                return r;
        if (!cJSON_IsObject(doc))
                return ao_error_set(reterr, -EBADMSG, "list: not a JSON object");
        const char *list_kind = string_member(doc, "kind");
        if (list_kind && strcmp(list_kind, "Status") == 0)
                return refuse_status(doc, reterr);

        if (!item_kind)
                item_kind = derived_kind = item_kind_of(list_kind);
        if (!item_api_version)
                item_api_version = string_member(doc, "apiVersion");
        const struct defaults def = {
            .kind = item_kind,
            .api_version = item_api_version,
            .list_kind = list_kind ? list_kind : "(no kind)",
        };

        r = take_items(doc, &items, reterr);
        if (r < 0)
                return r;
        r = check_items(items, &def, reterr);
        if (r < 0)
                return r;

        const cJSON *metadata = cJSON_GetObjectItemCaseSensitive(doc, "metadata");
        const char *rv = string_member(metadata, "resourceVersion");
        const char *cont = string_member(metadata, "continue");
        *ret = (struct ao_kube_list){
            .items = TAKE_PTR(items),
            .resource_version = rv ? ao_xstrdup(rv) : NULL,
            .continue_token = cont && cont[0] ? ao_xstrdup(cont) : NULL,
        };
        return 0;
}

void ao_kube_list_done(struct ao_kube_list *l)
{
        if (!l)
                return;
        cJSON_Delete(l->items);
        free(l->resource_version);
        free(l->continue_token);
        *l = (struct ao_kube_list){0};
}
