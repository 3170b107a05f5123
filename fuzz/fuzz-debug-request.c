/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the debug socket's request parsing. Input: a request target
 * ("/module/echo/values.json?global=true"), taken through the steps the
 * HTTP thread and the main thread take: h2o_url_normalize_path() (what h2o
 * gives as path_normalized), the query split off, the format suffix
 * stripped, then ao_debug_request_parse().
 *
 * Besides crashes, leaks and undefined behaviour, it aborts when:
 *   - an accepted request's route and module, written back as a path, are
 *     not the path that was parsed (nothing is accepted by accident), or a
 *     module route has an empty module name or one with a '/';
 *   - a refusal is not -ENOENT or -EINVAL, is not one printable line, or
 *     changed the result;
 *   - a path refused as unknown is accepted with another query, or the
 *     suffix stripping makes the path longer or leaves a suffix-only segment.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <h2o.h>

#include "ao/debug-request.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Request lines are short; h2o refuses long ones before parsing anyway. */
#define FUZZ_INPUT_MAX 8192

static void check(bool ok)
{
        if (!ok)
                abort();
}

static void check_message(const struct ao_error *err)
{
        check(err->msg[0] != '\0');
        for (const unsigned char *p = (const unsigned char *) err->msg; *p; p++)
                check(*p >= 0x20 && *p != 0x7F);
}

static const char *const fixed_paths[] = {
    [AO_DEBUG_CONVERGE] = "/status/converge",
    [AO_DEBUG_QUEUE_LIST] = "/queue/list",
    [AO_DEBUG_QUEUE_MAIN] = "/queue/main",
    [AO_DEBUG_GLOBAL_VALUES] = "/global/values",
    [AO_DEBUG_GLOBAL_CONFIG] = "/global/config",
    [AO_DEBUG_GLOBAL_PATCHES] = "/global/patches",
    [AO_DEBUG_GLOBAL_SNAPSHOTS] = "/global/snapshots",
    [AO_DEBUG_MODULE_LIST] = "/module/list",
    [AO_DEBUG_MODULE_RESOURCE_MONITOR] = "/module/resource-monitor",
    [AO_DEBUG_GLOBAL_LIST] = "/global/list",
    [AO_DEBUG_CONFIG_LIST] = "/config/list",
    [AO_DEBUG_CONFIG_SET] = "/config/set",
};

static const char *const module_whats[] = {
    [AO_DEBUG_MODULE_VALUES] = "values",   [AO_DEBUG_MODULE_CONFIG] = "config",
    [AO_DEBUG_MODULE_PATCHES] = "patches", [AO_DEBUG_MODULE_SNAPSHOTS] = "snapshots",
    [AO_DEBUG_MODULE_RENDER] = "render",
};

/* The path @req stands for, written back. */
static void check_round_trip(const struct ao_debug_request *req, const char *path)
{
        char again[AO_DEBUG_MODULE_NAME_MAX + 64];

        check(req->route >= 0 && req->route < _AO_DEBUG_ROUTE_MAX);
        if (req->route < AO_DEBUG_MODULE_VALUES) {
                check(req->module[0] == '\0');
                check(strcmp(path, fixed_paths[req->route]) == 0);
                return;
        }
        check(req->module[0] != '\0' && strchr(req->module, '/') == NULL);
        (void) snprintf(again, sizeof(again), "/module/%s/%s", req->module, module_whats[req->route]);
        check(strcmp(path, again) == 0);
}

static void parse_target(const char *target, size_t len)
{
        h2o_mem_pool_t pool;
        size_t query_at = SIZE_MAX, *norm_indexes = NULL;

        h2o_mem_init_pool(&pool);
        h2o_iovec_t norm = h2o_url_normalize_path(&pool, target, len, &query_at, &norm_indexes);
        size_t path_len = norm.len;
        enum ao_http_format format = ao_http_format_from_path(norm.base, &path_len);
        check(format >= 0 && format < _AO_HTTP_FORMAT_MAX && path_len <= norm.len);
        check(format == AO_HTTP_FORMAT_DEFAULT || (path_len > 0 && norm.base[path_len - 1] != '/'));

        char *path = strndup(norm.base, path_len);
        char *query = query_at != SIZE_MAX ? strndup(target + query_at + 1, len - query_at - 1) : strdup("");
        struct ao_debug_request req = {.route = _AO_DEBUG_ROUTE_INVALID, .module = "untouched"};
        struct ao_error err = {0};
        int r = ao_debug_request_parse(path, query, &req, &err);
        if (r == 0) {
                check_round_trip(&req, path);
        } else {
                check(r == -ENOENT || r == -EINVAL);
                check_message(&err);
                check(req.route == _AO_DEBUG_ROUTE_INVALID && strcmp(req.module, "untouched") == 0);
                /* The path alone decides whether there is such a route. */
                if (r == -ENOENT)
                        check(ao_debug_request_parse(path, "", &req, &err) == -ENOENT);
        }
        free(path);
        free(query);
        h2o_mem_clear_pool(&pool);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size > FUZZ_INPUT_MAX)
                return 0;
        /* A C string, as the request line reaches h2o (it refuses NUL bytes). */
        if (memchr(data, '\0', size))
                return 0;
        parse_target((const char *) data, size);
        return 0;
}
