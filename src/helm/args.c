/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The helm command lines, one function per operation, as the Go operator
 * ran them when it still used the helm binary. The global flags
 * (--namespace and the cluster connection) are added by the client.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

#include "ao/alloc.h"
#include "ao/helm.h"

/* A vector of copies of the arguments up to the first NULL. */
static char **args_of(const char *first, ...)
{
        size_t n = 0;
        char **v = ao_xcalloc(1, sizeof(char *));
        va_list ap;
        va_start(ap, first);
        for (const char *a = first; a; a = va_arg(ap, const char *)) {
                v = ao_xreallocarray(v, n + 2, sizeof(char *));
                v[n++] = ao_xstrdup(a);
                v[n] = NULL;
        }
        va_end(ap);
        return v;
}

/* Append @flag and, unless NULL, its @value (owned). */
static void append(char ***v, const char *flag, char *value /* owned */)
{
        size_t n = 0;
        while ((*v)[n])
                n++;
        *v = ao_xreallocarray(*v, n + 3, sizeof(char *));
        (*v)[n++] = ao_xstrdup(flag);
        if (value)
                (*v)[n++] = value;
        (*v)[n] = NULL;
}

/* Go's duration syntax; helm rejects 0 as "no timeout" in some versions, so at least 1 s. */
static char *go_seconds(uint64_t usec)
{
        uint64_t s = usec / 1000000;
        return ao_xasprintf("%" PRIu64 "s", s ? s : 1);
}

char **ao_helm_args_version(void)
{
        return args_of("version", "--short", NULL);
}

/* --post-renderer PATH, then --post-renderer-args ARG for each argument (helm takes one per flag). */
static void append_post_renderer(char ***v, const struct ao_helm_post_renderer *pr)
{
        if (!pr)
                return;
        append(v, "--post-renderer", ao_xstrdup(pr->path));
        for (char *const *a = pr->args; a && *a; a++)
                append(v, "--post-renderer-args", ao_xstrdup(*a));
}

char **ao_helm_args_template(const char *release, const char *chart_dir, const char *values_file,
                             const struct ao_helm_post_renderer *post_renderer)
{
        char **v = args_of("template", release, chart_dir, "--values", values_file, NULL);
        append_post_renderer(&v, post_renderer);
        return v;
}

char **ao_helm_args_upgrade(const struct ao_helm_upgrade *u)
{
        char **v = args_of("upgrade", u->release, u->chart_dir, "--install", "--skip-crds", "--values",
                           u->values_file, NULL);
        append(&v, "--history-max", ao_xasprintf("%d", u->history_max));
        append(&v, "--timeout", go_seconds(u->timeout_usec));
        /* A string, never a number: an MD5 of digits only would become one with --set. */
        if (u->checksum)
                append(&v, "--set-string", ao_xasprintf("_addonOperatorModuleChecksum=%s", u->checksum));
        if (u->labels && u->labels[0])
                append(&v, "--labels", ao_xstrdup(u->labels));
        if (u->take_ownership)
                append(&v, "--take-ownership", NULL);
        append_post_renderer(&v, u->post_renderer);
        return v;
}

char **ao_helm_args_history(const char *release)
{
        return args_of("history", release, "--max", "1", "--output", "json", NULL);
}

char **ao_helm_args_get_values(const char *release)
{
        return args_of("get", "values", release, "--output", "json", NULL);
}

char **ao_helm_args_uninstall(const char *release, uint64_t timeout_usec)
{
        char **v = args_of("uninstall", release, NULL);
        append(&v, "--timeout", go_seconds(timeout_usec));
        return v;
}

char **ao_helm_args_list(void)
{
        /* --max 0: the server's limit instead of helm's default 256 releases. */
        return args_of("list", "--all", "--max", "0", "--output", "json", NULL);
}

char **ao_helm_args_template_debug(const char *release, const char *chart_dir, const char *values_file,
                                   const struct ao_helm_post_renderer *post_renderer)
{
        char **v = ao_helm_args_template(release, chart_dir, values_file, post_renderer);
        append(&v, "--debug", NULL);
        return v;
}

char **ao_helm_args_get_manifest(const char *release)
{
        return args_of("get", "manifest", release, NULL);
}

void ao_helm_args_free(char **args)
{
        for (size_t i = 0; args && args[i]; i++)
                free(args[i]);
        free(args);
}
