/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Debug commands: one request over the operator's debug socket, its answer
 * printed as it came. The socket makes every format (the path's suffix), so
 * `curl --unix-socket` and these commands print the same; each command's
 * default format is the Go operator's.
 */
#include "ao/debug.h"

#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <string.h>
#include <time.h>

#include "ao/alloc.h"
#include "ao/duration.h"
#include "ao/settings.h"
#include "ao/strbuf.h"

#define RESPONSE_MAX (64u * 1024 * 1024)

enum format {
        FORMAT_NONE, /* the answer is text as it is: no -o */
        FORMAT_TEXT,
        FORMAT_YAML,
        FORMAT_JSON,
};

enum args {
        ARGS_NONE,
        ARGS_MODULE,          /* MODULE */
        ARGS_OPTIONAL_MODULE, /* [MODULE] */
        ARGS_CONFIG_SET,      /* NAME VALUE [DURATION] */
        ARGS_URL_PATH,        /* URLPATH */
};

struct debug_command {
        const char *group; /* "queue", "config", "global", "module", "raw" */
        const char *verb;  /* "list", "values", ...; NULL for raw */
        enum args args;
        /* The Go operator's default. FORMAT_TEXT where the socket has a text answer of its own. */
        enum format default_format;
        bool text_form; /* the socket has a ".text" answer; without one, -o text shows YAML */
        const char *summary;
};

static const struct debug_command debug_commands[] = {
    {"queue", "list", ARGS_NONE, FORMAT_TEXT, true, "tasks in every queue (-e: list the empty queues)"},
    {"queue", "main", ARGS_NONE, FORMAT_TEXT, true, "tasks in the main queue"},
    {"config", "list", ARGS_NONE, FORMAT_TEXT, true, "runtime parameters (log.level)"},
    {"config", "set", ARGS_CONFIG_SET, FORMAT_NONE, false,
     "change a runtime parameter, for DURATION if given"},
    {"global", "list", ARGS_NONE, FORMAT_YAML, false, "global hooks"},
    {"global", "values", ARGS_NONE, FORMAT_YAML, false, "current global values"},
    {"global", "config", ARGS_NONE, FORMAT_YAML, false, "global config values"},
    {"global", "patches", ARGS_NONE, FORMAT_JSON, false, "stored JSON patches of global values"},
    {"global", "snapshots", ARGS_NONE, FORMAT_YAML, false, "global hooks' kubernetes snapshots"},
    {"module", "list", ARGS_NONE, FORMAT_YAML, true,
     "enabled modules (-o text: every module, its order and state)"},
    {"module", "values", ARGS_MODULE, FORMAT_YAML, false, "a module's values (-g: with the global ones)"},
    {"module", "config", ARGS_MODULE, FORMAT_YAML, false,
     "a module's config values (-g: with the global ones)"},
    {"module", "patches", ARGS_MODULE, FORMAT_JSON, false, "a module's stored JSON patches"},
    {"module", "snapshots", ARGS_MODULE, FORMAT_YAML, false, "its hooks' kubernetes snapshots"},
    {"module", "render", ARGS_MODULE, FORMAT_NONE, false,
     "its chart rendered with its values (--debug; --diff: against the release)"},
    {"module", "resource-monitor", ARGS_OPTIONAL_MODULE, FORMAT_YAML, true,
     "objects of the releases watched (-o text: the monitors' detail)"},
    {"raw", NULL, ARGS_URL_PATH, FORMAT_NONE, false, "GET a path of the debug socket as it is"},
};

static const char *const args_usage[] = {
    [ARGS_NONE] = "",
    [ARGS_MODULE] = " MODULE",
    [ARGS_OPTIONAL_MODULE] = " [MODULE]",
    [ARGS_CONFIG_SET] = " NAME VALUE [DURATION]",
    [ARGS_URL_PATH] = " URLPATH",
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
                (void) snprintf(head, sizeof(head), "%s%s%s%s%s", c->group, c->verb ? " " : "",
                                c->verb ? c->verb : "", args_usage[c->args],
                                c->default_format == FORMAT_NONE ? "" : " [-o text|yaml|json]");
                fprintf(out, "  %-46s %s\n", head, c->summary);
        }
        fprintf(out, "  %-46s %s\n", "  -w, --watch [--interval S]",
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

/*
 * GET @path over the debug socket (POST @form when given); the body in @body, the HTTP status
 * returned (or -1 with @body the error).
 */
static long request(const char *socket_path, const char *path, const char *form, struct ao_strbuf *body)
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
        if (form)
                curl_easy_setopt(curl, CURLOPT_POSTFIELDS, form);
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

/* Where the command's answer is: the path, the format suffix and the query. */
static char *request_path(const struct ao_cli *cli, const struct debug_command *c, enum format format,
                          char *const *args)
{
        static const char *const suffixes[] = {
            [FORMAT_NONE] = "", [FORMAT_TEXT] = ".text", [FORMAT_YAML] = ".yaml", [FORMAT_JSON] = ".json"};
        const char *suffix = suffixes[format];
        const char *yes_no[] = {"false", "true"};
        if (c->args == ARGS_URL_PATH)
                return ao_xstrdup(args[0]);
        _cleanup_free_ char *module = NULL;
        if (args[0]) {
                char *escaped = curl_easy_escape(NULL, args[0], 0);
                module = ao_xstrdup(escaped ? escaped : "");
                curl_free(escaped);
        }
        if (strcmp(c->verb, "resource-monitor") == 0)
                return ao_xasprintf("/module/resource-monitor%s%s%s", suffix, module ? "?module=" : "",
                                    module ? module : "");
        if (strcmp(c->verb, "render") == 0)
                return ao_xasprintf("/module/%s/render?debug=%s&diff=%s", module, yes_no[cli->render_debug],
                                    yes_no[cli->render_diff]);
        if (c->args == ARGS_MODULE && (strcmp(c->verb, "values") == 0 || strcmp(c->verb, "config") == 0))
                return ao_xasprintf("/module/%s/%s%s?global=%s", module, c->verb, suffix,
                                    yes_no[cli->with_global]);
        if (c->args == ARGS_MODULE)
                return ao_xasprintf("/module/%s/%s%s", module, c->verb, suffix);
        if (strcmp(c->group, "queue") == 0 && strcmp(c->verb, "list") == 0)
                return ao_xasprintf("/queue/list%s?showEmpty=%s", suffix, yes_no[cli->show_empty]);
        return ao_xasprintf("/%s/%s%s", c->group, c->verb, suffix);
}

/* `config set NAME VALUE [DURATION]` as the Go operator's form: name, value and duration. */
static char *config_form(char *const *args)
{
        static const char *const keys[] = {"name", "value", "duration"};
        struct ao_strbuf sb = {0};
        for (size_t i = 0; i < AO_ARRAY_SIZE(keys) && args[i]; i++) {
                char *escaped = curl_easy_escape(NULL, args[i], 0);
                ao_strbuf_appendf(&sb, "%s%s=%s", i ? "&" : "", keys[i], escaped ? escaped : "");
                curl_free(escaped);
        }
        return ao_strbuf_steal(&sb);
}

/* The answer as it came, with a final newline. */
static int print_answer(const char *text)
{
        size_t len = strlen(text);
        fputs(text, stdout);
        if (len > 0 && text[len - 1] != '\n')
                fputc('\n', stdout);
        return fflush(stdout) == 0 ? 0 : 1;
}

/* One request, printed; the exit code. */
static int fetch_and_print(const struct ao_cli *cli, const char *path, const char *form)
{
        struct ao_strbuf body = {0};
        const char *socket_path = cli->settings.debug_unix_socket;
        long status = request(socket_path, path, form, &body);
        int code = 0;
        if (status < 0) {
                fprintf(stderr, "addon-operator: cannot reach the operator at '%s': %s\n", socket_path,
                        ao_strbuf_str(&body));
                code = 1;
        } else if (status != 200) {
                /* The path without its format and query: the error is about what was asked for. */
                size_t len = strcspn(path, "?");
                if (len > 5 &&
                    (strncmp(path + len - 5, ".json", 5) == 0 || strncmp(path + len - 5, ".yaml", 5) == 0 ||
                     strncmp(path + len - 5, ".text", 5) == 0))
                        len -= 5;
                fprintf(stderr, "addon-operator: %.*s: %s", (int) len, path, ao_strbuf_str(&body));
                code = 1;
        } else {
                code = print_answer(ao_strbuf_str(&body));
        }
        ao_strbuf_done(&body);
        return code;
}

/* Like watch(1): clear the screen, print, wait, until interrupted (SIGINT ends the process). */
static int watch(const struct ao_cli *cli, const char *title, const char *path)
{
        double interval = cli->watch_interval > 0 ? cli->watch_interval : 2.0;
        struct timespec pause = {.tv_sec = (time_t) interval,
                                 .tv_nsec = (long) ((interval - (double) (time_t) interval) * 1e9)};
        for (;;) {
                printf("\033[H\033[2J");
                printf("Every %.1fs: addon-operator %s\n\n", interval, title);
                int code = fetch_and_print(cli, path, NULL);
                if (code != 0)
                        return code;
                (void) fflush(stdout);
                (void) nanosleep(&pause, NULL);
        }
}

static enum format format_of(const struct ao_cli *cli, const struct debug_command *c)
{
        if (c->default_format == FORMAT_NONE || !cli->output)
                return c->default_format;
        if (strcmp(cli->output, "json") == 0)
                return FORMAT_JSON;
        if (strcmp(cli->output, "yaml") == 0 || !c->text_form)
                return FORMAT_YAML;
        return FORMAT_TEXT;
}

static const struct debug_command *find_command(char *const *w)
{
        for (size_t i = 0; w[0] && i < AO_ARRAY_SIZE(debug_commands); i++) {
                const struct debug_command *c = &debug_commands[i];
                if (strcmp(w[0], c->group) == 0 && (!c->verb || (w[1] && strcmp(w[1], c->verb) == 0)))
                        return c;
        }
        return NULL;
}

static bool args_fit(enum args args, size_t n)
{
        switch (args) {
        case ARGS_NONE:
                return n == 0;
        case ARGS_MODULE:
        case ARGS_URL_PATH:
                return n == 1;
        case ARGS_OPTIONAL_MODULE:
                return n <= 1;
        case ARGS_CONFIG_SET:
                return n == 2 || n == 3;
        }
        return false;
}

int ao_debug_main(const struct ao_cli *cli)
{
        char *const *w = cli->command;
        const struct debug_command *c = find_command(w);
        char *const *args = c ? w + (c->verb ? 2 : 1) : w;
        size_t n_args = 0;
        while (args[n_args])
                n_args++;
        if (!c || !args_fit(c->args, n_args)) {
                fprintf(stderr, "addon-operator: unknown debug command; the debug commands are:\n");
                ao_debug_print_help(stderr);
                return 2;
        }
        uint64_t usec;
        if (c->args == ARGS_CONFIG_SET && n_args == 3 && ao_parse_duration_usec(args[2], &usec) < 0) {
                fprintf(stderr,
                        "addon-operator: invalid duration '%s': a Go duration such as 90s, 10m or 1h30m\n",
                        args[2]);
                return 2;
        }
        if (c->args == ARGS_URL_PATH && args[0][0] != '/') {
                fprintf(stderr, "addon-operator: raw: '%s' is not a path (it starts with '/')\n", args[0]);
                return 2;
        }
        _cleanup_free_ char *path = request_path(cli, c, format_of(cli, c), args);
        _cleanup_free_ char *form = c->args == ARGS_CONFIG_SET ? config_form(args) : NULL;
        if (cli->watch && !form) {
                _cleanup_free_ char *title =
                    ao_xasprintf("%s%s%s", c->group, c->verb ? " " : "", c->verb ? c->verb : "");
                return watch(cli, title, path);
        }
        return fetch_and_print(cli, form ? "/config/set" : path, form);
}
