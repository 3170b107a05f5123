/* SPDX-License-Identifier: Apache-2.0 */
/* The debug API's requests: path to route and module, query to flags, and what is refused. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ao/debug-request.h"
#include "../tap.h"

static const struct ok_case {
        const char *path, *query;
        enum ao_debug_route route;
        const char *module;
        bool global, output_json;
} ok_cases[] = {
    {"/status/converge", "", AO_DEBUG_CONVERGE, "", false, false},
    {"/status/converge", "output=json", AO_DEBUG_CONVERGE, "", false, true},
    {"/status/converge", "output=yaml", AO_DEBUG_CONVERGE, "", false, false},
    {"/status/converge", "output=json&output=yaml", AO_DEBUG_CONVERGE, "", false, true},
    {"/status/converge", "xoutput=json", AO_DEBUG_CONVERGE, "", false, false},
    {"/queue/list", NULL, AO_DEBUG_QUEUE_LIST, "", false, false},
    {"/queue/main", "", AO_DEBUG_QUEUE_MAIN, "", false, false},
    {"/global/values", "", AO_DEBUG_GLOBAL_VALUES, "", false, false},
    {"/global/config", "", AO_DEBUG_GLOBAL_CONFIG, "", false, false},
    {"/global/patches", "", AO_DEBUG_GLOBAL_PATCHES, "", false, false},
    {"/global/snapshots", "", AO_DEBUG_GLOBAL_SNAPSHOTS, "", false, false},
    {"/module/list", "", AO_DEBUG_MODULE_LIST, "", false, false},
    {"/module/resource-monitor", "", AO_DEBUG_MODULE_RESOURCE_MONITOR, "", false, false},
    {"/module/echo-server/values", "global=true", AO_DEBUG_MODULE_VALUES, "echo-server", true, false},
    {"/module/echo-server/config", "global=1", AO_DEBUG_MODULE_CONFIG, "echo-server", true, false},
    {"/module/echo-server/config", "global=False", AO_DEBUG_MODULE_CONFIG, "echo-server", false, false},
    {"/module/echo-server/values", "global=%74rue", AO_DEBUG_MODULE_VALUES, "echo-server", true, false},
    {"/module/echo-server/values", "a=b%20c&global=T&global=nonsense", AO_DEBUG_MODULE_VALUES, "echo-server",
     true, false},
    {"/module/echo-server/values", "&&global=true&", AO_DEBUG_MODULE_VALUES, "echo-server", true, false},
    {"/module/echo-server/values", "xglobal=true", AO_DEBUG_MODULE_VALUES, "echo-server", false, false},
    {"/module/echo-server/patches", "", AO_DEBUG_MODULE_PATCHES, "echo-server", false, false},
    {"/module/echo-server/snapshots", "", AO_DEBUG_MODULE_SNAPSHOTS, "echo-server", false, false},
    /* "list" and "resource-monitor" are routes only when alone. */
    {"/module/list/values", "", AO_DEBUG_MODULE_VALUES, "list", false, false},
    {"/global/list", "", AO_DEBUG_GLOBAL_LIST, "", false, false},
    {"/config/list", "", AO_DEBUG_CONFIG_LIST, "", false, false},
    {"/config/set", "", AO_DEBUG_CONFIG_SET, "", false, false},
    {"/module/echo-server/render", "debug=false&diff=false", AO_DEBUG_MODULE_RENDER, "echo-server", false,
     false},
};

/* The other flags: showEmpty, debug, diff, module. */
static void test_flags(void)
{
        struct ao_debug_request req;
        struct ao_error err = {0};

        tap_is_int(ao_debug_request_parse("/module/a/render", "debug=true&diff=1", &req, &err), 0,
                   "render?debug=true&diff=1: accepted");
        tap_ok(req.debug && req.diff && !req.show_empty, "render: debug and diff set");
        tap_is_int(ao_debug_request_parse("/queue/list", "showEmpty=true&showEmpty=false", &req, &err), 0,
                   "queue/list?showEmpty: accepted");
        tap_ok(req.show_empty && !req.debug, "queue/list: the first showEmpty counts");
        tap_is_int(ao_debug_request_parse("/module/resource-monitor", "module=echo-server", &req, &err), 0,
                   "resource-monitor?module=: accepted");
        tap_is_str(req.only_module, "echo-server", "resource-monitor: the module kept");
        tap_is_int(ao_debug_request_parse("/module/a/render", "diff=sure", &req, &err), -EINVAL,
                   "render?diff=sure: refused");
        tap_is_str(err.msg, "query: diff is not a boolean: 'sure'", "render?diff=sure: message");

        tap_ok(ao_debug_route_is_post(AO_DEBUG_CONFIG_SET), "config set is a POST");
        tap_ok(!ao_debug_route_is_post(AO_DEBUG_CONFIG_LIST), "config list is a GET");
}

/* A form body (or query) read a key at a time. */
static void test_form(void)
{
        const char *form = "name=log.level&value=debug&duration=1m30s&value=info&note=a+b%21";
        char *v = NULL;
        struct ao_error err = {0};

        tap_is_int(ao_debug_form_get(form, "name", &v, &err), 1, "form: name found");
        tap_is_str(v, "log.level", "form: name");
        free(v);
        tap_is_int(ao_debug_form_get(form, "value", &v, &err), 1, "form: value found");
        tap_is_str(v, "debug", "form: the first value counts");
        free(v);
        tap_is_int(ao_debug_form_get(form, "note", &v, &err), 1, "form: note found");
        tap_is_str(v, "a b!", "form: + and %%XX decoded");
        free(v);
        tap_is_int(ao_debug_form_get(form, "missing", &v, &err), 0, "form: an absent key");
        tap_ok(v == NULL, "form: absent gives NULL");
        tap_is_int(ao_debug_form_get("name=%zz", "name", &v, &err), -EINVAL, "form: a bad escape");
        tap_is_str(err.msg, "query: invalid %-escape in 'name=%zz'", "form: the message of a bad escape");
        tap_is_int(ao_debug_form_get("", "name", &v, &err), 0, "form: empty");
}

static const struct bad_case {
        const char *path, *query;
        int code;
        const char *message;
} bad_cases[] = {
    {"/", "", -ENOENT, "unknown path"},
    {"/module/", "", -ENOENT, "unknown path"},
    {"/module//values", "", -ENOENT, "unknown path"},
    {"/module/a/b/values", "", -ENOENT, "unknown path"},
    {"/module/a/rendered", "", -ENOENT, "unknown path"},
    {"/module/a", "", -ENOENT, "unknown path"},
    {"/global/values/x", "", -ENOENT, "unknown path"},
    {"/module/a/values", "global=maybe", -EINVAL, "query: global is not a boolean: 'maybe'"},
    {"/module/a/values", "global=", -EINVAL, "query: global is not a boolean: ''"},
    {"/module/a/values", "global=%zz", -EINVAL, "query: invalid %-escape in 'global=%zz'"},
    {"/module/a/values", "global=true%0", -EINVAL, "query: invalid %-escape in 'global=true%0'"},
    {"/module/a/values", "global=true%00", -EINVAL, "query: invalid %-escape in 'global=true%00'"},
    {"/module/a/values", "global=%0a", -EINVAL, "query: global is not a boolean: '\\n'"},
    {"/module/a/values", "unused=%", -EINVAL, "query: invalid %-escape in 'unused=%'"},
};

static void test_ok(const struct ok_case *c)
{
        struct ao_debug_request req;
        struct ao_error err = {0};
        int r = ao_debug_request_parse(c->path, c->query, &req, &err);

        tap_is_int(r, 0, "%s?%s: accepted", c->path, c->query ? c->query : "");
        if (r < 0)
                return;
        tap_is_int(req.route, c->route, "%s?%s: route", c->path, c->query ? c->query : "");
        tap_is_str(req.module, c->module, "%s?%s: module", c->path, c->query ? c->query : "");
        tap_ok(req.global == c->global && req.output_json == c->output_json, "%s?%s: flags", c->path,
               c->query ? c->query : "");
}

static void test_bad(const struct bad_case *c)
{
        struct ao_debug_request req = {.route = AO_DEBUG_QUEUE_LIST};
        struct ao_error err = {0};

        tap_is_int(ao_debug_request_parse(c->path, c->query, &req, &err), c->code, "%s?%s: refused", c->path,
                   c->query);
        tap_is_str(err.msg, c->message, "%s?%s: message", c->path, c->query);
        tap_is_int(req.route, AO_DEBUG_QUEUE_LIST, "%s?%s: result untouched", c->path, c->query);
}

static void test_format_suffix(void)
{
        static const struct {
                const char *path;
                enum ao_http_format format;
                size_t len;
        } cases[] = {
            {"/module/list.json", AO_HTTP_FORMAT_JSON, 12}, {"/module/list.yaml", AO_HTTP_FORMAT_YAML, 12},
            {"/module/list.text", AO_HTTP_FORMAT_TEXT, 12}, {"/module/list", AO_HTTP_FORMAT_DEFAULT, 12},
            {"/x/.json", AO_HTTP_FORMAT_DEFAULT, 8},        {".json", AO_HTTP_FORMAT_DEFAULT, 5},
            {"/a.json.yaml", AO_HTTP_FORMAT_YAML, 7},
        };
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                size_t len = strlen(cases[i].path);
                tap_is_int(ao_http_format_from_path(cases[i].path, &len), cases[i].format, "%s: format",
                           cases[i].path);
                tap_is_int(len, cases[i].len, "%s: length without the suffix", cases[i].path);
        }
}

int main(void)
{
        for (size_t i = 0; i < sizeof(ok_cases) / sizeof(ok_cases[0]); i++)
                test_ok(&ok_cases[i]);
        for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++)
                test_bad(&bad_cases[i]);
        test_format_suffix();
        test_flags();
        test_form();
        return tap_done();
}
