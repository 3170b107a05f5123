/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Running the helm binary (HELM_BIN_PATH) as a sandboxed child on the
 * reactor. A call never blocks: helm's stdout goes to a memfd that is read
 * once it exits, its stderr lines are logged with the caller's context and
 * the last "Error: ..." line, joined with the non-empty lines that continue
 * it, becomes the call's error message.
 *
 * Every call gets the same global flags (--namespace, --kube-context,
 * --kubeconfig, --kube-apiserver from the operator's settings) and the
 * environment given at creation, so helm talks to the cluster the operator
 * talks to. What the arguments of each operation are is in helm-args.c.
 *
 * Main thread only.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/error.h"
#include "ao/log.h"

struct ao_proc;
struct ao_sandbox_profile;
struct ao_helm;
struct ao_helm_call;

struct ao_helm_options {
        const char *bin_path;  /* a path, or a name looked up in the PATH of @envp */
        const char *namespace; /* the releases' namespace; "" leaves it to helm */
        const char *kube_context, *kubeconfig, *kube_server; /* "" or NULL: not passed */
        char *const *envp;                                   /* helm's complete environment (copied) */
        const struct ao_sandbox_profile *profile;            /* borrowed; NULL: unsandboxed */
        uint64_t kill_timeout_usec; /* a call still running after this is killed; 0: none */
};

struct ao_helm_result {
        int code;           /* 0, or negative errno (-EIO: helm failed) */
        const char *error;  /* when code < 0: one line, "helm upgrade: exit code 1: Error: ..." */
        const char *output; /* stdout (NUL-terminated; valid during the callback) */
        size_t output_len;
        uint64_t wall_usec;
};

typedef void ao_helm_done(const struct ao_helm_result *result, void *userdata);

/** Keep the settings. The binary is looked up by ao_helm_find(), before the first call. */
struct ao_helm *ao_helm_new(struct ao_proc *proc, const struct ao_helm_options *options);
/**
 * Look the binary up (again): @options->bin_path when it has a slash, else that name (default
 * "helm") in the PATH of @options->envp. It must be an executable regular file. Errors name the
 * setting and what was tried: "helm binary '/opt/helm' (HELM_BIN_PATH) not found", "... is not an
 * executable file", "helm binary 'helm' (HELM_BIN_PATH) not found in PATH '/usr/bin:/bin'".
 * Until it succeeds, every call fails.
 */
int ao_helm_find(struct ao_helm *h, struct ao_error *reterr);
/**
 * Kill running calls (their callbacks do not run) and free everything. Call it
 * right before ao_proc_free(): a run killed here must not report its exit to
 * the freed call. NULL is accepted.
 */
struct ao_helm *ao_helm_free(struct ao_helm *h);
/** The binary ao_helm_find() found; NULL when it found none. */
const char *ao_helm_bin_path(const struct ao_helm *h);

/**
 * Run `helm @args...` (NULL-terminated, without the program name). @done runs
 * exactly once, later, from the reactor, unless the call fails at once
 * (negative return, @reterr set: shutting down, no pipes) or is cancelled.
 * @ctx names the module for log lines. @what names the operation in errors.
 */
int ao_helm_call(struct ao_helm *h, const char *what, char *const *args, const struct ao_log_context *ctx,
                 ao_helm_done *done, void *userdata, struct ao_helm_call **ret_call, struct ao_error *reterr);

/** Kill a running call; its callback does not run. */
void ao_helm_call_cancel(struct ao_helm_call *c);

/** Calls started and not finished. */
size_t ao_helm_running(const struct ao_helm *h);

/* ---- the arguments of each operation (helm-args.c), without the global flags ------------------- */

/** helm's --post-renderer: a program helm runs on the rendered manifest (stdin to stdout). */
struct ao_helm_post_renderer {
        const char *path;  /* an executable, by absolute path */
        char *const *args; /* NULL-terminated; each one --post-renderer-args */
};

/** What `helm upgrade --install` gets. */
struct ao_helm_upgrade {
        const char *release;
        const char *chart_dir;
        const char *values_file;
        const char *checksum; /* recorded as the value _addonOperatorModuleChecksum; NULL: none */
        const char *labels;   /* release labels "k=v,k2=v2" (helm >= 3.13); NULL: none */
        int history_max;      /* --history-max */
        /* --take-ownership (helm >= 3.17): objects annotated for another release are adopted. */
        bool take_ownership;
        uint64_t timeout_usec;                             /* --timeout, whole seconds (at least 1) */
        const struct ao_helm_post_renderer *post_renderer; /* NULL: none */
};

/* Each returns a malloc'd NULL-terminated vector for ao_helm_call(); free with ao_helm_args_free(). */
char **ao_helm_args_version(void);
/* @post_renderer may be NULL (none). */
char **ao_helm_args_template(const char *release, const char *chart_dir, const char *values_file,
                             const struct ao_helm_post_renderer *post_renderer);
char **ao_helm_args_upgrade(const struct ao_helm_upgrade *u);
char **ao_helm_args_history(const char *release);
char **ao_helm_args_get_values(const char *release);
char **ao_helm_args_uninstall(const char *release, uint64_t timeout_usec);
char **ao_helm_args_list(void);
/** `template` as above plus --debug: what `module render --debug` runs. */
char **ao_helm_args_template_debug(const char *release, const char *chart_dir, const char *values_file,
                                   const struct ao_helm_post_renderer *post_renderer);
char **ao_helm_args_get_manifest(const char *release);
void ao_helm_args_free(char **args);
