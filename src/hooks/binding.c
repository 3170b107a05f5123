/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Binding context objects in the shapes binding-context.h lists.
 */
#include "ao/binding-context.h"

#include <cjson/cJSON.h>
#include <string.h>

#include "ao/yaml.h"
#include "ao/strbuf.h"

static cJSON *snapshot_items(const struct ao_snapshot_source *src, const char *binding)
{
        cJSON *items = src && src->get ? src->get(src->userdata, binding) : NULL;
        return items ? items : cJSON_CreateArray();
}

static void add_snapshot(cJSON *snapshots, const struct ao_snapshot_source *src, const char *binding)
{
        if (!cJSON_GetObjectItemCaseSensitive(snapshots, binding))
                cJSON_AddItemToObject(snapshots, binding, snapshot_items(src, binding));
}

/* The bindings a schedule or kubernetes context carries: includeSnapshotsFrom, then its group's members. */
static cJSON *snapshots_for(const struct ao_hook_config *cfg, const struct ao_strv *include,
                            const char *group, const struct ao_snapshot_source *src)
{
        cJSON *snapshots = cJSON_CreateObject();
        for (size_t i = 0; i < include->n; i++)
                add_snapshot(snapshots, src, include->items[i]);
        for (size_t i = 0; group && i < cfg->n_kubernetes; i++)
                if (cfg->kubernetes[i].group && strcmp(cfg->kubernetes[i].group, group) == 0)
                        add_snapshot(snapshots, src, cfg->kubernetes[i].name);
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
                            const struct ao_strv *include, const char *group,
                            const struct ao_snapshot_source *src)
{
        cJSON *ctx = context_named(binding);
        cJSON_AddStringToObject(ctx, "type", "Group");
        cJSON_AddStringToObject(ctx, "groupName", group);
        attach_snapshots(ctx, snapshots_for(cfg, include, group, src), true);
        return ctx;
}

cJSON *ao_binding_context_ordered(const struct ao_hook_config *cfg, enum ao_binding_type type,
                                  const struct ao_snapshot_source *src)
{
        cJSON *ctx = context_named(ao_binding_type_to_string(type));
        if (type == AO_BINDING_ON_STARTUP || cfg->version == 0)
                return ctx;
        cJSON *snapshots = cJSON_CreateObject();
        for (size_t i = 0; i < cfg->n_kubernetes; i++)
                add_snapshot(snapshots, src, cfg->kubernetes[i].name);
        attach_snapshots(ctx, snapshots, true);
        return ctx;
}

cJSON *ao_binding_context_schedule(const struct ao_hook_config *cfg, const struct ao_schedule_binding *b,
                                   const struct ao_snapshot_source *src)
{
        if (cfg->version == 0)
                return context_named(b->name);
        if (b->group)
                return group_context(cfg, b->name, &b->include_snapshots_from, b->group, src);
        cJSON *ctx = context_named(b->name);
        cJSON_AddStringToObject(ctx, "type", "Schedule");
        attach_snapshots(ctx, snapshots_for(cfg, &b->include_snapshots_from, NULL, src), false);
        return ctx;
}

cJSON *ao_binding_context_synchronization(const struct ao_hook_config *cfg,
                                          const struct ao_kubernetes_binding *b, cJSON *objects,
                                          const struct ao_snapshot_source *src)
{
        if (b->group) {
                cJSON_Delete(objects);
                return group_context(cfg, b->name, &b->include_snapshots_from, b->group, src);
        }
        cJSON *ctx = context_named(b->name);
        cJSON_AddStringToObject(ctx, "type", "Synchronization");
        cJSON_AddItemToObject(ctx, "objects", objects ? objects : cJSON_CreateArray());
        attach_snapshots(ctx, snapshots_for(cfg, &b->include_snapshots_from, NULL, src), false);
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
                                unsigned watch_event, cJSON *item, const struct ao_snapshot_source *src)
{
        cJSON *ctx;
        if (cfg->version == 0)
                ctx = v0_event_context(b, watch_event, item);
        else if (b->group)
                ctx = group_context(cfg, b->name, &b->include_snapshots_from, b->group, src);
        else {
                ctx = context_named(b->name);
                cJSON_AddStringToObject(ctx, "type", "Event");
                const char *event = ao_watch_event_to_string(watch_event);
                cJSON_AddStringToObject(ctx, "watchEvent", event ? event : "");
                move_member(ctx, item, "object");
                move_member(ctx, item, "filterResult");
                attach_snapshots(ctx, snapshots_for(cfg, &b->include_snapshots_from, NULL, src), false);
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

char *ao_binding_contexts_format(const cJSON *contexts)
{
        struct ao_strbuf sb = {0};
        char *text = ao_json_canonical(contexts);
        ao_strbuf_append(&sb, text);
        ao_strbuf_append_c(&sb, '\n');
        free(text);
        return ao_strbuf_steal(&sb);
}

static void refresh_context(cJSON *ctx, const struct ao_snapshot_source *src)
{
        cJSON *snapshots = cJSON_GetObjectItemCaseSensitive(ctx, "snapshots");
        for (cJSON *s = snapshots ? snapshots->child : NULL; s; s = s->next) {
                /* Swap the contents in place: the entry keeps its key and position. */
                cJSON *fresh = snapshot_items(src, s->string);
                cJSON *old_child = s->child;
                s->child = fresh->child;
                fresh->child = old_child;
                cJSON_Delete(fresh);
        }
        const cJSON *type = cJSON_GetObjectItemCaseSensitive(ctx, "type");
        const cJSON *binding = cJSON_GetObjectItemCaseSensitive(ctx, "binding");
        if (cJSON_IsString(type) && strcmp(type->valuestring, "Synchronization") == 0 &&
            cJSON_IsString(binding) && cJSON_HasObjectItem(ctx, "objects"))
                cJSON_ReplaceItemInObjectCaseSensitive(ctx, "objects",
                                                       snapshot_items(src, binding->valuestring));
}

void ao_binding_contexts_refresh(cJSON *contexts, const struct ao_snapshot_source *src)
{
        if (!src || !src->get)
                return;
        cJSON *ctx;
        cJSON_ArrayForEach(ctx, contexts)
        {
                refresh_context(ctx, src);
        }
}
