/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Settings and command line: defaults, environment spellings and their
 * priority, flag precedence, value parsers and the exact texts of the
 * messages users read.
 */
#include "ao/settings.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../src/config/internal.h"
#include "../tap.h"

#define ARGV(...) ((char *const[]){"addon-operator", __VA_ARGS__ __VA_OPT__(, ) NULL})
#define ENV(...)  ((char *const[]){__VA_ARGS__ __VA_OPT__(, ) NULL})

static int count(char *const *v)
{
        int n = 0;
        while (v[n])
                n++;
        return n;
}

/* Parse and bail out on failure: for cases that must succeed. */
static void parse_ok(char *const *argv, char *const *envp, struct ao_cli *ret, const char *what)
{
        struct ao_error err = {};
        int r = ao_cli_parse(count(argv), argv, envp, ret, &err);
        if (!tap_ok(r == 0, "%s: parses", what)) {
                tap_diag("error: %s", err.msg);
                tap_bail("unexpected parse failure");
        }
}

/* Parse expecting failure with exactly @msg, and that the result was not written. */
static void parse_fails(char *const *argv, char *const *envp, const char *msg, const char *what)
{
        struct ao_error err = {};
        struct ao_cli cli;
        memset(&cli, 0xa5, sizeof(cli));
        int r = ao_cli_parse(count(argv), argv, envp, &cli, &err);
        tap_is_int(r, -EINVAL, "%s: fails with -EINVAL", what);
        tap_is_str(err.msg, msg, "%s: message", what);
        tap_ok(!strchr(err.msg, '\n') && !strchr(err.msg, '\r'), "%s: message is one line", what);
        tap_ok(((unsigned char *) &cli)[0] == 0xa5, "%s: result untouched", what);
}

static size_t strv_len(char **v)
{
        size_t n = 0;
        while (v && v[n])
                n++;
        return n;
}

static const char *origin_source(const struct ao_cli *cli, const char *flag)
{
        enum ao_setting_origin origin;
        const char *source = NULL;
        if (ao_cli_setting_origin(cli, flag, &origin, &source) < 0)
                return "(error)";
        return source ? source : "(default)";
}

/* ---- defaults ----------------------------------------------------------- */

static void test_defaults(void)
{
        struct ao_cli cli;
        parse_ok(ARGV(), ENV(), &cli, "no flags, empty environment");
        const struct ao_settings *s = &cli.settings;

        tap_is_str(s->global_hooks_dir, "global-hooks", "default global_hooks_dir");
        tap_is_int(strv_len(s->modules_dirs), 1, "default modules_dirs has one entry");
        tap_is_str(s->modules_dirs[0], "modules", "default modules_dirs[0]");
        tap_is_str(s->modules_dir_raw, "modules", "default modules_dir_raw");
        tap_is_int(s->unnumbered_modules_order, 1, "default unnumbered_modules_order");
        tap_is_str(s->tmp_dir, "/tmp/addon-operator", "default tmp_dir");
        tap_is_int(s->strict_check_values_mode, false, "default strict_check_values_mode");
        tap_is_str(s->namespace_, "", "default namespace");
        tap_is_str(s->config_map, "addon-operator", "default config_map");
        tap_is_int(s->ha, false, "default ha");
        tap_is_str(s->pod_name, "", "default pod_name");
        tap_is_str(s->listen_address, "0.0.0.0", "default listen_address");
        tap_is_int(s->listen_port, 9650, "default listen_port");
        tap_is_str(s->metrics_prefix, "addon_operator_", "default metrics_prefix");
        tap_is_str(s->crd_extra_labels, "heritage=addon-operator", "default crd_extra_labels");
        tap_is_int(strv_len(s->crd_filter_prefixes), 2, "default crd_filter_prefixes has two entries");
        tap_is_str(s->crd_filter_prefixes[0], "doc-", "default crd_filter_prefixes[0]");
        tap_is_str(s->crd_filter_prefixes[1], "_", "default crd_filter_prefixes[1]");
        tap_is_str(s->kube_config, "", "default kube_config");
        tap_is_str(s->kube_context, "", "default kube_context");
        tap_is_str(s->kube_server, "", "default kube_server");
        tap_ok(s->kube_client_qps == 5.0, "default kube_client_qps");
        tap_is_int(s->kube_client_burst, 10, "default kube_client_burst");
        tap_ok(s->object_patcher_qps == 5.0, "default object_patcher_qps");
        tap_is_int(s->object_patcher_burst, 10, "default object_patcher_burst");
        tap_is_int(s->object_patcher_timeout_usec, 10 * AO_USEC_PER_SEC, "default object_patcher_timeout");
        tap_is_str(s->helm_bin_path, "helm", "default helm_bin_path");
        tap_is_int(s->helm3, false, "default helm3");
        tap_is_str(s->helm_ignore_release, "", "default helm_ignore_release");
        tap_is_int(s->helm_history_max, 10, "default helm_history_max");
        tap_is_int(s->helm_timeout_usec, 20 * 60 * AO_USEC_PER_SEC, "default helm_timeout");
        tap_ok(s->helm_monitor_qps == 5.0, "default helm_monitor_qps");
        tap_is_int(s->helm_monitor_burst, 10, "default helm_monitor_burst");
        tap_is_int(s->log_level, AO_LOG_INFO, "default log_level");
        tap_is_int(s->log_format, AO_LOG_FORMAT_TEXT, "default log_format");
        tap_is_int(s->log_no_time, false, "default log_no_time");
        tap_is_int(s->log_proxy_hook_json, false, "default log_proxy_hook_json");
        tap_is_str(s->debug_unix_socket, "/var/run/addon-operator/debug.socket", "default debug_unix_socket");
        tap_is_str(s->debug_http_addr, "", "default debug_http_addr");
        tap_is_int(s->debug_keep_tmp_files, false, "default debug_keep_tmp_files");
        tap_is_int(s->reactor, AO_REACTOR_CHOICE_EPOLL, "default reactor");
        tap_is_int(s->shutdown_timeout_usec, 30 * AO_USEC_PER_SEC, "default shutdown_timeout");

        tap_is_int(strv_len(cli.command), 1, "default command has one word");
        tap_is_str(cli.command[0], "start", "default command is start");
        tap_ok(!cli.help && !cli.version, "no help, no version");
        tap_is_int(cli.n_notices, 0, "no notices");
        tap_is_str(origin_source(&cli, "listen-port"), "(default)", "origin of a default");

        /* Every default in the table parses through its own type's parser. */
        for (size_t i = 0; i < setting_defs_count; i++) {
                enum ao_setting_origin origin = AO_SETTING_FLAG;
                tap_ok(ao_cli_setting_origin(&cli, setting_defs[i].flags[0], &origin, NULL) == 0 &&
                           origin == AO_SETTING_DEFAULT,
                       "--%s comes from its default", setting_defs[i].flags[0]);
        }
        ao_cli_done(&cli);
        tap_ok(cli.command == NULL && cli.settings.tmp_dir == NULL, "ao_cli_done clears the struct");
        ao_cli_done(&cli); /* twice is harmless */
}

/* ---- environment spellings ---------------------------------------------- */

struct spelling_case {
        char *env;
        const char *source;
};

static void test_env_spellings(void)
{
        static const struct spelling_case modules[] = {
            {"ADDON_OPERATOR_MODULES_DIR=/m1", "ADDON_OPERATOR_MODULES_DIR"},
            {"MODULES_DIR=/m1", "MODULES_DIR"},
        };
        static const struct spelling_case hooks[] = {
            {"ADDON_OPERATOR_GLOBAL_HOOKS_DIR=/g1", "ADDON_OPERATOR_GLOBAL_HOOKS_DIR"},
            {"GLOBAL_HOOKS_DIR=/g1", "GLOBAL_HOOKS_DIR"},
            {"SHELL_OPERATOR_HOOKS_DIR=/g1", "SHELL_OPERATOR_HOOKS_DIR"},
        };
        static const struct spelling_case order[] = {
            {"ADDON_OPERATOR_UNNUMBERED_MODULES_ORDER=7", "ADDON_OPERATOR_UNNUMBERED_MODULES_ORDER"},
            {"UNNUMBERED_MODULE_ORDER=7", "UNNUMBERED_MODULE_ORDER"},
            {"UNNUMBERED_MODULES_ORDER=7", "UNNUMBERED_MODULES_ORDER"},
        };
        struct ao_cli cli;

        for (size_t i = 0; i < AO_ARRAY_SIZE(modules); i++) {
                parse_ok(ARGV(), ENV(modules[i].env), &cli, modules[i].source);
                tap_is_str(cli.settings.modules_dirs[0], "/m1", "%s sets modules_dirs", modules[i].source);
                tap_is_str(origin_source(&cli, "--modules-dir"), modules[i].source, "origin of %s",
                           modules[i].env);
                tap_is_int(cli.n_notices, 0, "%s alone: no notice", modules[i].source);
                ao_cli_done(&cli);
        }
        for (size_t i = 0; i < AO_ARRAY_SIZE(hooks); i++) {
                parse_ok(ARGV(), ENV(hooks[i].env), &cli, hooks[i].source);
                tap_is_str(cli.settings.global_hooks_dir, "/g1", "%s sets global_hooks_dir", hooks[i].source);
                tap_is_str(origin_source(&cli, "global-hooks-dir"), hooks[i].source, "origin of %s",
                           hooks[i].env);
                ao_cli_done(&cli);
        }
        for (size_t i = 0; i < AO_ARRAY_SIZE(order); i++) {
                parse_ok(ARGV(), ENV(order[i].env), &cli, order[i].source);
                tap_is_int(cli.settings.unnumbered_modules_order, 7, "%s sets unnumbered_modules_order",
                           order[i].source);
                tap_is_str(origin_source(&cli, "unnumbered-module-order"), order[i].source, "origin of %s",
                           order[i].env);
                ao_cli_done(&cli);
        }
}

static void test_env_conflicts(void)
{
        struct ao_cli cli;

        /* The table order decides, not the order in the environment. */
        parse_ok(ARGV(), ENV("MODULES_DIR=y", "ADDON_OPERATOR_MODULES_DIR=x"), &cli,
                 "two module dir spellings");
        tap_is_str(cli.settings.modules_dirs[0], "x", "ADDON_OPERATOR_MODULES_DIR wins");
        tap_is_int(cli.n_notices, 1, "one notice");
        tap_is_int(cli.notices[0].level, AO_LOG_WARN, "differing values: a warning");
        tap_is_str(
            cli.notices[0].text,
            "both ADDON_OPERATOR_MODULES_DIR and MODULES_DIR are set; using ADDON_OPERATOR_MODULES_DIR='x', "
            "ignoring MODULES_DIR='y'",
            "notice text");
        ao_cli_done(&cli);

        parse_ok(ARGV(), ENV("GLOBAL_HOOKS_DIR=/h", "ADDON_OPERATOR_GLOBAL_HOOKS_DIR=/h"), &cli,
                 "equal values");
        tap_is_int(cli.n_notices, 1, "one notice");
        tap_is_int(cli.notices[0].level, AO_LOG_INFO, "equal values: info");
        tap_is_str(cli.notices[0].text,
                   "both ADDON_OPERATOR_GLOBAL_HOOKS_DIR and GLOBAL_HOOKS_DIR are set; using "
                   "ADDON_OPERATOR_GLOBAL_HOOKS_DIR='/h', ignoring GLOBAL_HOOKS_DIR='/h'",
                   "notice text");
        ao_cli_done(&cli);

        parse_ok(ARGV(), ENV("UNNUMBERED_MODULES_ORDER=3", "UNNUMBERED_MODULE_ORDER=2"), &cli,
                 "the two legacy order spellings");
        tap_is_int(cli.settings.unnumbered_modules_order, 2,
                   "UNNUMBERED_MODULE_ORDER (the documented one) wins");
        tap_is_str(cli.notices[0].text,
                   "both UNNUMBERED_MODULE_ORDER and UNNUMBERED_MODULES_ORDER are set; using "
                   "UNNUMBERED_MODULE_ORDER='2', ignoring UNNUMBERED_MODULES_ORDER='3'",
                   "notice text");
        ao_cli_done(&cli);

        parse_ok(ARGV(),
                 ENV("UNNUMBERED_MODULES_ORDER=3", "UNNUMBERED_MODULE_ORDER=2",
                     "ADDON_OPERATOR_UNNUMBERED_MODULES_ORDER=1"),
                 &cli, "three order spellings");
        tap_is_int(cli.settings.unnumbered_modules_order, 1, "prefixed name wins");
        tap_is_int(cli.notices[0].level, AO_LOG_WARN, "a warning");
        tap_is_str(
            cli.notices[0].text,
            "ADDON_OPERATOR_UNNUMBERED_MODULES_ORDER, UNNUMBERED_MODULE_ORDER and UNNUMBERED_MODULES_ORDER "
            "are set; using ADDON_OPERATOR_UNNUMBERED_MODULES_ORDER='1', ignoring "
            "UNNUMBERED_MODULE_ORDER='2', UNNUMBERED_MODULES_ORDER='3'",
            "notice text");
        ao_cli_done(&cli);

        /* An empty string is a value for text settings: it wins and hides the fallback. */
        parse_ok(ARGV(), ENV("ADDON_OPERATOR_NAMESPACE=", "SHELL_OPERATOR_NAMESPACE=ns"), &cli,
                 "empty namespace");
        tap_is_str(cli.settings.namespace_, "", "empty ADDON_OPERATOR_NAMESPACE wins");
        tap_is_int(cli.n_notices, 1, "one notice");
        ao_cli_done(&cli);

        /* An empty value of a number, switch or choice counts as unset. */
        parse_ok(ARGV(),
                 ENV("ADDON_OPERATOR_LISTEN_PORT=", "SHELL_OPERATOR_LISTEN_PORT=9115",
                     "LOG_LEVEL=", "ADDON_OPERATOR_HA=", "HELM_TIMEOUT=", "KUBE_CLIENT_QPS="),
                 &cli, "empty numeric values");
        tap_is_int(cli.settings.listen_port, 9115, "empty port falls through to SHELL_OPERATOR_LISTEN_PORT");
        tap_is_int(cli.settings.log_level, AO_LOG_INFO, "empty LOG_LEVEL: default");
        tap_is_int(cli.settings.ha, false, "empty ADDON_OPERATOR_HA: default");
        tap_is_int(cli.settings.helm_timeout_usec, 20 * 60 * AO_USEC_PER_SEC, "empty HELM_TIMEOUT: default");
        tap_ok(cli.settings.kube_client_qps == 5.0, "empty KUBE_CLIENT_QPS: default");
        tap_is_int(cli.n_notices, 0, "no notices for empty numeric values");
        ao_cli_done(&cli);

        /* Malformed entries and the first duplicate, as getenv() sees them. */
        parse_ok(ARGV(),
                 ENV("NOEQUALS", "HELM_BIN_PATH=/a/helm", "HELM_BIN_PATH=/b/helm", "HELM_BIN_PATHX=/c"), &cli,
                 "odd environment");
        tap_is_str(cli.settings.helm_bin_path, "/a/helm", "first duplicate wins");
        ao_cli_done(&cli);
}

static void test_shell_operator_fallbacks(void)
{
        struct ao_cli cli;
        parse_ok(ARGV(),
                 ENV("SHELL_OPERATOR_HOOKS_DIR=/hooks", "SHELL_OPERATOR_TMP_DIR=/so-tmp",
                     "SHELL_OPERATOR_NAMESPACE=so-ns", "SHELL_OPERATOR_LISTEN_ADDRESS=10.0.0.1",
                     "SHELL_OPERATOR_LISTEN_PORT=9115",
                     "SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX=shell_operator_"),
                 &cli, "shell-operator environment");
        tap_is_str(cli.settings.global_hooks_dir, "/hooks", "SHELL_OPERATOR_HOOKS_DIR");
        tap_is_str(cli.settings.tmp_dir, "/so-tmp", "SHELL_OPERATOR_TMP_DIR");
        tap_is_str(cli.settings.namespace_, "so-ns", "SHELL_OPERATOR_NAMESPACE");
        tap_is_str(cli.settings.listen_address, "10.0.0.1", "SHELL_OPERATOR_LISTEN_ADDRESS");
        tap_is_int(cli.settings.listen_port, 9115, "SHELL_OPERATOR_LISTEN_PORT");
        tap_is_str(cli.settings.metrics_prefix, "shell_operator_",
                   "SHELL_OPERATOR_PROMETHEUS_METRICS_PREFIX");
        tap_is_int(cli.n_notices, 0, "no notices");
        ao_cli_done(&cli);

        parse_ok(ARGV(), ENV("SHELL_OPERATOR_TMP_DIR=/so", "ADDON_OPERATOR_TMP_DIR=/ao"), &cli,
                 "both tmp dirs");
        tap_is_str(cli.settings.tmp_dir, "/ao", "ADDON_OPERATOR_TMP_DIR beats SHELL_OPERATOR_TMP_DIR");
        ao_cli_done(&cli);
}

static void test_other_envs(void)
{
        struct ao_cli cli;
        parse_ok(ARGV(),
                 ENV("HELM3=yes", "ADDON_OPERATOR_REACTOR=uring", "LOG_TYPE=json", "LOG_LEVEL=debug",
                     "HELM_TIMEOUT=1h30m", "KUBE_CLIENT_QPS=2.5", "HELM_HISTORY_MAX=0",
                     "ADDON_OPERATOR_CRD_EXTRA_LABELS=heritage=my-app, example.com/scope=extra",
                     "ADDON_OPERATOR_PROMETHEUS_METRICS_PREFIX=", "STRICT_CHECK_VALUES_MODE_ENABLED=True"),
                 &cli, "assorted environment");
        tap_is_int(cli.settings.helm3, true, "HELM3=yes");
        tap_is_int(cli.settings.reactor, AO_REACTOR_CHOICE_IO_URING, "reactor uring means io_uring");
        tap_is_int(cli.settings.log_format, AO_LOG_FORMAT_JSON, "LOG_TYPE=json");
        tap_is_int(cli.settings.log_level, AO_LOG_DEBUG, "LOG_LEVEL=debug");
        tap_is_int(cli.settings.helm_timeout_usec, 90 * 60 * AO_USEC_PER_SEC, "HELM_TIMEOUT=1h30m");
        tap_ok(cli.settings.kube_client_qps == 2.5, "KUBE_CLIENT_QPS=2.5");
        tap_is_int(cli.settings.helm_history_max, 0, "HELM_HISTORY_MAX=0");
        tap_is_str(cli.settings.crd_extra_labels, "heritage=my-app, example.com/scope=extra",
                   "labels kept verbatim");
        tap_is_str(cli.settings.metrics_prefix, "", "an empty metrics prefix is allowed");
        tap_is_int(cli.settings.strict_check_values_mode, true, "STRICT_CHECK_VALUES_MODE_ENABLED=True");
        ao_cli_done(&cli);
}

/* ---- flags -------------------------------------------------------------- */

static void test_flags(void)
{
        struct ao_cli cli;

        parse_ok(ARGV("--listen-port=1234"), ENV("ADDON_OPERATOR_LISTEN_PORT=9999"), &cli, "--x=v over env");
        tap_is_int(cli.settings.listen_port, 1234, "flag beats env");
        tap_is_int(cli.n_notices, 1, "one notice");
        tap_is_int(cli.notices[0].level, AO_LOG_INFO, "info level");
        tap_is_str(cli.notices[0].text,
                   "flag --listen-port='1234' overrides ADDON_OPERATOR_LISTEN_PORT='9999'",
                   "override notice");
        tap_is_str(origin_source(&cli, "listen-port"), "listen-port", "origin is the flag");
        ao_cli_done(&cli);

        parse_ok(ARGV("--prometheus-listen-port", "4321"), ENV("SHELL_OPERATOR_LISTEN_PORT=9999"), &cli,
                 "--alias v over env");
        tap_is_int(cli.settings.listen_port, 4321, "alias in the two-word form");
        tap_is_str(cli.notices[0].text,
                   "flag --prometheus-listen-port='4321' overrides SHELL_OPERATOR_LISTEN_PORT='9999'",
                   "notice names the alias as typed");
        ao_cli_done(&cli);

        parse_ok(
            ARGV("--namespace", "ns1", "queue", "list", "--modules-dir=/a:/b", "--ha", "--log-type", "json"),
            ENV("ADDON_OPERATOR_HA=false", "ADDON_OPERATOR_NAMESPACE=env-ns"), &cli, "flags around words");
        tap_is_str(cli.settings.namespace_, "ns1", "flag before the command words");
        tap_is_int(strv_len(cli.settings.modules_dirs), 2, "flag after the command words");
        tap_is_str(cli.settings.modules_dirs[1], "/b", "second module dir");
        tap_is_int(cli.settings.ha, true, "bare boolean flag beats env");
        tap_is_int(cli.settings.log_format, AO_LOG_FORMAT_JSON, "--log-type json");
        tap_is_int(strv_len(cli.command), 2, "two command words");
        tap_is_str(cli.command[0], "queue", "first word");
        tap_is_str(cli.command[1], "list", "second word");
        ao_cli_done(&cli);

        parse_ok(ARGV("--ha=false", "--ha", "--helm3=no", "--unnumbered-module-order=-5",
                      "--namespace=", "--shutdown-timeout", "1.5s"),
                 ENV("ADDON_OPERATOR_HA=true", "HELM3=yes"), &cli, "repeated and explicit boolean flags");
        tap_is_int(cli.settings.ha, true, "the last repetition wins");
        tap_is_int(cli.settings.helm3, false, "--helm3=no");
        tap_is_int(cli.settings.unnumbered_modules_order, -5, "alias of the order flag, negative");
        tap_is_str(cli.settings.namespace_, "", "--namespace= sets an empty string");
        tap_is_int(cli.settings.shutdown_timeout_usec, 1500000, "--shutdown-timeout 1.5s");
        ao_cli_done(&cli);

        parse_ok(ARGV("version", "--", "--ha", "-x", "--foo"), ENV(), &cli, "-- ends the flags");
        tap_is_int(cli.settings.ha, false, "--ha after -- is a word");
        tap_is_int(strv_len(cli.command), 4, "four words");
        tap_is_str(cli.command[1], "--ha", "word after --");
        tap_is_str(cli.command[3], "--foo", "unknown flag after -- is a word");
        ao_cli_done(&cli);

        parse_ok(ARGV("-h", "-", "--version"), ENV(), &cli, "help and version");
        tap_ok(cli.help, "-h sets help");
        tap_ok(cli.version, "--version sets version");
        tap_is_str(cli.command[0], "-", "a lone dash is a word");
        ao_cli_done(&cli);

        parse_ok(ARGV("--help"), ENV(), &cli, "--help");
        tap_ok(cli.help && !cli.version, "--help sets help only");
        tap_is_str(cli.command[0], "start", "command still defaults to start");
        ao_cli_done(&cli);

        /* A value is taken whatever it looks like, as pflag does. */
        parse_ok(ARGV("--kube-context", "--ha"), ENV(), &cli, "value that looks like a flag");
        tap_is_str(cli.settings.kube_context, "--ha", "next argument is the value");
        tap_is_int(cli.settings.ha, false, "and not a flag");
        ao_cli_done(&cli);

        parse_ok(ARGV("--crd-filters=doc-, _ ,,x"), ENV(), &cli, "comma list");
        tap_is_int(strv_len(cli.settings.crd_filter_prefixes), 3, "empty items dropped");
        tap_is_str(cli.settings.crd_filter_prefixes[1], "_", "items trimmed");
        tap_is_str(cli.settings.crd_filter_prefixes[2], "x", "last item");
        ao_cli_done(&cli);
}

static void test_path_lists(void)
{
        struct ao_cli cli;

        parse_ok(ARGV(), ENV("MODULES_DIR=::/a::b c:"), &cli, "path list with empty parts");
        tap_is_int(strv_len(cli.settings.modules_dirs), 2, "empty parts dropped");
        tap_is_str(cli.settings.modules_dirs[0], "/a", "first path");
        tap_is_str(cli.settings.modules_dirs[1], "b c", "blanks inside a path are kept");
        tap_is_str(cli.settings.modules_dir_raw, "::/a::b c:", "raw value kept");
        ao_cli_done(&cli);

        parse_ok(ARGV(), ENV("ADDON_OPERATOR_MODULES_DIR="), &cli, "empty path list");
        tap_ok(cli.settings.modules_dirs && !cli.settings.modules_dirs[0], "empty list, not NULL");
        tap_is_str(cli.settings.modules_dir_raw, "", "raw is empty");
        ao_cli_done(&cli);

        parse_ok(ARGV("--modules-dir", ":::"), ENV(), &cli, "only separators");
        tap_is_int(strv_len(cli.settings.modules_dirs), 0, "no paths");
        ao_cli_done(&cli);
}

/* ---- bad values --------------------------------------------------------- */

static void test_bad_values(void)
{
        parse_fails(ARGV(), ENV("ADDON_OPERATOR_LISTEN_PORT=abc"),
                    "invalid value 'abc' for ADDON_OPERATOR_LISTEN_PORT: expected a port number 0-65535",
                    "bad port");
        parse_fails(ARGV(), ENV("SHELL_OPERATOR_LISTEN_PORT=65536"),
                    "invalid value '65536' for SHELL_OPERATOR_LISTEN_PORT: expected a port number 0-65535",
                    "port out of range");
        parse_fails(ARGV(), ENV("KUBE_CLIENT_QPS=-1"),
                    "invalid value '-1' for KUBE_CLIENT_QPS: expected a number greater than 0",
                    "negative qps");
        parse_fails(ARGV(), ENV("KUBE_CLIENT_QPS=0"),
                    "invalid value '0' for KUBE_CLIENT_QPS: expected a number greater than 0", "zero qps");
        parse_fails(ARGV(), ENV("HELM_MONITOR_KUBE_CLIENT_QPS=nan"),
                    "invalid value 'nan' for HELM_MONITOR_KUBE_CLIENT_QPS: expected a number greater than 0",
                    "nan qps");
        parse_fails(ARGV(), ENV("LOG_TYPE=xml"),
                    "invalid value 'xml' for LOG_TYPE: expected json, text or color", "bad log type");
        parse_fails(ARGV(), ENV("LOG_LEVEL=loud"),
                    "invalid value 'loud' for LOG_LEVEL: expected debug, info, warn or error",
                    "bad log level");
        parse_fails(ARGV(), ENV("ADDON_OPERATOR_REACTOR=kqueue"),
                    "invalid value 'kqueue' for ADDON_OPERATOR_REACTOR: expected auto, io_uring or epoll",
                    "bad reactor");
        parse_fails(
            ARGV(), ENV("ADDON_OPERATOR_HA=maybe"),
            "invalid value 'maybe' for ADDON_OPERATOR_HA: expected true or false (also 1/0, yes/no, on/off)",
            "bad bool");
        parse_fails(ARGV(), ENV("HELM_TIMEOUT=20"),
                    "invalid value '20' for HELM_TIMEOUT: expected a duration such as 30s, 1m30s or 500ms",
                    "duration without unit");
        parse_fails(ARGV(), ENV("HELM_TIMEOUT=9999999h"),
                    "invalid value '9999999h' for HELM_TIMEOUT: expected a duration of at most 2562047h",
                    "duration overflow");
        parse_fails(ARGV(), ENV("HELM_HISTORY_MAX=-1"),
                    "invalid value '-1' for HELM_HISTORY_MAX: expected an integer from 0 to 2147483647",
                    "negative history");
        parse_fails(ARGV(), ENV("KUBE_CLIENT_BURST=0"),
                    "invalid value '0' for KUBE_CLIENT_BURST: expected an integer from 1 to 2147483647",
                    "zero burst");
        parse_fails(ARGV(), ENV("UNNUMBERED_MODULE_ORDER=1x"),
                    "invalid value '1x' for UNNUMBERED_MODULE_ORDER: expected an integer from -2147483648 to "
                    "2147483647",
                    "junk after order");
        parse_fails(
            ARGV(), ENV("ADDON_OPERATOR_PROMETHEUS_METRICS_PREFIX=9lives"),
            "invalid value '9lives' for ADDON_OPERATOR_PROMETHEUS_METRICS_PREFIX: expected a metric name "
            "prefix matching [a-zA-Z_:][a-zA-Z0-9_:]*, or nothing",
            "bad metric prefix");
        parse_fails(
            ARGV(), ENV("ADDON_OPERATOR_CRD_EXTRA_LABELS=heritage"),
            "invalid value 'heritage' for ADDON_OPERATOR_CRD_EXTRA_LABELS: expected Kubernetes labels as "
            "key=value,key2=value2",
            "bad labels");

        /* The flag is named when the value came from a flag, as typed. */
        parse_fails(ARGV("--listen-port=abc"), ENV(),
                    "invalid value 'abc' for --listen-port: expected a port number 0-65535", "bad port flag");
        parse_fails(ARGV("--prometheus-listen-port", "-1"), ENV("ADDON_OPERATOR_LISTEN_PORT=1"),
                    "invalid value '-1' for --prometheus-listen-port: expected a port number 0-65535",
                    "bad port alias flag");
        parse_fails(ARGV("--ha="), ENV(),
                    "invalid value '' for --ha: expected true or false (also 1/0, yes/no, on/off)",
                    "empty bool flag");
        parse_fails(ARGV("--listen-port="), ENV(),
                    "invalid value '' for --listen-port: expected a port number 0-65535", "empty port flag");

        /* A flag overriding a bad env value means the env value is never read. */
        struct ao_cli cli;
        parse_ok(ARGV("--listen-port=1"), ENV("ADDON_OPERATOR_LISTEN_PORT=abc"), &cli, "flag hides bad env");
        tap_is_int(cli.settings.listen_port, 1, "flag value used");
        ao_cli_done(&cli);

        parse_fails(ARGV("--foo"), ENV(), "unknown flag '--foo'", "unknown flag");
        parse_fails(ARGV("start", "--foo=bar"), ENV(), "unknown flag '--foo'", "unknown flag with value");
        parse_fails(ARGV("-x"), ENV(), "unknown flag '-x'", "unknown short flag");
        parse_fails(ARGV("--listen-port"), ENV(), "flag '--listen-port' needs a value", "missing value");
        parse_fails(ARGV("--crd-filters"), ENV(), "flag '--crd-filters' needs a value",
                    "missing value of an alias");
        parse_fails(ARGV("--help=yes"), ENV(), "flag '--help' takes no value", "--help with a value");

        /* Control characters are escaped so the message stays on one line. */
        parse_fails(ARGV(), ENV("LOG_LEVEL=de\nbug"),
                    "invalid value 'de\\nbug' for LOG_LEVEL: expected debug, info, warn or error",
                    "newline in value");
        parse_fails(ARGV("--log-type=\x1b[31mred\t\\"), ENV(),
                    "invalid value '\\x1b[31mred\\t\\\\' for --log-type: expected json, text or color",
                    "escape sequence in value");
        parse_fails(ARGV("--fo\ro"), ENV(), "unknown flag '--fo\\ro'", "carriage return in a flag name");

        /* A huge value is cut, and the message still names the variable. */
        char big[2000];
        memset(big, 'x', sizeof(big));
        memcpy(big, "LOG_TYPE=", 9);
        big[sizeof(big) - 1] = '\0';
        struct ao_error err = {};
        int r = ao_cli_parse(1, ARGV(), ENV(big), &cli, &err);
        tap_is_int(r, -EINVAL, "huge value fails");
        tap_ok(strstr(err.msg, "...' for LOG_TYPE: expected json, text or color") != NULL,
               "huge value is cut: %s", err.msg);
}

/* ---- parsers ------------------------------------------------------------ */

static void test_duration(void)
{
        static const struct {
                const char *s;
                int r;
                uint64_t usec;
        } cases[] = {
            {"0", 0, 0},
            {"+0", 0, 0},
            {"0s", 0, 0},
            {"30s", 0, 30000000},
            {"1h30m", 0, 5400000000ULL},
            {"1m30s", 0, 90000000},
            {"1.5s", 0, 1500000},
            {".5s", 0, 500000},
            {"1.s", 0, 1000000},
            {"300ms", 0, 300000},
            {"20m", 0, 1200000000ULL},
            {"1h", 0, 3600000000ULL},
            {"10us", 0, 10},
            {"10\xc2\xb5s", 0, 10},
            {"10\xce\xbcs", 0, 10},
            {"1500ns", 0, 2},
            {"1ns", 0, 1},
            {"1h1h", 0, 7200000000ULL},
            {"0.000000001h", 0, 4},
            {"2562047h47m16.854775807s", 0, 9223372036854776ULL},
            {"", -EINVAL, 0},
            {"5", -EINVAL, 0},
            {"-1s", -EINVAL, 0},
            {"-0", -EINVAL, 0},
            {"1x", -EINVAL, 0},
            {"1 s", -EINVAL, 0},
            {" 1s", -EINVAL, 0},
            {"1s ", -EINVAL, 0},
            {"s", -EINVAL, 0},
            {".s", -EINVAL, 0},
            {"1..5s", -EINVAL, 0},
            {"1s5", -EINVAL, 0},
            {"+", -EINVAL, 0},
            {"++1s", -EINVAL, 0},
            {"1S", -EINVAL, 0},
            {"1sec", -EINVAL, 0},
            {"00", -EINVAL, 0},
            {"9223372036854775807ns", 0, 9223372036854776ULL},
            {"9223372036854775808ns", -ERANGE, 0},
            {"2562048h", -ERANGE, 0},
            {"2562047h48m", -ERANGE, 0},
            {"99999999999999999999999999s", -ERANGE, 0},
            {"2562047h47m16.854775808s", -ERANGE, 0},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(cases); i++) {
                uint64_t v = 12345;
                int r = ao_parse_duration_usec(cases[i].s, &v);
                tap_is_int(r, cases[i].r, "duration '%s' returns %d", cases[i].s, cases[i].r);
                tap_is_int(v, r == 0 ? cases[i].usec : 12345, "duration '%s' value", cases[i].s);
        }
}

static void test_bool(void)
{
        static const char *const yes[] = {"1",   "t",   "T",   "TRUE", "true", "True",
                                          "yes", "YES", "Yes", "on",   "ON",   "On"};
        static const char *const no[] = {"0",  "f",  "F",  "FALSE", "false", "False",
                                         "no", "NO", "No", "off",   "OFF",   "Off"};
        static const char *const bad[] = {"",  "tRUE", "truee", " true", "true ", "2",
                                          "y", "n",    "01",    "nope",  "enable"};
        bool v;

        for (size_t i = 0; i < AO_ARRAY_SIZE(yes); i++) {
                v = false;
                tap_ok(ao_parse_bool(yes[i], &v) == 0 && v, "bool '%s' is true", yes[i]);
        }
        for (size_t i = 0; i < AO_ARRAY_SIZE(no); i++) {
                v = true;
                tap_ok(ao_parse_bool(no[i], &v) == 0 && !v, "bool '%s' is false", no[i]);
        }
        for (size_t i = 0; i < AO_ARRAY_SIZE(bad); i++) {
                v = true;
                tap_ok(ao_parse_bool(bad[i], &v) == -EINVAL && v, "bool '%s' is rejected", bad[i]);
        }
}

static void test_numbers(void)
{
        int64_t i = 42;
        double d = 42;

        tap_ok(parse_int64("0", 0, 10, &i) == 0 && i == 0, "int 0");
        tap_ok(parse_int64("+7", 0, 10, &i) == 0 && i == 7, "int +7");
        tap_ok(parse_int64("-9223372036854775808", INT64_MIN, INT64_MAX, &i) == 0 && i == INT64_MIN,
               "int min");
        tap_ok(parse_int64("9223372036854775807", INT64_MIN, INT64_MAX, &i) == 0 && i == INT64_MAX,
               "int max");
        i = 42;
        tap_is_int(parse_int64("9223372036854775808", INT64_MIN, INT64_MAX, &i), -ERANGE, "int overflow");
        tap_is_int(parse_int64("-9223372036854775809", INT64_MIN, INT64_MAX, &i), -ERANGE, "int underflow");
        tap_is_int(parse_int64("99999999999999999999999", INT64_MIN, INT64_MAX, &i), -ERANGE, "int huge");
        tap_is_int(parse_int64("99999999999999999999999x", INT64_MIN, INT64_MAX, &i), -EINVAL,
                   "int huge junk");
        tap_is_int(parse_int64("11", 0, 10, &i), -ERANGE, "int above range");
        tap_is_int(parse_int64("", 0, 10, &i), -EINVAL, "int empty");
        tap_is_int(parse_int64(" 1", 0, 10, &i), -EINVAL, "int leading blank");
        tap_is_int(parse_int64("1 ", 0, 10, &i), -EINVAL, "int trailing blank");
        tap_is_int(parse_int64("0x1", 0, 10, &i), -EINVAL, "int hex");
        tap_is_int(parse_int64("-", 0, 10, &i), -EINVAL, "int bare sign");
        tap_is_int(parse_int64("--1", -10, 10, &i), -EINVAL, "int double sign");
        tap_is_int(parse_int64("1e3", 0, 10000, &i), -EINVAL, "int exponent");
        tap_is_int(i, 42, "failed parses leave the output alone");

        tap_ok(parse_double_positive("5", &d) == 0 && d == 5.0, "float 5");
        tap_ok(parse_double_positive("0.5", &d) == 0 && d == 0.5, "float 0.5");
        tap_ok(parse_double_positive("1e2", &d) == 0 && d == 100.0, "float 1e2");
        tap_ok(parse_double_positive("-1", &d) < 0, "float -1");
        tap_ok(parse_double_positive("0", &d) < 0, "float 0");
        tap_ok(parse_double_positive("inf", &d) < 0, "float inf");
        tap_ok(parse_double_positive("nan", &d) < 0, "float nan");
        tap_ok(parse_double_positive("1e999", &d) < 0, "float overflow");
        tap_ok(parse_double_positive("1e-999", &d) < 0, "float underflow");
        tap_ok(parse_double_positive(" 5", &d) < 0, "float leading blank");
        tap_ok(parse_double_positive("5 ", &d) < 0, "float trailing blank");
        tap_ok(parse_double_positive("5qps", &d) < 0, "float junk");
        tap_ok(parse_double_positive("", &d) < 0, "float empty");
        tap_ok(d == 100.0, "failed float parses leave the output alone");
}

static void test_names(void)
{
        static const char *const good_labels[] = {
            "",
            "heritage=addon-operator",
            "a=b,c=d",
            "heritage=my-app, scope=extra",
            "example.com/name=v",
            "app.kubernetes.io/managed-by=Helm",
            "k=",
            "a.b_c-d=E.f_g-9",
        };
        static const char *const bad_labels[] = {
            "heritage",
            "=v",
            "a=b,",
            ",a=b",
            "a=b,,c=d",
            "a==b",
            "a!=b",
            "a=b,a=c",
            "-a=b",
            "a-=b",
            "a=-b",
            "Example.com/a=b",
            "a..b/c=d",
            "/a=b",
            "a/=b",
            "a/b/c=d",
            "a=b c",
            "a b=c",
            "0123456789012345678901234567890123456789012345678901234567890123=v",
            "k=0123456789012345678901234567890123456789012345678901234567890123",
        };
        static const char *const good_prefixes[] = {"", "addon_operator_", ":x", "_", "a1", "Ab:C_9"};
        static const char *const bad_prefixes[] = {"1a", "a-b", "a b", "a.b", "\xc3\xa9"};

        for (size_t i = 0; i < AO_ARRAY_SIZE(good_labels); i++)
                tap_is_int(parse_label_list(good_labels[i]), 0, "labels '%s' accepted", good_labels[i]);
        for (size_t i = 0; i < AO_ARRAY_SIZE(bad_labels); i++)
                tap_is_int(parse_label_list(bad_labels[i]), -EINVAL, "labels '%s' rejected", bad_labels[i]);
        for (size_t i = 0; i < AO_ARRAY_SIZE(good_prefixes); i++)
                tap_is_int(parse_metric_prefix(good_prefixes[i]), 0, "prefix '%s' accepted",
                           good_prefixes[i]);
        for (size_t i = 0; i < AO_ARRAY_SIZE(bad_prefixes); i++)
                tap_is_int(parse_metric_prefix(bad_prefixes[i]), -EINVAL, "prefix '%s' rejected",
                           bad_prefixes[i]);

        enum ao_reactor_backend_choice c = AO_REACTOR_CHOICE_AUTO;
        tap_ok(parse_reactor("io_uring", &c) == 0 && c == AO_REACTOR_CHOICE_IO_URING, "reactor io_uring");
        tap_ok(parse_reactor("EPOLL", &c) == 0 && c == AO_REACTOR_CHOICE_EPOLL, "reactor EPOLL");
        tap_ok(parse_reactor("auto", &c) == 0 && c == AO_REACTOR_CHOICE_AUTO, "reactor auto");
        tap_ok(parse_reactor("", &c) == -EINVAL, "reactor empty");
}

/* ---- help and effective settings ---------------------------------------- */

static void test_help(void)
{
        char *text = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&text, &size);
        if (!f)
                tap_bail("open_memstream");
        ao_cli_print_flags(f);
        fclose(f);

        bool all = true;
        for (size_t i = 0; i < setting_defs_count; i++) {
                const struct ao_setting_def *d = &setting_defs[i];
                char flag[128];
                for (size_t j = 0; j < AO_SETTING_FLAGS_MAX && d->flags[j]; j++) {
                        (void) snprintf(flag, sizeof(flag), "--%s", d->flags[j]);
                        if (!strstr(text, flag)) {
                                tap_diag("help lacks %s", flag);
                                all = false;
                        }
                }
                for (size_t j = 0; j < AO_SETTING_ENVS_MAX && d->envs[j]; j++)
                        if (!strstr(text, d->envs[j])) {
                                tap_diag("help lacks %s", d->envs[j]);
                                all = false;
                        }
        }
        tap_ok(all, "help names every flag, alias and environment variable");
        tap_ok(strstr(text, "default: 9650") && strstr(text, "default: /var/run/addon-operator/debug.socket"),
               "help shows defaults");
        for (size_t s = 0; s < _AO_SETTING_SECTION_MAX; s++)
                tap_ok(strstr(text, ao_setting_section_names[s]) != NULL, "help has section '%s'",
                       ao_setting_section_names[s]);
        free(text);
}

static void test_print_settings(void)
{
        struct ao_cli cli;
        char *text = NULL;
        size_t size = 0;

        parse_ok(ARGV("--namespace=a\nb"), ENV("MODULES_DIR=/m"), &cli, "settings to print");
        FILE *f = open_memstream(&text, &size);
        if (!f)
                tap_bail("open_memstream");
        ao_cli_print_settings(&cli, f);
        fclose(f);
        tap_ok(strstr(text, "--namespace='a\\nb'  (flag --namespace)\n") != NULL,
               "flag origin, escaped value");
        tap_ok(strstr(text, "--modules-dir='/m'  (env MODULES_DIR)\n") != NULL, "env origin");
        tap_ok(strstr(text, "--listen-port='9650'  (default)\n") != NULL, "default origin");

        enum ao_setting_origin origin;
        tap_is_int(ao_cli_setting_origin(&cli, "--no-such-flag", &origin, NULL), -ENOENT,
                   "origin of unknown flag");
        tap_ok(ao_cli_setting_origin(&cli, "prometheus-listen-port", &origin, NULL) == 0 &&
                   origin == AO_SETTING_DEFAULT,
               "origin by alias");
        free(text);
        ao_cli_done(&cli);
}

int main(void)
{
        test_defaults();
        test_env_spellings();
        test_env_conflicts();
        test_shell_operator_fallbacks();
        test_other_envs();
        test_flags();
        test_path_lists();
        test_bad_values();
        test_duration();
        test_bool();
        test_numbers();
        test_names();
        test_help();
        test_print_settings();
        return tap_done();
}
