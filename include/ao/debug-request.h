/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * What a request to the debug API asks for, read from its path and query
 * alone (no operator state), so the HTTP thread and the main thread agree
 * and the parsing can be fuzzed on its own. Pure functions, any thread.
 */

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>

#include "ao/error.h"

/* How an answer is written: the path's suffix. */
enum ao_http_format {
        AO_HTTP_FORMAT_JSON,    /* ".json" */
        AO_HTTP_FORMAT_YAML,    /* ".yaml" */
        AO_HTTP_FORMAT_TEXT,    /* ".text" */
        AO_HTTP_FORMAT_DEFAULT, /* no suffix: a string answer as text (/status/converge), anything else JSON */
        _AO_HTTP_FORMAT_MAX,
        _AO_HTTP_FORMAT_INVALID = -EINVAL,
};

/**
 * The format named by the suffix of @path's last segment (not the whole
 * segment: "/x/.json" has none); *@len (the path's length) is shortened by
 * the suffix.
 */
enum ao_http_format ao_http_format_from_path(const char *path, size_t *len);

enum ao_debug_route {
        AO_DEBUG_CONVERGE,                /* /status/converge */
        AO_DEBUG_QUEUE_LIST,              /* /queue/list */
        AO_DEBUG_QUEUE_MAIN,              /* /queue/main */
        AO_DEBUG_GLOBAL_VALUES,           /* /global/values */
        AO_DEBUG_GLOBAL_CONFIG,           /* /global/config */
        AO_DEBUG_GLOBAL_PATCHES,          /* /global/patches */
        AO_DEBUG_GLOBAL_SNAPSHOTS,        /* /global/snapshots */
        AO_DEBUG_MODULE_LIST,             /* /module/list */
        AO_DEBUG_MODULE_RESOURCE_MONITOR, /* /module/resource-monitor */
        AO_DEBUG_GLOBAL_LIST,             /* /global/list */
        AO_DEBUG_CONFIG_LIST,             /* /config/list */
        AO_DEBUG_CONFIG_SET,              /* /config/set: POST, a form with name, value, duration */
        /* The routes of one module, from here on. */
        AO_DEBUG_MODULE_VALUES,    /* /module/<name>/values */
        AO_DEBUG_MODULE_CONFIG,    /* /module/<name>/config */
        AO_DEBUG_MODULE_PATCHES,   /* /module/<name>/patches */
        AO_DEBUG_MODULE_SNAPSHOTS, /* /module/<name>/snapshots */
        AO_DEBUG_MODULE_RENDER,    /* /module/<name>/render */
        _AO_DEBUG_ROUTE_MAX,
        _AO_DEBUG_ROUTE_INVALID = -EINVAL,
};

/* Longer segments name no module (directory names are at most 255 bytes). */
#define AO_DEBUG_MODULE_NAME_MAX 255

struct ao_debug_request {
        enum ao_debug_route route;
        char module[AO_DEBUG_MODULE_NAME_MAX + 1]; /* the module routes; "" otherwise */
        bool global;                               /* ?global=<bool>: add the global section */
        bool output_json;                          /* ?output=json (/status/converge) */
        bool show_empty;                           /* ?showEmpty=<bool> (/queue/list) */
        bool debug;                                /* ?debug=<bool> (render) */
        bool diff;                                 /* ?diff=<bool> (render) */
        bool detail; /* ?detail=<bool> (resource-monitor: our monitors' detail, as .text shows it) */
        char only_module[AO_DEBUG_MODULE_NAME_MAX + 1]; /* ?module=<name> (resource-monitor); "": all */
};

/**
 * Read @path (normalized, without the format suffix) and @query (raw, ""
 * when there is none) into @ret. The query is key=value pairs joined by
 * '&', percent-encoded with '+' for a space; the first of repeated keys
 * counts and unknown keys are ignored, as Go's url.Values.Get() has it.
 * Returns 0; -ENOENT for a path that names nothing (@reterr: "unknown
 * path"); -EINVAL for a bad escape or a boolean key (global, showEmpty,
 * debug, diff, detail) that is not one of strconv.ParseBool's spellings. @ret is
 * filled only on success.
 */
int ao_debug_request_parse(const char *path, const char *query, struct ao_debug_request *ret,
                           struct ao_error *reterr);

/** Whether @route is changed by POST (config set) rather than read by GET. */
bool ao_debug_route_is_post(enum ao_debug_route route);

/**
 * The value of @key in @form (a query string or an
 * application/x-www-form-urlencoded body: the same syntax), decoded, the
 * first of repeated keys. Returns 1 with *@ret malloc'd, 0 when the key is
 * absent (*@ret NULL), -EINVAL for a bad escape.
 */
int ao_debug_form_get(const char *form, const char *key, char **ret, struct ao_error *reterr);
