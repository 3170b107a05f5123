/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The problems lint found. Checks run in whatever order suits them (hooks
 * answer --config in parallel), so the report sorts by path before
 * printing: the output is the same on every run and reads file by file.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "internal.h"

struct problem {
        enum lint_severity severity;
        char *path;
        char *message;
        size_t seq; /* keeps the order found among problems of one path */
};

struct lint_report {
        struct problem *items;
        size_t n;
        size_t errors, warnings;
};

static const char *severity_name(enum lint_severity s)
{
        return s == LINT_ERROR ? "error" : "warning";
}

struct lint_report *lint_report_new(void)
{
        return ao_xcalloc(1, sizeof(struct lint_report));
}

struct lint_report *lint_report_free(struct lint_report *r)
{
        if (!r)
                return NULL;
        for (size_t i = 0; i < r->n; i++) {
                free(r->items[i].path);
                free(r->items[i].message);
        }
        free(r->items);
        free(r);
        return NULL;
}

void lint_problem(struct lint_report *r, enum lint_severity severity, const char *path, const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        char *message = ao_xvasprintf(fmt, ap);
        va_end(ap);
        r->items = ao_xreallocarray(r->items, r->n + 1, sizeof(*r->items));
        r->items[r->n] =
            (struct problem){.severity = severity, .path = ao_xstrdup(path), .message = message, .seq = r->n};
        r->n++;
        if (severity == LINT_ERROR)
                r->errors++;
        else
                r->warnings++;
}

size_t lint_report_errors(const struct lint_report *r)
{
        return r->errors;
}

size_t lint_report_warnings(const struct lint_report *r)
{
        return r->warnings;
}

static int compare_problems(const void *a, const void *b)
{
        const struct problem *x = a, *y = b;
        int c = strcmp(x->path, y->path);
        if (c != 0)
                return c;
        return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void sort(const struct lint_report *r)
{
        if (r->n > 1)
                qsort(r->items, r->n, sizeof(*r->items), compare_problems);
}

void lint_report_print_text(const struct lint_report *r)
{
        sort(r);
        for (size_t i = 0; i < r->n; i++)
                printf("%s: %s: %s\n", r->items[i].path, severity_name(r->items[i].severity),
                       r->items[i].message);
}

void lint_report_print_json(const struct lint_report *r, size_t n_modules, size_t n_hooks)
{
        sort(r);
        cJSON *doc = cJSON_CreateObject();
        cJSON *list = cJSON_AddArrayToObject(doc, "problems");
        for (size_t i = 0; i < r->n; i++) {
                cJSON *p = cJSON_CreateObject();
                cJSON_AddStringToObject(p, "path", r->items[i].path);
                cJSON_AddStringToObject(p, "severity", severity_name(r->items[i].severity));
                cJSON_AddStringToObject(p, "message", r->items[i].message);
                cJSON_AddItemToArray(list, p);
        }
        cJSON_AddNumberToObject(doc, "errors", (double) r->errors);
        cJSON_AddNumberToObject(doc, "warnings", (double) r->warnings);
        cJSON_AddNumberToObject(doc, "modules", (double) n_modules);
        cJSON_AddNumberToObject(doc, "hooks", (double) n_hooks);
        char *text = cJSON_Print(doc);
        if (!text)
                abort(); /* as ao_xmalloc */
        printf("%s\n", text);
        free(text);
        cJSON_Delete(doc);
}

/*
 * The length of the location at the start of @message: @path, maybe
 * continued by a file inside it or ":line:column", up to a ": " (0 if none).
 */
static size_t location_prefix(const char *path, const char *message)
{
        size_t n = strlen(path);
        if (strncmp(message, path, n) != 0)
                return 0;
        size_t end = n + strcspn(message + n, " ");
        return end > n - 1 && message[end - 1] == ':' && message[end] == ' ' ? end - 1 : 0;
}

void lint_error_message(struct lint_report *r, const char *path, const char *message)
{
        size_t n = location_prefix(path, message);
        if (n == 0) {
                lint_error(r, path, "%s", message);
                return;
        }
        _cleanup_free_ char *location = ao_xstrndup(message, n);
        lint_error(r, location, "%s", message + n + 2);
}
