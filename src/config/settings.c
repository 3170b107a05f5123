/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/settings.h"

#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

/*
 * The settings table: one row per setting drives environment lookup, flag
 * parsing, defaults, --help and docs/CONFIGURATION.md. Environment names are
 * in priority order. The peer (addon-operator since v1.21.10) reads only the
 * ADDON_OPERATOR_-prefixed names, while its docs and Dockerfile still use the
 * unprefixed ones, so both are accepted and the prefixed one wins.
 */

#define FLAGS(...)  .flags = {__VA_ARGS__}
#define ENVS(...)   .envs = {__VA_ARGS__}
#define FIELD(f)    .offset = offsetof(struct ao_settings, f)
#define RAW(f)      .keep_raw = true, .raw_offset = offsetof(struct ao_settings, f)
#define RANGE(a, b) .min = (a), .max = (b)

const char *const ao_setting_section_names[_AO_SETTING_SECTION_MAX] = {
    [AO_SETTING_SECTION_LAYOUT] = "Hooks and modules",
    [AO_SETTING_SECTION_IDENTITY] = "Identity and config store",
    [AO_SETTING_SECTION_HTTP] = "HTTP server and metrics",
    [AO_SETTING_SECTION_CRD] = "CRDs and chart labels",
    [AO_SETTING_SECTION_KUBE] = "Kubernetes client",
    [AO_SETTING_SECTION_HELM] = "Helm",
    [AO_SETTING_SECTION_LOG] = "Logging",
    [AO_SETTING_SECTION_DEBUG] = "Debugging",
    [AO_SETTING_SECTION_RUNTIME] = "Runtime",
    [AO_SETTING_SECTION_HOOKS] = "Hook processes and sandbox",
};

const struct ao_setting_def setting_defs[] = {
    /* hooks and modules */
    {AO_SETTING_SECTION_LAYOUT, FLAGS("global-hooks-dir"),
     ENVS("ADDON_OPERATOR_GLOBAL_HOOKS_DIR", "GLOBAL_HOOKS_DIR", "SHELL_OPERATOR_HOOKS_DIR"), "global-hooks",
     AO_SETTING_TYPE_STRING, FIELD(global_hooks_dir), .metavar = "DIR",
     .help = "Directory with the global hooks"},
    {AO_SETTING_SECTION_LAYOUT, FLAGS("modules-dir"), ENVS("ADDON_OPERATOR_MODULES_DIR", "MODULES_DIR"),
     "modules", AO_SETTING_TYPE_PATH_LIST, FIELD(modules_dirs), RAW(modules_dir_raw),
     .help = "Directories with modules, separated by ':'"},
    /* The docs spell it UNNUMBERED_MODULE_ORDER, the kingpin-era code UNNUMBERED_MODULES_ORDER. */
    {AO_SETTING_SECTION_LAYOUT, FLAGS("unnumbered-modules-order", "unnumbered-module-order"),
     ENVS("ADDON_OPERATOR_UNNUMBERED_MODULES_ORDER", "UNNUMBERED_MODULE_ORDER", "UNNUMBERED_MODULES_ORDER"),
     "1", AO_SETTING_TYPE_INT, FIELD(unnumbered_modules_order), RANGE(INT32_MIN, INT32_MAX),
     .help = "Order given to modules whose directory has no NNN- prefix"},
    {AO_SETTING_SECTION_LAYOUT, FLAGS("parallel-module-runs"), ENVS("ADDON_OPERATOR_PARALLEL_MODULE_RUNS"),
     "0", AO_SETTING_TYPE_INT, FIELD(parallel_module_runs), RANGE(0, 1024),
     .help = "Module runs of one order at a time in a converge (0: the number of CPUs, at least 2; 1: one "
             "after another)"},
    {AO_SETTING_SECTION_LAYOUT, FLAGS("isolate-failing-modules"),
     ENVS("ADDON_OPERATOR_ISOLATE_FAILING_MODULES"), "false", AO_SETTING_TYPE_BOOL,
     FIELD(isolate_failing_modules),
     .help = "A module whose run fails is retried in a queue of its own instead of holding back main"},
    {AO_SETTING_SECTION_LAYOUT, FLAGS("tmp-dir"), ENVS("ADDON_OPERATOR_TMP_DIR", "SHELL_OPERATOR_TMP_DIR"),
     "/tmp/addon-operator", AO_SETTING_TYPE_STRING, FIELD(tmp_dir), .metavar = "DIR",
     .help = "Directory for the temporary files passed to hooks (unset and not tmpfs: /dev/shm if tmpfs)"},
    {AO_SETTING_SECTION_LAYOUT, FLAGS("state-dir"), ENVS("ADDON_OPERATOR_STATE_DIR"), "",
     AO_SETTING_TYPE_STRING, FIELD(state_dir), .metavar = "DIR",
     .help = "Local mode: where releases are recorded (empty: <tmp-dir>/state)"},
    {AO_SETTING_SECTION_LAYOUT, FLAGS("local"), ENVS("ADDON_OPERATOR_LOCAL"), "false", AO_SETTING_TYPE_BOOL,
     FIELD(local), .help = "Run without a cluster even when one is configured"},
    {AO_SETTING_SECTION_LAYOUT, FLAGS("config-file"), ENVS("ADDON_OPERATOR_CONFIG_FILE"), "",
     AO_SETTING_TYPE_STRING, FIELD(config_file), .metavar = "FILE",
     .help = "Local mode: YAML file in the ConfigMap's data shape, watched and written back"},
    {AO_SETTING_SECTION_LAYOUT, FLAGS("strict-check-values-mode-enabled"),
     ENVS("ADDON_OPERATOR_STRICT_CHECK_VALUES_MODE_ENABLED", "STRICT_CHECK_VALUES_MODE_ENABLED"), "false",
     AO_SETTING_TYPE_BOOL, FIELD(strict_check_values_mode),
     .help = "Treat a module without values.yaml as an error"},

    /* identity and config store */
    {AO_SETTING_SECTION_IDENTITY, FLAGS("namespace"),
     ENVS("ADDON_OPERATOR_NAMESPACE", "SHELL_OPERATOR_NAMESPACE"), "", AO_SETTING_TYPE_STRING,
     FIELD(namespace_), .metavar = "NAME",
     .help = "Namespace of the ConfigMap, the Helm releases and the leader lease"},
    {AO_SETTING_SECTION_IDENTITY, FLAGS("config-map"), ENVS("ADDON_OPERATOR_CONFIG_MAP"), "addon-operator",
     AO_SETTING_TYPE_STRING, FIELD(config_map), .metavar = "NAME",
     .help = "Name of the ConfigMap holding the values"},
    {AO_SETTING_SECTION_IDENTITY, FLAGS("ha"), ENVS("ADDON_OPERATOR_HA"), "false", AO_SETTING_TYPE_BOOL,
     FIELD(ha), .help = "Run with leader election (needs the namespace, pod name and listen address)"},
    {AO_SETTING_SECTION_IDENTITY, FLAGS("pod-name"), ENVS("ADDON_OPERATOR_POD"), "", AO_SETTING_TYPE_STRING,
     FIELD(pod_name), .metavar = "NAME", .help = "Name of this pod, used in the leader election identity"},

    /* HTTP server and metrics */
    {AO_SETTING_SECTION_HTTP, FLAGS("listen-address", "prometheus-listen-address"),
     ENVS("ADDON_OPERATOR_LISTEN_ADDRESS", "SHELL_OPERATOR_LISTEN_ADDRESS"), "0.0.0.0",
     AO_SETTING_TYPE_STRING, FIELD(listen_address), .metavar = "ADDR",
     .help = "Address of the HTTP server (/metrics, /healthz); also the pod IP in HA mode"},
    {AO_SETTING_SECTION_HTTP, FLAGS("listen-port", "prometheus-listen-port"),
     ENVS("ADDON_OPERATOR_LISTEN_PORT", "SHELL_OPERATOR_LISTEN_PORT"), "9650", AO_SETTING_TYPE_PORT,
     FIELD(listen_port), .help = "Port of the HTTP server; 0 picks a free one"},
    {AO_SETTING_SECTION_HTTP, FLAGS("prometheus-metrics-prefix"),
     ENVS("ADDON_OPERATOR_PROMETHEUS_METRICS_PREFIX", "SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX"),
     "addon_operator_", AO_SETTING_TYPE_METRIC_PREFIX, FIELD(metrics_prefix),
     .help = "Prefix of every metric name"},

    /* CRDs */
    {AO_SETTING_SECTION_CRD, FLAGS("crd-extra-labels"), ENVS("ADDON_OPERATOR_CRD_EXTRA_LABELS"),
     "heritage=addon-operator", AO_SETTING_TYPE_LABELS, FIELD(crd_extra_labels),
     .help = "Labels stamped on the objects of module charts, as key=value,key2=value2"},
    {AO_SETTING_SECTION_CRD, FLAGS("crd-filter-prefixes", "crd-filters"),
     ENVS("ADDON_OPERATOR_CRD_FILTER_PREFIXES"), "doc-,_", AO_SETTING_TYPE_COMMA_LIST,
     FIELD(crd_filter_prefixes),
     .help = "Files in a module's crds/ starting with these prefixes are skipped"},

    /* Kubernetes client */
    {AO_SETTING_SECTION_KUBE, FLAGS("kube-config"), ENVS("KUBE_CONFIG"), "", AO_SETTING_TYPE_STRING,
     FIELD(kube_config), .metavar = "PATH", .help = "Path to a kubeconfig file"},
    {AO_SETTING_SECTION_KUBE, FLAGS("kube-context"), ENVS("KUBE_CONTEXT"), "", AO_SETTING_TYPE_STRING,
     FIELD(kube_context), .metavar = "NAME", .help = "Context to use from the kubeconfig"},
    {AO_SETTING_SECTION_KUBE, FLAGS("kube-server"), ENVS("KUBE_SERVER"), "", AO_SETTING_TYPE_STRING,
     FIELD(kube_server), .metavar = "URL", .help = "URL of the API server"},
    {AO_SETTING_SECTION_KUBE, FLAGS("kube-client-qps"), ENVS("KUBE_CLIENT_QPS"), "5", AO_SETTING_TYPE_FLOAT,
     FIELD(kube_client_qps), .help = "Requests per second of the main Kubernetes client"},
    /* client-go refuses burst 0 with a positive QPS, so 0 is rejected here already. */
    {AO_SETTING_SECTION_KUBE, FLAGS("kube-client-burst"), ENVS("KUBE_CLIENT_BURST"), "10",
     AO_SETTING_TYPE_INT, FIELD(kube_client_burst), RANGE(1, INT32_MAX),
     .help = "Request burst of the main Kubernetes client"},
    {AO_SETTING_SECTION_KUBE, FLAGS("object-patcher-kube-client-qps"), ENVS("OBJECT_PATCHER_KUBE_CLIENT_QPS"),
     "5", AO_SETTING_TYPE_FLOAT, FIELD(object_patcher_qps),
     .help = "Requests per second of the client applying hook patches"},
    {AO_SETTING_SECTION_KUBE, FLAGS("object-patcher-kube-client-burst"),
     ENVS("OBJECT_PATCHER_KUBE_CLIENT_BURST"), "10", AO_SETTING_TYPE_INT, FIELD(object_patcher_burst),
     RANGE(1, INT32_MAX), .help = "Request burst of the client applying hook patches"},
    {AO_SETTING_SECTION_KUBE, FLAGS("object-patcher-kube-client-timeout"),
     ENVS("OBJECT_PATCHER_KUBE_CLIENT_TIMEOUT"), "10s", AO_SETTING_TYPE_DURATION,
     FIELD(object_patcher_timeout_usec), .help = "Timeout of one request of the hook patch client"},

    /* Helm */
    {AO_SETTING_SECTION_HELM, FLAGS("helm-bin-path"), ENVS("HELM_BIN_PATH"), "helm", AO_SETTING_TYPE_STRING,
     FIELD(helm_bin_path), .metavar = "PATH", .help = "Helm binary to run"},
    {AO_SETTING_SECTION_HELM, FLAGS("helm3"), ENVS("HELM3"), "false", AO_SETTING_TYPE_BOOL, FIELD(helm3),
     .help = "Skip Helm version detection and assume Helm 3"},
    {AO_SETTING_SECTION_HELM, FLAGS("helm-ignore-release"), ENVS("HELM_IGNORE_RELEASE"), "",
     AO_SETTING_TYPE_STRING, FIELD(helm_ignore_release), .metavar = "NAME",
     .help = "Release never treated as a module release (the operator's own)"},
    {AO_SETTING_SECTION_HELM, FLAGS("helm-history-max"), ENVS("HELM_HISTORY_MAX"), "10", AO_SETTING_TYPE_INT,
     FIELD(helm_history_max), RANGE(0, INT32_MAX), .help = "Release revisions kept; 0 keeps all"},
    {AO_SETTING_SECTION_HELM, FLAGS("helm-timeout"), ENVS("HELM_TIMEOUT"), "20m", AO_SETTING_TYPE_DURATION,
     FIELD(helm_timeout_usec), .help = "Timeout of one Helm operation"},
    {AO_SETTING_SECTION_HELM, FLAGS("helm-monitor-interval"), ENVS("HELM_MONITOR_INTERVAL"), "0",
     AO_SETTING_TYPE_DURATION, FIELD(helm_monitor_interval_usec),
     .help = "Safety re-check of every release object by GET at this interval, plus jitter (0: off; "
             "the release objects are watched)"},
    {AO_SETTING_SECTION_HELM, FLAGS("helm-monitor-kube-client-qps"), ENVS("HELM_MONITOR_KUBE_CLIENT_QPS"),
     "5", AO_SETTING_TYPE_FLOAT, FIELD(helm_monitor_qps),
     .help = "Requests per second of the Helm resources monitor client"},
    {AO_SETTING_SECTION_HELM, FLAGS("helm-monitor-kube-client-burst"), ENVS("HELM_MONITOR_KUBE_CLIENT_BURST"),
     "10", AO_SETTING_TYPE_INT, FIELD(helm_monitor_burst), RANGE(1, INT32_MAX),
     .help = "Request burst of the Helm resources monitor client"},

    /* logging */
    {AO_SETTING_SECTION_LOG, FLAGS("log-level"), ENVS("LOG_LEVEL"), "info", AO_SETTING_TYPE_LOG_LEVEL,
     FIELD(log_level), .help = "Lowest level logged: debug, info, warn or error"},
    {AO_SETTING_SECTION_LOG, FLAGS("log-type"), ENVS("LOG_TYPE"), "text", AO_SETTING_TYPE_LOG_FORMAT,
     FIELD(log_format), .help = "Log format: json, text or color"},
    {AO_SETTING_SECTION_LOG, FLAGS("log-no-time"), ENVS("LOG_NO_TIME"), "false", AO_SETTING_TYPE_BOOL,
     FIELD(log_no_time), .help = "Leave the time out of log lines"},
    {AO_SETTING_SECTION_LOG, FLAGS("log-proxy-hook-json"), ENVS("LOG_PROXY_HOOK_JSON"), "false",
     AO_SETTING_TYPE_BOOL, FIELD(log_proxy_hook_json),
     .help = "Read hook output as JSON log records and re-log them"},

    /* debugging */
    {AO_SETTING_SECTION_DEBUG, FLAGS("debug-unix-socket"), ENVS("DEBUG_UNIX_SOCKET"),
     "/var/run/addon-operator/debug.socket", AO_SETTING_TYPE_STRING, FIELD(debug_unix_socket),
     .metavar = "PATH", .help = "Unix socket of the debug API"},
    {AO_SETTING_SECTION_DEBUG, FLAGS("debug-http-addr"), ENVS("DEBUG_HTTP_SERVER_ADDR"), "",
     AO_SETTING_TYPE_STRING, FIELD(debug_http_addr), .metavar = "ADDR:PORT",
     .help = "Also serve the debug API over TCP at this address"},
    {AO_SETTING_SECTION_DEBUG, FLAGS("debug-keep-tmp-files"), ENVS("DEBUG_KEEP_TMP_FILES"), "false",
     AO_SETTING_TYPE_BOOL, FIELD(debug_keep_tmp_files), .help = "Keep the temporary files of hook runs"},

    /* runtime */
    /* epoll by default: it costs less CPU per hook run here (docs/PERFORMANCE.md, "Event loop"). */
    {AO_SETTING_SECTION_RUNTIME, FLAGS("reactor"), ENVS("ADDON_OPERATOR_REACTOR"), "epoll",
     AO_SETTING_TYPE_REACTOR, FIELD(reactor),
     .help = "Event loop backend: epoll, io_uring, or auto (io_uring, epoll where it is refused)"},
    {AO_SETTING_SECTION_RUNTIME, FLAGS("shutdown-timeout"), ENVS("ADDON_OPERATOR_SHUTDOWN_TIMEOUT"), "30s",
     AO_SETTING_TYPE_DURATION, FIELD(shutdown_timeout_usec),
     .help = "Grace period for running hooks and Helm after SIGTERM"},

    /* hook processes */
    {AO_SETTING_SECTION_HOOKS, FLAGS("hook-timeout"), ENVS("ADDON_OPERATOR_HOOK_TIMEOUT"), "0",
     AO_SETTING_TYPE_DURATION, FIELD(hook_timeout_usec),
     .help = "Kill a hook's process group after this long (0: no timeout)"},
    {AO_SETTING_SECTION_HOOKS, FLAGS("sandbox-profile"), ENVS("ADDON_OPERATOR_SANDBOX_PROFILE"), "default",
     AO_SETTING_TYPE_STRING, FIELD(sandbox_profile), .metavar = "NAME",
     .help = "Sandbox profile for hooks without their own: default, strict, none or a custom one"},
    {AO_SETTING_SECTION_HOOKS, FLAGS("sandbox-profiles-dir"), ENVS("ADDON_OPERATOR_SANDBOX_PROFILES_DIR"), "",
     AO_SETTING_TYPE_STRING, FIELD(sandbox_profiles_dir), .metavar = "DIR",
     .help = "Directory with extra or replacement *.policy sandbox profiles"},
    {AO_SETTING_SECTION_HOOKS, FLAGS("retry-delay-scale"), ENVS("ADDON_OPERATOR_RETRY_DELAY_SCALE"), "1",
     AO_SETTING_TYPE_FLOAT, FIELD(retry_delay_scale),
     .help = "Multiply the retry back-off of failed tasks (5 s .. 32 s) by this (tests use 0.001)"},
    {AO_SETTING_SECTION_HOOKS, FLAGS("spawner-path"), ENVS("ADDON_OPERATOR_SPAWNER"), "",
     AO_SETTING_TYPE_STRING, FIELD(spawner_path), .metavar = "PATH",
     .help = "The hook spawner binary (empty: addon-operator-spawner next to the operator)"},
};

const size_t setting_defs_count = AO_ARRAY_SIZE(setting_defs);

/* Room for one quoted value in a message: long enough to recognise, short enough that four fit. */
#define QUOTE_MAX 112

const struct ao_setting_def *setting_def_by_flag(const char *name, size_t len, const char **ret_spelling)
{
        for (size_t i = 0; i < setting_defs_count; i++)
                for (size_t j = 0; j < AO_SETTING_FLAGS_MAX && setting_defs[i].flags[j]; j++) {
                        const char *f = setting_defs[i].flags[j];
                        if (strlen(f) == len && memcmp(f, name, len) == 0) {
                                if (ret_spelling)
                                        *ret_spelling = f;
                                return &setting_defs[i];
                        }
                }
        return NULL;
}

static bool type_is_string(enum ao_setting_type type)
{
        return type == AO_SETTING_TYPE_STRING || type == AO_SETTING_TYPE_METRIC_PREFIX ||
               type == AO_SETTING_TYPE_LABELS;
}

static bool type_is_list(enum ao_setting_type type)
{
        return type == AO_SETTING_TYPE_PATH_LIST || type == AO_SETTING_TYPE_COMMA_LIST;
}

void ao_settings_done(struct ao_settings *s)
{
        if (!s)
                return;
        for (size_t i = 0; i < setting_defs_count; i++) {
                const struct ao_setting_def *d = &setting_defs[i];
                char *base = (char *) s;
                if (type_is_string(d->type))
                        free(*(char **) (base + d->offset));
                else if (type_is_list(d->type))
                        (void) config_strv_free(*(char ***) (base + d->offset));
                if (d->keep_raw)
                        free(*(char **) (base + d->raw_offset));
        }
        memset(s, 0, sizeof(*s));
}

/* ---- notices ------------------------------------------------------------ */

static int notice_add(struct ao_cli *cli, enum ao_log_level level, const char *fmt, ...) _printf_(3, 4);
static int notice_add(struct ao_cli *cli, enum ao_log_level level, const char *fmt, ...)
{
        struct ao_settings_notice *n;
        char *text;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&text, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;

        n = reallocarray(cli->notices, cli->n_notices + 1, sizeof(*n));
        if (!n) {
                free(text);
                return -ENOMEM;
        }
        cli->notices = n;
        cli->notices[cli->n_notices++] = (struct ao_settings_notice){.level = level, .text = text};
        return 0;
}

/*
 * "both A and B are set; using A='x', ignoring B='y'". A differing value is
 * a warning: the user probably edited one spelling and expects it to count.
 */
static int notice_env_conflict(struct ao_cli *cli, const struct ao_setting_def *d, const char *const *values,
                               size_t winner)
{
        char names[256] = "", ignored[4 * (QUOTE_MAX + 64)] = "", q[QUOTE_MAX];
        size_t n_set = 0, n_listed = 0, no = 0, io = 0;
        bool differ = false;

        for (size_t j = 0; j < AO_SETTING_ENVS_MAX; j++)
                n_set += values[j] != NULL;

        for (size_t j = 0; j < AO_SETTING_ENVS_MAX; j++) {
                if (!values[j])
                        continue;
                n_listed++;
                const char *sep = n_listed == 1 ? "" : n_listed == n_set ? " and " : ", ";
                no += (size_t) snprintf(names + no, sizeof(names) - AO_MIN(no, sizeof(names)), "%s%s", sep,
                                        d->envs[j]);
                no = AO_MIN(no, sizeof(names));
                if (j == winner)
                        continue;
                differ = differ || strcmp(values[j], values[winner]) != 0;
                io += (size_t) snprintf(ignored + io, sizeof(ignored) - AO_MIN(io, sizeof(ignored)),
                                        "%s%s='%s'", io ? ", " : "", d->envs[j],
                                        config_escape(values[j], q, sizeof(q)));
                io = AO_MIN(io, sizeof(ignored));
        }

        return notice_add(cli, differ ? AO_LOG_WARN : AO_LOG_INFO, "%s%s are set; using %s='%s', ignoring %s",
                          n_set == 2 ? "both " : "", names, d->envs[winner],
                          config_escape(values[winner], q, sizeof(q)), ignored);
}

/* ---- values ------------------------------------------------------------- */

static const char *type_expectation(const struct ao_setting_def *d, int r, char *buf, size_t size)
{
        switch (d->type) {
        case AO_SETTING_TYPE_INT:
                (void) snprintf(buf, size, "expected an integer from %lld to %lld", (long long) d->min,
                                (long long) d->max);
                return buf;
        case AO_SETTING_TYPE_FLOAT:
                return "expected a number greater than 0";
        case AO_SETTING_TYPE_PORT:
                return "expected a port number 0-65535";
        case AO_SETTING_TYPE_BOOL:
                return "expected true or false (also 1/0, yes/no, on/off)";
        case AO_SETTING_TYPE_DURATION:
                if (r == -ERANGE)
                        return "expected a duration of at most 2562047h";
                return "expected a duration such as 30s, 1m30s or 500ms";
        case AO_SETTING_TYPE_LOG_LEVEL:
                return "expected debug, info, warn or error";
        case AO_SETTING_TYPE_LOG_FORMAT:
                return "expected json, text or color";
        case AO_SETTING_TYPE_REACTOR:
                return "expected auto, io_uring or epoll";
        case AO_SETTING_TYPE_METRIC_PREFIX:
                return "expected a metric name prefix matching [a-zA-Z_:][a-zA-Z0-9_:]*, or nothing";
        case AO_SETTING_TYPE_LABELS:
                return "expected Kubernetes labels as key=value,key2=value2";
        default:
                return "unexpected value";
        }
}

static int store_string(char *field_base, size_t offset, const char *value)
{
        char *copy = strdup(value);
        if (!copy)
                return -ENOMEM;
        *(char **) (field_base + offset) = copy;
        return 0;
}

static int store_list(char *base, const struct ao_setting_def *d, const char *value)
{
        bool paths = d->type == AO_SETTING_TYPE_PATH_LIST;
        /* Paths are taken verbatim (a blank may be part of a name); prefixes are trimmed: "doc-, _" means "_". */
        int r = config_split(value, paths ? ':' : ',', !paths, (char ***) (base + d->offset));
        if (r < 0)
                return r;
        if (d->keep_raw)
                return store_string(base, d->raw_offset, value);
        return 0;
}

/* Parse @value for row @d into @s. Returns 0, -ENOMEM, or -EINVAL/-ERANGE for a bad value. */
static int store_value(struct ao_settings *s, const struct ao_setting_def *d, const char *value)
{
        char *base = (char *) s, *field = base + d->offset;
        int r = 0;

        switch (d->type) {
        case AO_SETTING_TYPE_STRING:
                return store_string(base, d->offset, value);
        case AO_SETTING_TYPE_METRIC_PREFIX:
                r = parse_metric_prefix(value);
                return r < 0 ? r : store_string(base, d->offset, value);
        case AO_SETTING_TYPE_LABELS:
                r = parse_label_list(value);
                return r < 0 ? r : store_string(base, d->offset, value);
        case AO_SETTING_TYPE_PATH_LIST:
        case AO_SETTING_TYPE_COMMA_LIST:
                return store_list(base, d, value);
        case AO_SETTING_TYPE_INT:
                return parse_int64(value, d->min, d->max, (int64_t *) field);
        case AO_SETTING_TYPE_FLOAT:
                return parse_double_positive(value, (double *) field);
        case AO_SETTING_TYPE_PORT:
                return parse_port(value, (uint16_t *) field);
        case AO_SETTING_TYPE_BOOL:
                return ao_parse_bool(value, (bool *) field);
        case AO_SETTING_TYPE_DURATION:
                return ao_parse_duration_usec(value, (uint64_t *) field);
        case AO_SETTING_TYPE_LOG_LEVEL: {
                enum ao_log_level l = ao_log_level_from_string(value);
                if (l < 0)
                        return -EINVAL;
                *(enum ao_log_level *) field = l;
                return 0;
        }
        case AO_SETTING_TYPE_LOG_FORMAT: {
                enum ao_log_format f = ao_log_format_from_string(value);
                if (f < 0)
                        return -EINVAL;
                *(enum ao_log_format *) field = f;
                return 0;
        }
        case AO_SETTING_TYPE_REACTOR:
                return parse_reactor(value, (enum ao_reactor_backend_choice *) field);
        default:
                return -EINVAL;
        }
}

/* Store @value, turning a parse failure into the one-line message users see. @who is "--flag" or an env name. */
static int apply_value(struct ao_settings *s, const struct ao_setting_def *d, const char *value,
                       const char *who, struct ao_error *reterr)
{
        char q[QUOTE_MAX * 2], expect[96];
        int r = store_value(s, d, value);
        if (r == -ENOMEM)
                return ao_error_set(reterr, r, "out of memory while parsing %s", who);
        if (r < 0)
                return ao_error_set(reterr, -EINVAL, "invalid value '%s' for %s: %s",
                                    config_escape(value, q, sizeof(q)), who,
                                    type_expectation(d, r, expect, sizeof(expect)));
        return 0;
}

/* ---- resolution --------------------------------------------------------- */

static const char *env_lookup(char *const *envp, const char *name)
{
        size_t len = strlen(name);
        /* The first entry wins, as with getenv(), if the environment holds a name twice. */
        for (; envp && *envp; envp++)
                if (strncmp(*envp, name, len) == 0 && (*envp)[len] == '=')
                        return *envp + len + 1;
        return NULL;
}

/*
 * "VAR=" is a deliberate empty string for text settings (the peer does the
 * same), but for a number, switch or choice it can only be a template that
 * rendered nothing, so it is treated as unset rather than as an error.
 */
static bool empty_is_value(enum ao_setting_type type)
{
        return type_is_string(type) || type_is_list(type);
}

static int resolve_one(struct ao_cli *cli, const struct ao_setting_def *d, struct ao_cli_origin *origin,
                       const char *flag_value, const char *flag_name, char *const *envp,
                       struct ao_error *reterr)
{
        const char *env_values[AO_SETTING_ENVS_MAX] = {}, *value;
        size_t winner = SIZE_MAX, n_set = 0;
        char who[96], q1[QUOTE_MAX], q2[QUOTE_MAX];
        int r;

        for (size_t j = 0; j < AO_SETTING_ENVS_MAX && d->envs[j]; j++) {
                const char *v = env_lookup(envp, d->envs[j]);
                if (!v || (*v == '\0' && !empty_is_value(d->type)))
                        continue;
                env_values[j] = v;
                n_set++;
                if (winner == SIZE_MAX)
                        winner = j;
        }

        if (flag_value) {
                if (winner != SIZE_MAX) {
                        r = notice_add(cli, AO_LOG_INFO, "flag --%s='%s' overrides %s='%s'", flag_name,
                                       config_escape(flag_value, q1, sizeof(q1)), d->envs[winner],
                                       config_escape(env_values[winner], q2, sizeof(q2)));
                        if (r < 0)
                                return ao_error_set(reterr, r, "out of memory while parsing --%s", flag_name);
                }
                (void) snprintf(who, sizeof(who), "--%s", flag_name);
                *origin = (struct ao_cli_origin){.origin = AO_SETTING_FLAG, .source = d->flags[0]};
                value = flag_value;
        } else if (winner != SIZE_MAX) {
                if (n_set > 1) {
                        r = notice_env_conflict(cli, d, env_values, winner);
                        if (r < 0)
                                return ao_error_set(reterr, r, "out of memory while parsing %s",
                                                    d->envs[winner]);
                }
                (void) snprintf(who, sizeof(who), "%s", d->envs[winner]);
                *origin = (struct ao_cli_origin){.origin = AO_SETTING_ENV, .source = d->envs[winner]};
                value = env_values[winner];
        } else {
                (void) snprintf(who, sizeof(who), "the default of --%s", d->flags[0]);
                *origin = (struct ao_cli_origin){.origin = AO_SETTING_DEFAULT};
                value = d->def;
        }

        r = apply_value(&cli->settings, d, value, who, reterr);
        if (r < 0)
                return r;
        origin->value = strdup(value);
        if (!origin->value)
                return ao_error_set(reterr, -ENOMEM, "out of memory while parsing %s", who);
        return 0;
}

/* Variables other addon-operator deployments set for features this one does not have. */
static const char *const unsupported_envs[] = {
    "ADDON_OPERATOR_SHELL_CHROOT_DIR",
    "ADDON_OPERATOR_APPLIED_MODULE_EXTENDERS",
    "ADDON_OPERATOR_ADMISSION_SERVER_ENABLED",
    "ADDON_OPERATOR_ADMISSION_SERVER_LISTEN_PORT",
    "ADDON_OPERATOR_ADMISSION_SERVER_CERTS_DIR",
    "USE_NELM",
    "NELM_DEPENDENCY_GRAPH_ENABLED",
};

/* Helm 2 settings: running without them would deploy with Helm 3 where Helm 2 was asked for. */
static const char *const helm2_envs[] = {
    "HELM2",
    "TILLER_BIN_PATH",
    "TILLER_MAX_HISTORY",
    "ADDON_OPERATOR_TILLER_LISTEN_PORT",
    "ADDON_OPERATOR_TILLER_PROBE_LISTEN_PORT",
};

/* Say so instead of ignoring them silently: a setting that does nothing is a surprise later. */
static int check_unsupported(struct ao_cli *cli, char *const *envp, struct ao_error *reterr)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(helm2_envs); i++) {
                const char *v = env_lookup(envp, helm2_envs[i]);
                if (v && *v)
                        return ao_error_set(
                            reterr, -ENOTSUP,
                            "%s is set, but Helm 2 is not supported: remove the Helm 2 settings",
                            helm2_envs[i]);
        }
        for (size_t i = 0; i < AO_ARRAY_SIZE(unsupported_envs); i++) {
                const char *v = env_lookup(envp, unsupported_envs[i]);
                if (v && *v &&
                    notice_add(cli, AO_LOG_WARN,
                               "%s is set, but this operator does not support it; ignoring it",
                               unsupported_envs[i]) < 0)
                        return ao_error_set(reterr, -ENOMEM, "out of memory while parsing %s",
                                            unsupported_envs[i]);
        }
        return 0;
}

int settings_resolve(struct ao_cli *cli, struct ao_cli_origin *origins, const char *const *flag_values,
                     const char *const *flag_names, char *const *envp, struct ao_error *reterr)
{
        for (size_t i = 0; i < setting_defs_count; i++) {
                int r = resolve_one(cli, &setting_defs[i], &origins[i], flag_values[i], flag_names[i], envp,
                                    reterr);
                if (r < 0)
                        return r;
        }
        return check_unsupported(cli, envp, reterr);
}

int ao_cli_setting_origin(const struct ao_cli *cli, const char *flag, enum ao_setting_origin *ret_origin,
                          const char **ret_source)
{
        const struct ao_setting_def *d;

        if (!cli || !cli->_origins || !flag)
                return -EINVAL;
        if (strncmp(flag, "--", 2) == 0)
                flag += 2;
        d = setting_def_by_flag(flag, strlen(flag), NULL);
        if (!d)
                return -ENOENT;

        const struct ao_cli_origin *o = &cli->_origins[d - setting_defs];
        if (ret_origin)
                *ret_origin = o->origin;
        if (ret_source)
                *ret_source = o->source;
        return 0;
}
