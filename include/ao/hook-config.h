/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Hook binding configuration: what a hook prints when run with --config.
 *
 * The text is YAML or JSON. `configVersion: v1` selects the current format;
 * no configVersion (or "v0") the legacy one (onStartup, schedule,
 * onKubernetesEvent). Validation follows the Go operator's schemas: unknown
 * keys are refused, every field has its type, and cross-field rules hold
 * (includeSnapshotsFrom names an existing kubernetes binding of the same
 * hook, nameSelector and a metadata.name field selector exclude each other,
 * ...). Global hooks may use beforeAll/afterAll, module hooks
 * beforeHelm/afterHelm/beforeDeleteHelm/afterDeleteHelm; the other kind's
 * bindings are an error. Crontabs are parsed here (ao_cron) and jqFilter
 * programs compiled (libjq), so a bad one is reported with the hook.
 *
 * Errors read "<hook>: <field path>: <reason>", e.g.
 *   "hooks/pods.sh: kubernetes[1].labelSelector.matchExpressions[0].operator: 'in' is not one of In, NotIn, Exists, DoesNotExist"
 *
 * Compatibility choices (docs/HOOKS.md has the full list):
 *   - settings accepts executionMinPeriod (the documented name) and
 *     executionMinInterval (the Go operator's); both at once is an error.
 *   - kubernetesValidating, kubernetesMutating and
 *     kubernetesCustomResourceConversion are accepted, as the Go operator
 *     accepts them, and reported in `ignored` because addon-operator never
 *     serves them.
 *
 * Non-logging module; thread-safe except for cJSON's parse-error global
 * (see jsonpatch.h).
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/error.h"

struct cJSON;

#define AO_HOOK_CONFIG_MAX_INPUT    (4u * 1024 * 1024) /* bytes of --config output */
#define AO_HOOK_CONFIG_MAX_BINDINGS 1024               /* schedule + kubernetes entries */
#define AO_HOOK_CONFIG_MAX_ITEMS    65536              /* strings and requirements in all lists together */

enum ao_hook_kind {
        AO_HOOK_GLOBAL,
        AO_HOOK_MODULE,
        _AO_HOOK_KIND_MAX,
        _AO_HOOK_KIND_INVALID = -EINVAL,
};

/* Bindings. The first seven carry only an order. */
enum ao_binding_type {
        AO_BINDING_ON_STARTUP,
        AO_BINDING_BEFORE_ALL,         /* global only */
        AO_BINDING_AFTER_ALL,          /* global only */
        AO_BINDING_BEFORE_HELM,        /* module only */
        AO_BINDING_AFTER_HELM,         /* module only */
        AO_BINDING_BEFORE_DELETE_HELM, /* module only */
        AO_BINDING_AFTER_DELETE_HELM,  /* module only */
        AO_BINDING_SCHEDULE,
        AO_BINDING_KUBERNETES,
        _AO_BINDING_TYPE_MAX,
        _AO_BINDING_TYPE_INVALID = -EINVAL,
};
#define AO_BINDING_ORDERED_MAX (AO_BINDING_AFTER_DELETE_HELM + 1)

/** "onStartup", "beforeAll", ..., "schedule", "kubernetes". */
const char *ao_binding_type_to_string(enum ao_binding_type t);
enum ao_binding_type ao_binding_type_from_string(const char *s);

/* Kubernetes watch event kinds, as a mask. */
enum {
        AO_WATCH_ADDED = 1 << 0,
        AO_WATCH_MODIFIED = 1 << 1,
        AO_WATCH_DELETED = 1 << 2,
        AO_WATCH_ALL = AO_WATCH_ADDED | AO_WATCH_MODIFIED | AO_WATCH_DELETED,
};

enum ao_selector_op {
        AO_SELECTOR_IN,
        AO_SELECTOR_NOT_IN,
        AO_SELECTOR_EXISTS,
        AO_SELECTOR_DOES_NOT_EXIST,
        _AO_SELECTOR_OP_MAX,
        _AO_SELECTOR_OP_INVALID = -EINVAL,
};

/** A list of owned strings. */
struct ao_strv {
        char **items; /* owned, each owned */
        size_t n;
};

struct ao_label_requirement {
        char *key; /* owned */
        enum ao_selector_op op;
        struct ao_strv values; /* non-empty for In/NotIn, empty for Exists/DoesNotExist */
};

/** A Kubernetes label selector. matchLabels become In requirements with one value. */
struct ao_label_selector {
        bool present; /* the key was given */
        struct ao_label_requirement
            *requirements; /* owned: matchLabels (sorted by key), then matchExpressions */
        size_t n_requirements;
};

struct ao_field_requirement {
        char *field;  /* owned */
        bool negated; /* "!=" / "NotEquals" */
        char *value;  /* owned */
};

struct ao_schedule_binding {
        char *name;    /* owned; "schedule" when not given */
        char *crontab; /* owned, as written */
        bool allow_failure;
        char *queue; /* owned; "main" when not given */
        char *group; /* owned; NULL when not given */
        struct ao_strv include_snapshots_from;
};

struct ao_kubernetes_binding {
        char *name;          /* owned; "kubernetes" ("onKubernetesEvent" in v0) when not given */
        char *api_version;   /* owned; NULL: any version, the server's preferred */
        char *kind;          /* owned, as written */
        unsigned event_mask; /* AO_WATCH_*; 0 when executeHookOnEvent is [] (snapshot only) */
        bool execute_hook_on_synchronization; /* default true; false in v0 */
        bool wait_for_synchronization;        /* default true; forced true unless queue was given */
        bool keep_full_objects_in_memory;     /* default true; false in v0 (its contexts carry no objects) */
        bool allow_failure;
        char *queue; /* owned; "main" when not given */
        bool queue_given;
        char *group;                  /* owned or NULL */
        char *jq_filter;              /* owned or NULL */
        struct ao_strv name_selector; /* nameSelector.matchNames (v0: objectName) */
        struct ao_label_selector label_selector;
        struct ao_field_requirement *field_selector; /* owned; ANDed */
        size_t n_field_selector;
        struct ao_strv namespace_names;            /* namespace.nameSelector.matchNames; empty: all */
        struct ao_label_selector namespace_labels; /* namespace.labelSelector; wins over names */
        struct ao_strv include_snapshots_from;
        char *resynchronization_period; /* owned or NULL; accepted and unused, as in the Go operator */
};

struct ao_hook_config {
        int version; /* 0 or 1 */
        enum ao_hook_kind kind;
        /* AO_BINDING_ON_STARTUP .. AO_BINDING_AFTER_DELETE_HELM: whether given, and the order */
        bool has_order[AO_BINDING_ORDERED_MAX];
        int64_t order[AO_BINDING_ORDERED_MAX];
        struct ao_schedule_binding *schedules; /* owned */
        size_t n_schedules;
        struct ao_kubernetes_binding *kubernetes; /* owned */
        size_t n_kubernetes;
        /* settings: token bucket of executions; 0 / 1 when not given (no limit) */
        uint64_t execution_min_period_usec;
        uint32_t execution_burst;
        struct ao_strv ignored; /* owned: binding keys accepted but not served ("kubernetesValidating") */
};

/**
 * Parse --config output @text (@len bytes) of hook @hook_name (for messages)
 * of @kind. On success @ret (caller-owned, release with
 * ao_hook_config_done()) is filled; on failure it is untouched and @reterr
 * says what is wrong, starting with @hook_name.
 * Returns 0, -EINVAL, -EFBIG (over AO_HOOK_CONFIG_MAX_INPUT), -E2BIG or -ENOMEM.
 */
int ao_hook_config_parse(const char *text, size_t len, const char *hook_name, enum ao_hook_kind kind,
                         struct ao_hook_config *ret, struct ao_error *reterr);

/** Same, from an already loaded document (borrowed). */
int ao_hook_config_from_json(const struct cJSON *doc, const char *hook_name, enum ao_hook_kind kind,
                             struct ao_hook_config *ret, struct ao_error *reterr);

void ao_hook_config_done(struct ao_hook_config *cfg);

/**
 * The configuration with every default filled in, as a new JSON object in
 * the v1 vocabulary (for `tool hook-config`, the debug API and tests), or
 * NULL when memory runs out. Caller-owned. The shape:
 *
 *   {"configVersion": "v1" (or "v0": the version of the source),
 *    "kind": "global" | "module",
 *    "onStartup": N, "beforeAll": N, ...      only the orders given,
 *    "schedule": [{"name", "crontab", "allowFailure", "queue",
 *                  "group"?, "includeSnapshotsFrom"?}],        when any,
 *    "kubernetes": [{"name", "apiVersion"?, "kind",
 *                    "executeHookOnEvent": ["Added", "Modified", "Deleted"] (those in the mask),
 *                    "executeHookOnSynchronization", "waitForSynchronization",
 *                    "keepFullObjectsInMemory", "allowFailure", "queue",
 *                    "group"?, "jqFilter"?,
 *                    "nameSelector"?: {"matchNames": [...]},
 *                    "labelSelector"?: {"matchExpressions": [{"key", "operator", "values"?}]},
 *                    "fieldSelector"?: {"matchExpressions": [{"field", "operator": "=" | "!=", "value"}]},
 *                    "namespace"?: {"nameSelector"?: ..., "labelSelector"?: ...},
 *                    "includeSnapshotsFrom"?, "resynchronizationPeriod"?}],  when any,
 *    "settings": {"executionMinPeriod": Go duration ("0s", "500ms", "1m30s"), "executionBurst": N},
 *    "ignored": ["kubernetesValidating", ...]                  when any}
 *
 * Label selectors list every requirement under matchExpressions (a
 * matchLabels entry is an In with one value); a v0 binding appears as the
 * v1 binding it became (objectName in nameSelector, namespaceSelector in
 * namespace). Without "kind" and "ignored", and with configVersion "v1",
 * the object is a valid configuration that parses to the same JSON.
 */
struct cJSON *ao_hook_config_to_json(const struct ao_hook_config *cfg);

/** Whether the hook has binding @t (for the ordered ones: an order was given; else at least one entry). */
bool ao_hook_config_has(const struct ao_hook_config *cfg, enum ao_binding_type t);

/** The kubernetes binding named @name, or NULL. */
const struct ao_kubernetes_binding *ao_hook_config_find_kubernetes(const struct ao_hook_config *cfg,
                                                                   const char *name);

/**
 * A label selector as the API server's labelSelector query takes it:
 * "app=web,tier in (a,b),!legacy". Returns a malloc'd string ("" when empty).
 */
char *ao_label_selector_format(const struct ao_label_selector *sel);
/** Field requirements as the fieldSelector query takes them: "metadata.name=x,status.phase!=Done". */
char *ao_field_selector_format(const struct ao_field_requirement *reqs, size_t n);

/**
 * Why @key is not a label key the API server accepts (a qualified name:
 * an optional lowercase DNS subdomain and '/', then at most 63 characters of
 * [A-Za-z0-9-_.], alphanumeric at both ends), or NULL when it is one.
 */
const char *ao_label_key_problem(const char *key);
/** Same for a label value: empty, or what the name part of a key may be. */
const char *ao_label_value_problem(const char *value);
/** Same for a field selector's field: a non-empty path of [A-Za-z0-9._-]. */
const char *ao_field_name_problem(const char *field);

void ao_strv_done(struct ao_strv *v);
