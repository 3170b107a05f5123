/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Operator settings: every environment variable of the seeds and of the peer,
 * each with an equivalent --kebab-case flag. Precedence: flag > environment >
 * default. Where several environment spellings exist (the documented name,
 * the peer's ADDON_OPERATOR_-prefixed name, a SHELL_OPERATOR_* fallback), the
 * first set one in the table order wins and a notice says which.
 *
 * Parsing is pure: it reads argv and an environment array, never the process
 * environment directly, and never logs. Notices (which spelling won, which
 * deprecated name was used) are collected for the caller to log once the
 * logger is configured.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "ao/duration.h"
#include "ao/error.h"
#include "ao/log.h"

enum ao_reactor_backend_choice {
        AO_REACTOR_CHOICE_AUTO,
        AO_REACTOR_CHOICE_IO_URING,
        AO_REACTOR_CHOICE_EPOLL,
        _AO_REACTOR_CHOICE_MAX,
        _AO_REACTOR_CHOICE_INVALID = -EINVAL,
};

/** Every parsed setting. Strings are owned by the struct (freed by ao_settings_done()). */
struct ao_settings {
        /* layout */
        char *global_hooks_dir;           /* "global-hooks" */
        char **modules_dirs;              /* MODULES_DIR split on ':', empty parts dropped; NULL-terminated */
        char *modules_dir_raw;            /* the unsplit value, for logs */
        int64_t unnumbered_modules_order; /* 1 */
        int64_t parallel_module_runs;     /* 0: the number of CPUs, at least 2 */
        bool isolate_failing_modules;     /* a failed module run moves to a queue of its own */
        char *tmp_dir;                    /* "/tmp/addon-operator" */
        bool strict_check_values_mode;
        char *state_dir;   /* "": <tmp_dir>/state */
        bool local;        /* --local */
        char *config_file; /* local mode's config file; "" none */

        /* identity and config store */
        char *namespace_; /* "" */
        char *config_map; /* "addon-operator" */
        bool ha;          /* ADDON_OPERATOR_HA */
        char *pod_name;   /* ADDON_OPERATOR_POD */

        /* http */
        char *listen_address; /* "0.0.0.0" */
        uint16_t listen_port; /* 9650; 0 asks the kernel for a free port */
        char *metrics_prefix; /* "addon_operator_" */

        /* CRDs */
        char *crd_extra_labels;     /* "heritage=addon-operator" */
        char **crd_filter_prefixes; /* "doc-,_" split on ','; NULL-terminated */

        /* kubernetes client */
        char *kube_config;
        char *kube_context;
        char *kube_server;
        double kube_client_qps;               /* 5 */
        int64_t kube_client_burst;            /* 10 */
        double object_patcher_qps;            /* 5 */
        int64_t object_patcher_burst;         /* 10 */
        uint64_t object_patcher_timeout_usec; /* 10s */

        /* helm */
        char *helm_bin_path; /* "helm" */
        bool helm3;          /* HELM3=yes forces helm 3 mode */
        char *helm_ignore_release;
        int64_t helm_history_max;            /* 10 */
        uint64_t helm_timeout_usec;          /* 20m */
        uint64_t helm_monitor_interval_usec; /* 0: no safety re-check (the objects are watched) */
        double helm_monitor_qps;             /* 5 */
        int64_t helm_monitor_burst;          /* 10 */

        /* logging */
        enum ao_log_level log_level;   /* info */
        enum ao_log_format log_format; /* text */
        bool log_no_time;
        bool log_proxy_hook_json;

        /* debug */
        char *debug_unix_socket; /* "/var/run/addon-operator/debug.socket" */
        char *debug_http_addr;   /* "" */
        bool debug_keep_tmp_files;

        /* runtime */
        enum ao_reactor_backend_choice reactor; /* auto */
        uint64_t shutdown_timeout_usec;         /* 30s */

        /* hook processes */
        uint64_t hook_timeout_usec; /* 0: none */
        char *sandbox_profile;      /* "default" */
        char *sandbox_profiles_dir; /* "" */
        char *spawner_path;         /* "": next to the binary */
        double retry_delay_scale;   /* 1 */
};

/** Where a setting's value came from. */
enum ao_setting_origin {
        AO_SETTING_DEFAULT,
        AO_SETTING_ENV,
        AO_SETTING_FLAG,
};

/** A message for the log, produced while parsing (which spelling won, ...). Owned by the result. */
struct ao_settings_notice {
        enum ao_log_level level;
        char *text;
};

/** Result of parsing the command line. Owned by the caller; release with ao_cli_done(). */
struct ao_cli {
        struct ao_settings settings;
        char **
            command; /* positional words: "start" (default), "version", "queue", "list", ... NULL-terminated */
        bool help;   /* --help / -h */
        bool version;          /* --version */
        char *output;          /* debug commands: -o text|yaml|json; NULL when not given */
        bool with_global;      /* debug commands: -g/--global (module values with the global section) */
        bool watch;            /* debug commands: -w/--watch, redraw until interrupted */
        double watch_interval; /* --interval/-t seconds between redraws; 0 when not given */
        bool show_empty;       /* debug commands: -e/--show-empty (queue list) */
        bool render_debug;     /* debug commands: --debug (module render: helm template --debug) */
        bool render_diff;      /* debug commands: --diff (module render: against the release) */
        struct ao_settings_notice *notices;
        size_t n_notices;
        struct ao_cli_origin *_origins; /* private: where each setting came from; owned */
};

/**
 * Parse @argv (argv[0] is skipped) and the environment @envp (NULL-terminated
 * "NAME=value" strings) into @ret. Flags may appear before or after the
 * command words, as `--name value` or `--name=value`; boolean flags take no
 * value or `=true|false`. "--" ends flag parsing.
 *
 * On a bad value or unknown flag returns -EINVAL with a one-line message in
 * @reterr naming the variable or flag, e.g.
 * "invalid value 'abc' for ADDON_OPERATOR_LISTEN_PORT: expected a port number 0-65535".
 * @ret is written only on success.
 */
int ao_cli_parse(int argc, char *const *argv, char *const *envp, struct ao_cli *ret, struct ao_error *reterr);
void ao_cli_done(struct ao_cli *cli);

/**
 * Write the flag part of --help (every flag, grouped by section, with its
 * environment variables and default) to @out. The usage line and the list
 * of commands come from the command table in main.c.
 */
void ao_cli_print_flags(FILE *out);

/**
 * Where the setting of flag @flag ("listen-port" or "--listen-port"; aliases
 * work too) got its value. @ret_source gets the environment variable or the
 * primary flag name that supplied it (static storage), or NULL for a default.
 * Returns 0, -ENOENT for an unknown flag, -EINVAL before a successful parse.
 */
int ao_cli_setting_origin(const struct ao_cli *cli, const char *flag, enum ao_setting_origin *ret_origin,
                          const char **ret_source);

/**
 * Write the effective settings to @out, one "--flag=value  (origin)" line per
 * setting with control characters escaped, for the startup log and
 * debugging. Values are shown as they were given, before parsing.
 */
void ao_cli_print_settings(const struct ao_cli *cli, FILE *out);

/** Free the strings of @s and zero it. */
void ao_settings_done(struct ao_settings *s);

/** Parse a boolean the way Go's strconv.ParseBool does, plus yes/no and on/off (case-insensitive). */
int ao_parse_bool(const char *s, bool *ret);
