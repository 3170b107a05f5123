/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Debug commands: one GET over the operator's debug socket, the JSON answer
 * printed in the format asked for. The socket serves JSON; YAML and the
 * text tables are made here, so every format shows the same document.
 */
#include "ao/debug.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <string.h>
#include <time.h>

#include "ao/alloc.h"
#include "ao/settings.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"

#define RESPONSE_MAX (64u * 1024 * 1024)

enum format {
        FORMAT_TEXT,
        FORMAT_YAML,
        FORMAT_JSON,
};

struct debug_command {
        const char *group; /* "queue", "global", "module" */
        const char *verb;  /* "list", "values", ... */
        bool takes_module; /* a module name follows */
        enum format default_format;
        const char *path; /* "/queue/list"; NULL for module commands: /module/<name>/<verb> */
        const char *summary;
        void (*print_text)(const cJSON *doc);
};

static void print_queues_text(const cJSON *doc);
static void print_modules_text(const cJSON *doc);

static const struct debug_command debug_commands[] = {
    {"queue", "list", false, FORMAT_TEXT, "/queue/list", "tasks in every queue", print_queues_text},
    {"queue", "main", false, FORMAT_TEXT, "/queue/main", "tasks in the main queue", print_queues_text},
    {"global", "values", false, FORMAT_YAML, "/global/values", "current global values", NULL},
    {"global", "patches", false, FORMAT_JSON, "/global/patches", "stored JSON patches of global values",
     NULL},
    {"global", "config", false, FORMAT_YAML, "/global/config", "global config values", NULL},
    {"global", "snapshots", false, FORMAT_YAML, "/global/snapshots", "global hooks' kubernetes snapshots",
     NULL},
    {"module", "list", false, FORMAT_TEXT, "/module/list", "modules and their state", print_modules_text},
    {"module", "values", true, FORMAT_YAML, NULL, "a module's values", NULL},
    {"module", "patches", true, FORMAT_JSON, NULL, "a module's stored JSON patches", NULL},
    {"module", "config", true, FORMAT_YAML, NULL, "a module's config values", NULL},
    {"module", "snapshots", true, FORMAT_YAML, NULL, "its hooks' kubernetes snapshots", NULL},
    {"module", "resource-monitor", false, FORMAT_YAML, "/module/resource-monitor", "helm resource monitors",
     NULL},
};

bool ao_debug_is_command(char *const *words)
{
        for (size_t i = 0; words[0] && i < AO_ARRAY_SIZE(debug_commands); i++)
                if (strcmp(words[0], debug_commands[i].group) == 0)
                        return true;
        return false;
}

void ao_debug_print_help(FILE *out)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(debug_commands); i++) {
                const struct debug_command *c = &debug_commands[i];
                char head[96];
                (void) snprintf(head, sizeof(head), "%s %s%s [-o text|yaml|json]", c->group, c->verb,
                                c->takes_module ? " MODULE" : "");
                fprintf(out, "  %-44s %s\n", head, c->summary);
        }
        fprintf(out, "  %-44s %s\n", "  -g, --global", "module values/config: add the global section");
        fprintf(out, "  %-44s %s\n", "  -w, --watch [--interval S]",
                "print again every S seconds (default 2) until interrupted");
}

static size_t collect(char *data, size_t size, size_t n, void *userdata)
{
        struct ao_strbuf *sb = userdata;
        if (sb->len + size * n > RESPONSE_MAX)
                return 0;
        ao_strbuf_append_n(sb, data, size * n);
        return size * n;
}

/* GET @path over the debug socket; the body in @body, the HTTP status returned (or -1 with @body the error). */
static long get(const char *socket_path, const char *path, struct ao_strbuf *body)
{
        CURL *curl = curl_easy_init();
        if (!curl) {
                ao_strbuf_append(body, "cannot initialise libcurl");
                return -1;
        }
        char errbuf[CURL_ERROR_SIZE] = "";
        _cleanup_free_ char *url = ao_xasprintf("http://addon-operator%s", path);
        curl_easy_setopt(curl, CURLOPT_UNIX_SOCKET_PATH, socket_path);
        curl_easy_setopt(curl, CURLOPT_URL, url);
        curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, collect);
        curl_easy_setopt(curl, CURLOPT_WRITEDATA, body);
        curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
        curl_easy_setopt(curl, CURLOPT_TIMEOUT, 30L);
        CURLcode rc = curl_easy_perform(curl);
        long status = -1;
        if (rc == CURLE_OK)
                curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
        else {
                ao_strbuf_reset(body);
                ao_strbuf_append(body, errbuf[0] ? errbuf : curl_easy_strerror(rc));
        }
        curl_easy_cleanup(curl);
        return status;
}

static const char *string_of(const cJSON *o, const char *key)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        return cJSON_IsString(v) ? v->valuestring : "";
}

static double number_of(const cJSON *o, const char *key)
{
        const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
        return cJSON_IsNumber(v) ? v->valuedouble : 0;
}

static void print_queues_text(const cJSON *doc)
{
        const cJSON *q;
        cJSON_ArrayForEach(q, doc)
        {
                printf("Queue '%s': length %.0f, status: '%s'\n", string_of(q, "name"),
                       number_of(q, "length"), string_of(q, "status"));
                const cJSON *t;
                int i = 0;
                cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(q, "tasks"))
                {
                        printf("%2d. %s", ++i, string_of(t, "description"));
                        if (number_of(t, "failures") > 0)
                                printf(" (failed %.0f times)", number_of(t, "failures"));
                        printf("\n");
                }
                printf("\n");
        }
}

static void print_modules_text(const cJSON *doc)
{
        printf("%-32s %6s  %s\n", "MODULE", "ORDER", "STATE");
        const cJSON *m;
        cJSON_ArrayForEach(m, cJSON_GetObjectItemCaseSensitive(doc, "modules"))
        {
                const cJSON *enabled = cJSON_GetObjectItemCaseSensitive(m, "enabled");
                printf("%-32s %6.0f  %s\n", string_of(m, "name"), number_of(m, "order"),
                       cJSON_IsTrue(enabled) ? "enabled" : "disabled");
        }
}

static int print_document(const struct debug_command *c, enum format format, const char *text)
{
        cJSON *doc = NULL;
        if (ao_yaml_load(text, strlen(text), "response", &doc, NULL) < 0) {
                fputs(text, stdout);
                return 0;
        }
        if (format == FORMAT_JSON) {
                char *out = cJSON_Print(doc);
                printf("%s\n", out ? out : "");
                free(out);
        } else if (format == FORMAT_YAML || !c->print_text) {
                _cleanup_free_ char *out = ao_yaml_emit(doc);
                fputs(out, stdout);
        } else {
                c->print_text(doc);
        }
        cJSON_Delete(doc);
        return fflush(stdout) == 0 ? 0 : 1;
}

static int fetch_and_print(const struct ao_cli *cli, const struct debug_command *c, const char *path,
                           const char *request);

/* Like watch(1): clear the screen, print, wait, until interrupted (SIGINT ends the process). */
static int watch(const struct ao_cli *cli, const struct debug_command *c, const char *path,
                 const char *request)
{
        double interval = cli->watch_interval > 0 ? cli->watch_interval : 2.0;
        struct timespec pause = {.tv_sec = (time_t) interval,
                                 .tv_nsec = (long) ((interval - (double) (time_t) interval) * 1e9)};
        for (;;) {
                printf("\033[H\033[2J");
                printf("Every %.1fs: addon-operator %s %s\n\n", interval, c->group, c->verb);
                int code = fetch_and_print(cli, c, path, request);
                if (code != 0)
                        return code;
                (void) fflush(stdout);
                (void) nanosleep(&pause, NULL);
        }
}

static enum format format_of(const struct ao_cli *cli, enum format fallback)
{
        if (!cli->output)
                return fallback;
        return strcmp(cli->output, "json") == 0   ? FORMAT_JSON
               : strcmp(cli->output, "yaml") == 0 ? FORMAT_YAML
                                                  : FORMAT_TEXT;
}

int ao_debug_main(const struct ao_cli *cli)
{
        char *const *w = cli->command;
        const struct debug_command *c = NULL;
        for (size_t i = 0; w[0] && w[1] && i < AO_ARRAY_SIZE(debug_commands); i++)
                if (strcmp(w[0], debug_commands[i].group) == 0 && strcmp(w[1], debug_commands[i].verb) == 0)
                        c = &debug_commands[i];
        size_t n_words = 0;
        while (w[n_words])
                n_words++;
        if (!c || n_words != (c->takes_module ? 3u : 2u)) {
                fprintf(stderr, "addon-operator: unknown debug command; the debug commands are:\n");
                ao_debug_print_help(stderr);
                return 2;
        }
        _cleanup_free_ char *path =
            c->takes_module ? ao_xasprintf("/module/%s/%s", w[2], c->verb) : ao_xstrdup(c->path);
        _cleanup_free_ char *request =
            ao_xasprintf("%s.json%s", path, c->takes_module && cli->with_global ? "?global=true" : "");
        if (cli->watch)
                return watch(cli, c, path, request);
        return fetch_and_print(cli, c, path, request);
}

/* One request, printed; the exit code. */
static int fetch_and_print(const struct ao_cli *cli, const struct debug_command *c, const char *path,
                           const char *request)
{
        struct ao_strbuf body = {0};
        const char *socket_path = cli->settings.debug_unix_socket;
        long status = get(socket_path, request, &body);
        int code = 0;
        if (status < 0) {
                fprintf(stderr, "addon-operator: cannot reach the operator at '%s': %s\n", socket_path,
                        ao_strbuf_str(&body));
                code = 1;
        } else if (status != 200) {
                fprintf(stderr, "addon-operator: %s: %s", path, ao_strbuf_str(&body));
                code = 1;
        } else {
                code = print_document(c, format_of(cli, c->default_format), ao_strbuf_str(&body));
        }
        ao_strbuf_done(&body);
        return code;
}
