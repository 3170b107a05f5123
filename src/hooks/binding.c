/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Binding context objects in the shapes binding-context.h lists.
 */
#include "ao/binding-context.h"

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "ao/json-writer.h"

/* A snapshot named, its items left to ao_binding_contexts_write(). */
static void add_snapshot(cJSON *snapshots, const char *binding)
{
        if (!cJSON_GetObjectItemCaseSensitive(snapshots, binding))
                cJSON_AddItemToObject(snapshots, binding, cJSON_CreateArray());
}

/* The bindings a schedule or kubernetes context carries: includeSnapshotsFrom, then its group's members. */
static cJSON *snapshots_for(const struct ao_hook_config *cfg, const struct ao_strv *include,
                            const char *group)
{
        cJSON *snapshots = cJSON_CreateObject();
        for (size_t i = 0; i < include->n; i++)
                add_snapshot(snapshots, include->items[i]);
        for (size_t i = 0; group && i < cfg->n_kubernetes; i++)
                if (cfg->kubernetes[i].group && strcmp(cfg->kubernetes[i].group, group) == 0)
                        add_snapshot(snapshots, cfg->kubernetes[i].name);
        return snapshots;
}

static void attach_snapshots(cJSON *ctx, cJSON *snapshots, bool even_if_empty)
{
        if (even_if_empty || cJSON_GetArraySize(snapshots) > 0)
                cJSON_AddItemToObject(ctx, "snapshots", snapshots);
        else
                cJSON_Delete(snapshots);
}

static cJSON *context_named(const char *binding)
{
        cJSON *ctx = cJSON_CreateObject();
        cJSON_AddStringToObject(ctx, "binding", binding);
        return ctx;
}

/* Grouped bindings of v1 hooks report only "something in the group changed", with the group's snapshots. */
static cJSON *group_context(const struct ao_hook_config *cfg, const char *binding,
                            const struct ao_strv *include, const char *group)
{
        cJSON *ctx = context_named(binding);
        cJSON_AddStringToObject(ctx, "type", "Group");
        cJSON_AddStringToObject(ctx, "groupName", group);
        attach_snapshots(ctx, snapshots_for(cfg, include, group), true);
        return ctx;
}

cJSON *ao_binding_context_ordered(const struct ao_hook_config *cfg, enum ao_binding_type type)
{
        cJSON *ctx = context_named(ao_binding_type_to_string(type));
        if (type == AO_BINDING_ON_STARTUP || cfg->version == 0)
                return ctx;
        cJSON *snapshots = cJSON_CreateObject();
        for (size_t i = 0; i < cfg->n_kubernetes; i++)
                add_snapshot(snapshots, cfg->kubernetes[i].name);
        attach_snapshots(ctx, snapshots, true);
        return ctx;
}

cJSON *ao_binding_context_schedule(const struct ao_hook_config *cfg, const struct ao_schedule_binding *b)
{
        if (cfg->version == 0)
                return context_named(b->name);
        if (b->group)
                return group_context(cfg, b->name, &b->include_snapshots_from, b->group);
        cJSON *ctx = context_named(b->name);
        cJSON_AddStringToObject(ctx, "type", "Schedule");
        attach_snapshots(ctx, snapshots_for(cfg, &b->include_snapshots_from, NULL), false);
        return ctx;
}

cJSON *ao_binding_context_synchronization(const struct ao_hook_config *cfg,
                                          const struct ao_kubernetes_binding *b)
{
        if (b->group)
                return group_context(cfg, b->name, &b->include_snapshots_from, b->group);
        cJSON *ctx = context_named(b->name);
        cJSON_AddStringToObject(ctx, "type", "Synchronization");
        cJSON_AddItemToObject(ctx, "objects", cJSON_CreateArray());
        attach_snapshots(ctx, snapshots_for(cfg, &b->include_snapshots_from, NULL), false);
        return ctx;
}

const char *ao_watch_event_to_string(unsigned watch_event)
{
        switch (watch_event) {
        case AO_WATCH_ADDED:
                return "Added";
        case AO_WATCH_MODIFIED:
                return "Modified";
        case AO_WATCH_DELETED:
                return "Deleted";
        default:
                return NULL;
        }
}

static const char *v0_event_name(unsigned watch_event)
{
        return watch_event == AO_WATCH_ADDED ? "add" : watch_event == AO_WATCH_MODIFIED ? "update" : "delete";
}

static const char *string_at(const cJSON *object, const char *outer, const char *inner)
{
        const cJSON *node = cJSON_GetObjectItemCaseSensitive(object, outer);
        if (inner)
                node = cJSON_GetObjectItemCaseSensitive(node, inner);
        return cJSON_IsString(node) ? node->valuestring : "";
}

/* The legacy shape names the object by its coordinates instead of carrying it. */
static cJSON *v0_event_context(const struct ao_kubernetes_binding *b, unsigned watch_event, const cJSON *item)
{
        const cJSON *object = cJSON_GetObjectItemCaseSensitive(item, "object");
        cJSON *ctx = context_named(b->name);
        cJSON_AddStringToObject(ctx, "resourceEvent", v0_event_name(watch_event));
        cJSON_AddStringToObject(ctx, "resourceNamespace", string_at(object, "metadata", "namespace"));
        cJSON_AddStringToObject(ctx, "resourceKind", string_at(object, "kind", NULL));
        cJSON_AddStringToObject(ctx, "resourceName", string_at(object, "metadata", "name"));
        return ctx;
}

static void move_member(cJSON *to, cJSON *from, const char *key)
{
        cJSON *member = cJSON_DetachItemFromObjectCaseSensitive(from, key);
        if (member)
                cJSON_AddItemToObject(to, key, member);
}

cJSON *ao_binding_context_event(const struct ao_hook_config *cfg, const struct ao_kubernetes_binding *b,
                                unsigned watch_event, cJSON *item)
{
        cJSON *ctx;
        if (cfg->version == 0)
                ctx = v0_event_context(b, watch_event, item);
        else if (b->group)
                ctx = group_context(cfg, b->name, &b->include_snapshots_from, b->group);
        else {
                ctx = context_named(b->name);
                cJSON_AddStringToObject(ctx, "type", "Event");
                const char *event = ao_watch_event_to_string(watch_event);
                cJSON_AddStringToObject(ctx, "watchEvent", event ? event : "");
                move_member(ctx, item, "object");
                move_member(ctx, item, "filterResult");
                attach_snapshots(ctx, snapshots_for(cfg, &b->include_snapshots_from, NULL), false);
        }
        cJSON_Delete(item);
        return ctx;
}

static const char *group_of(const cJSON *ctx)
{
        const cJSON *g = cJSON_GetObjectItemCaseSensitive(ctx, "groupName");
        return cJSON_IsString(g) && *g->valuestring ? g->valuestring : NULL;
}

void ao_binding_contexts_combine(cJSON *contexts, cJSON *more)
{
        while (more && cJSON_GetArraySize(more) > 0)
                cJSON_AddItemToArray(contexts, cJSON_DetachItemFromArray(more, 0));
        cJSON_Delete(more);

        cJSON *ctx = contexts->child;
        while (ctx) {
                cJSON *next = ctx->next;
                const char *group = group_of(ctx);
                const char *next_group = next ? group_of(next) : NULL;
                if (group && next_group && strcmp(group, next_group) == 0)
                        cJSON_Delete(cJSON_DetachItemViaPointer(contexts, ctx));
                ctx = next;
        }
}

/* ---- the file -------------------------------------------------------------------------------- */

/* What one context's walk substitutes: the arrays whose items come from the source. */
struct fill {
        const struct ao_snapshot_source *src;
        const cJSON *snapshots; /* the context's "snapshots" object, or NULL */
        const cJSON *objects;   /* a Synchronization context's "objects", or NULL */
        const char *binding;    /* that context's binding */
};

static int write_current_items(const cJSON *node, struct ao_json_writer *out, void *userdata)
{
        const struct fill *f = userdata;
        const char *binding = NULL;
        if (f->objects == node)
                binding = f->binding;
        else if (f->snapshots && node->string && cJSON_IsArray(node) &&
                 cJSON_GetObjectItemCaseSensitive(f->snapshots, node->string) == node)
                binding = node->string; /* an entry of "snapshots": its key names the binding */
        if (!binding)
                return 0;
        int r = f->src->write(f->src->userdata, binding, out);
        return r < 0 ? r : 1;
}

static void write_context(const cJSON *ctx, const struct ao_snapshot_source *src, struct ao_json_writer *out)
{
        if (!src || !src->write || !cJSON_IsObject(ctx)) {
                ao_json_write(out, ctx);
                return;
        }
        struct fill f = {.src = src};
        const cJSON *snapshots = cJSON_GetObjectItemCaseSensitive(ctx, "snapshots");
        if (cJSON_IsObject(snapshots))
                f.snapshots = snapshots;
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(ctx, "type");
        const cJSON *binding = cJSON_GetObjectItemCaseSensitive(ctx, "binding");
        if (cJSON_IsString(type) && strcmp(type->valuestring, "Synchronization") == 0 &&
            cJSON_IsString(binding)) {
                f.objects = cJSON_GetObjectItemCaseSensitive(ctx, "objects");
                f.binding = binding->valuestring;
        }
        ao_json_write_with(out, ctx, write_current_items, &f);
}

int ao_binding_contexts_write(const cJSON *contexts, const struct ao_snapshot_source *src,
                              struct ao_json_writer *out)
{
        if (!cJSON_IsArray(contexts)) {
                ao_json_write(out, contexts);
        } else {
                ao_json_write_raw(out, "[");
                for (const cJSON *ctx = contexts->child; ctx && ao_json_writer_error(out) == 0;
                     ctx = ctx->next) {
                        if (ctx != contexts->child)
                                ao_json_write_raw(out, ",");
                        write_context(ctx, src, out);
                }
                ao_json_write_raw(out, "]");
        }
        ao_json_write_raw(out, "\n");
        return ao_json_writer_error(out);
}

cJSON *ao_snapshot_items(const struct ao_snapshot_source *src, const char *binding)
{
        cJSON *items = NULL;
        if (src && src->write) {
                struct ao_json_writer w;
                ao_json_writer_init(&w, -1);
                if (src->write(src->userdata, binding, &w) >= 0) {
                        char *text = ao_json_writer_steal(&w);
                        items = cJSON_Parse(text);
                        free(text);
                }
                ao_json_writer_done(&w);
        }
        if (cJSON_IsArray(items))
                return items;
        cJSON_Delete(items);
        return cJSON_CreateArray();
}
