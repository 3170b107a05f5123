/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/operator.h"

#include <sys/prctl.h>
#include <sys/resource.h>

#include "ao-build-config.h"
#include "ao/hook-run.h"
#include "ao/hooks.h"
#include "ao/log.h"
#include "ao/proc.h"
#include "ao/reactor.h"
#include "ao/sandbox.h"
#include "ao/shutdown.h"
#include "internal.h"

static int setup_logging(const struct ao_cli *cli)
{
        const struct ao_settings *s = &cli->settings;
        struct ao_log_options options = {
            .format = s->log_format,
            .level = s->log_level,
            .no_time = s->log_no_time,
            .fd = -1,
        };
        int k = ao_log_setup(&options);
        if (k < 0)
                return k;
        for (size_t i = 0; i < cli->n_notices; i++)
                ao_log(cli->notices[i].level, "%s", cli->notices[i].text);
        return 0;
}

/* The operator holds a socket per watch and a pidfd per child: lift the soft fd limit to the hard one. */
static void raise_fd_limit(void)
{
        struct rlimit rl;
        if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= rl.rlim_max)
                return;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                ao_log_errno(AO_LOG_DEBUG, -errno, "raising RLIMIT_NOFILE failed, ignoring");
}

static enum ao_reactor_backend reactor_backend_of(enum ao_reactor_backend_choice choice)
{
        switch (choice) {
        case AO_REACTOR_CHOICE_IO_URING:
                return AO_REACTOR_BACKEND_IO_URING;
        case AO_REACTOR_CHOICE_EPOLL:
                return AO_REACTOR_BACKEND_EPOLL;
        default:
                return AO_REACTOR_BACKEND_AUTO;
        }
}

static int create_reactor(struct operator_state *op)
{
        struct ao_error err = {0};
        int k = ao_reactor_new(reactor_backend_of(op->settings->reactor), &op->reactor, &err);
        if (k < 0) {
                ao_log(AO_LOG_ERROR, "event loop: %s", err.msg);
                return k;
        }
        const char *reason = ao_reactor_fallback_reason(op->reactor);
        if (reason)
                ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"backend", ao_reactor_backend_name(op->reactor)}),
                            "event loop: using epoll, io_uring is unavailable: %s", reason);
        else
                ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"backend", ao_reactor_backend_name(op->reactor)}),
                            "event loop: using %s", ao_reactor_backend_name(op->reactor));
        return 0;
}

/*
 * Log output that could not be written at once waits in the logger's
 * backlog. Watch the output for writability only while there is a backlog:
 * a wake-up (logging may happen on any thread) enables the watch, and the
 * watch turns itself off once the backlog is gone.
 */
static int on_log_writable(struct ao_source *s, int fd, uint32_t revents, void *userdata)
{
        if (ao_log_flush() == 0)
                (void) ao_source_set_enabled(s, AO_SOURCE_OFF);
        return 0;
}

static int on_log_backlog(struct ao_source *s, void *userdata)
{
        struct operator_state *op = userdata;
        if (ao_log_backlog_bytes() > 0)
                (void) ao_source_set_enabled(op->log_writable, AO_SOURCE_ON);
        return 0;
}

static void notify_log_backlog(void *userdata)
{
        ao_source_wakeup(userdata);
}

static int watch_log_backlog(struct operator_state *op)
{
        int k =
            ao_reactor_add_io(op->reactor, &op->log_writable, ao_log_fd(), AO_IO_OUT, on_log_writable, op);
        if (k == -EPERM)
                return 0; /* epoll refuses regular files: they never make a writer wait, so no backlog */
        if (k < 0)
                return k;
        k = ao_reactor_add_wakeup(op->reactor, &op->log_wakeup, on_log_backlog, op);
        if (k < 0)
                return k;
        (void) ao_source_set_enabled(op->log_writable, AO_SOURCE_OFF);
        ao_log_set_backlog_notify(notify_log_backlog, op->log_wakeup);
        return 0;
}

static void log_start_banner(const struct ao_settings *s)
{
        ao_log_with(AO_LOG_INFO,
                    AO_LOG_FIELDS({"version", AO_VERSION}, {"modules_dir", s->modules_dir_raw},
                                  {"global_hooks_dir", s->global_hooks_dir}, {"namespace", s->namespace_},
                                  {"config_map", s->config_map}),
                    "addon-operator starting");
}

static int setup_hook_processes(struct operator_state *op)
{
        const struct ao_settings *s = op->settings;
        struct ao_error err = {0};
        if (ao_sandbox_profiles_load(s->sandbox_profiles_dir, &op->profiles, &err) < 0) {
                ao_log(AO_LOG_ERROR, "sandbox: %s", err.msg);
                return -EINVAL;
        }
        op->default_profile = ao_sandbox_profiles_find(op->profiles, s->sandbox_profile);
        if (!op->default_profile) {
                ao_log(AO_LOG_ERROR, "sandbox: no profile named '%s' (ADDON_OPERATOR_SANDBOX_PROFILE)",
                       s->sandbox_profile);
                return -ENOENT;
        }
        struct ao_proc_options options = {
            .spawner_path = s->spawner_path[0] ? s->spawner_path : NULL,
            .subreaper = true,
            .join_json_lines = s->log_proxy_hook_json,
        };
        if (ao_proc_new(op->reactor, &options, &op->proc, &err) < 0) {
                ao_log(AO_LOG_ERROR, "%s", err.msg);
                return -EIO;
        }
        ao_log_with(AO_LOG_INFO,
                    AO_LOG_FIELDS({"profile", op->default_profile->name},
                                  {"launcher", ao_proc_uses_spawner(op->proc) ? "spawner" : "in-process"}),
                    "hook processes: sandbox profile '%s' by default", op->default_profile->name);
        return ao_proc_attach_shutdown(op->proc, op->shutdown);
}

static bool tmp_dir_is_explicit(const struct ao_cli *cli)
{
        enum ao_setting_origin origin = AO_SETTING_DEFAULT;
        (void) ao_cli_setting_origin(cli, "tmp-dir", &origin, NULL);
        return origin != AO_SETTING_DEFAULT;
}

static int setup_hook_runner(struct operator_state *op)
{
        const struct ao_settings *s = op->settings;
        struct ao_hook_runner_options options = {
            .tmp_dir = s->tmp_dir,
            .tmp_dir_explicit = tmp_dir_is_explicit(op->cli),
            .keep_files = s->debug_keep_tmp_files,
        };
        struct ao_error err = {0};
        if (ao_hook_runner_new(op->proc, &options, &op->runner, &err) < 0) {
                ao_log(AO_LOG_ERROR, "%s", err.msg);
                return -EIO;
        }
        ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"dir", ao_hook_runner_dir(op->runner)}),
                    "hook runs: temp files in '%s'", ao_hook_runner_dir(op->runner));
        return 0;
}

static void operator_done(struct operator_state *op)
{
        ao_log_set_backlog_notify(NULL, NULL);
        lifecycle_done(op);
        op->runner = ao_hook_runner_free(op->runner);
        op->proc = ao_proc_free(op->proc);
        (void) ao_proc_end_leftovers();
        op->profiles = ao_sandbox_profiles_free(op->profiles);
        op->shutdown = ao_shutdown_free(op->shutdown);
        op->log_wakeup = ao_source_free(op->log_wakeup);
        op->log_writable = ao_source_free(op->log_writable);
        op->reactor = ao_reactor_free(op->reactor);
}

int ao_operator_run(const struct ao_cli *cli)
{
        struct operator_state op = {.cli = cli, .settings = &cli->settings};
        if (setup_logging(cli) < 0)
                return 1;
        log_start_banner(op.settings);
        raise_fd_limit();

        int code = 1;
        if (create_reactor(&op) < 0)
                goto out;
        int k = watch_log_backlog(&op);
        if (k < 0) {
                ao_log_errno(AO_LOG_ERROR, k, "event loop: watching the log output failed");
                goto out;
        }
        k = ao_shutdown_new(op.reactor, op.settings->shutdown_timeout_usec, &op.shutdown);
        if (k < 0) {
                ao_log_errno(AO_LOG_ERROR, k, "event loop: installing signal handling failed");
                goto out;
        }
        if (setup_hook_processes(&op) < 0 || setup_hook_runner(&op) < 0)
                goto out;
        k = lifecycle_start(&op);
        if (k != 0) {
                code = k > 0 ? 0 : 1; /* > 0: stopped by a signal before the start finished */
                goto out;
        }

        code = ao_reactor_run(op.reactor);
        if (code < 0) {
                ao_log_errno(AO_LOG_ERROR, code, "event loop failed");
                code = 1;
        }
        ao_log(AO_LOG_INFO, "addon-operator stopped (exit code %d)", code);
out:
        operator_done(&op);
        ao_log_shutdown(AO_USEC_PER_SEC);
        return code;
}
