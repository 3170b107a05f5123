/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the kubeconfig and ExecCredential parsers. The first input byte picks the parser (modulo 3, so
 * seeds can start with a visible '0', '1' or '2' line):
 *   0: ao_kubeconfig_parse() for the current-context;
 *   1: ao_kubeconfig_parse() for the context named "fuzz";
 *   2: ao_kube_exec_credential_parse().
 * The document is the rest of the input, read as the file /fuzz/kubeconfig: relative paths resolve
 * under /fuzz, which does not exist. Besides crashes, leaks and undefined behaviour, it aborts when
 * the contract breaks:
 *   - a failure has a negative code that is also in the error, a one-line message, and leaves the
 *     result untouched;
 *   - an accepted kubeconfig has an http(s) server without a trailing '/', a source, data with its
 *     length, never a file and data for the same thing, a certificate only with a key, no CA when
 *     TLS is not verified, and a complete exec section;
 *   - an accepted credential has a token or a certificate and key, and both or neither of those.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ao/kubeconfig.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FILENAME "/fuzz/kubeconfig"
/* Real kubeconfigs are a few kilobytes; a cap keeps runs fast. */
#define FUZZ_INPUT_MAX (64 * 1024)

static char sentinel[] = "untouched";

static void check_failure(int r, const struct ao_error *err)
{
        if (r >= 0 || err->code != r || err->msg[0] == '\0' || strchr(err->msg, '\n'))
                abort();
}

static bool has_prefix(const char *s, const char *prefix)
{
        return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void check_data(const char *file, const char *data, size_t len)
{
        if ((data != NULL) != (len > 0) || (file && data) || (file && file[0] == '\0'))
                abort();
}

static void check_strv(char **v)
{
        if (!v)
                abort();
        for (; *v; v++)
                if (!*v)
                        abort();
}

static void check_config(const struct ao_kube_config *cfg)
{
        size_t n;

        if (!cfg->server || !cfg->source ||
            !(has_prefix(cfg->server, "https://") || has_prefix(cfg->server, "http://")))
                abort();
        n = strlen(cfg->server);
        if (cfg->server[n - 1] == '/')
                abort();
        check_data(cfg->ca_file, cfg->ca_data, cfg->ca_len);
        check_data(cfg->cert_file, cfg->cert_data, cfg->cert_len);
        check_data(cfg->key_file, cfg->key_data, cfg->key_len);
        if (!(cfg->cert_file || cfg->cert_data) != !(cfg->key_file || cfg->key_data))
                abort();
        if (cfg->insecure_skip_tls_verify && (cfg->ca_file || cfg->ca_data))
                abort();
        if ((cfg->token || cfg->token_file) && (cfg->username || cfg->password))
                abort();
        if (cfg->exec) {
                if (!cfg->exec->command || !cfg->exec->api_version || cfg->exec->command[0] == '\0')
                        abort();
                check_strv(cfg->exec->args);
                check_strv(cfg->exec->env);
                for (char **e = cfg->exec->env; *e; e++)
                        if ((*e)[0] == '=' || !strchr(*e, '='))
                                abort();
        }
}

static void fuzz_kubeconfig(const char *text, size_t len, const char *context)
{
        struct ao_kube_config cfg = {.server = sentinel};
        struct ao_error err = {0};
        int r = ao_kubeconfig_parse(text, len, FILENAME, context, &cfg, &err);

        if (r < 0) {
                check_failure(r, &err);
                if (cfg.server != sentinel || cfg.source)
                        abort();
                return;
        }
        if (r != 0)
                abort();
        check_config(&cfg);
        ao_kube_config_done(&cfg);
        if (cfg.server || cfg.exec)
                abort();
}

static void fuzz_credential(const char *text, size_t len)
{
        struct ao_kube_exec_credential c = {.token = sentinel};
        struct ao_error err = {0};
        int r = ao_kube_exec_credential_parse(text, len, &c, &err);

        if (r < 0) {
                check_failure(r, &err);
                if (c.token != sentinel || c.cert_data || c.key_data)
                        abort();
                return;
        }
        if (!c.token && !c.cert_data)
                abort();
        if (!c.cert_data != !c.key_data)
                abort();
        ao_kube_exec_credential_done(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        if (size < 1 || size > FUZZ_INPUT_MAX)
                return 0;
        size_t len = size - 1;
        char *text = malloc(len + 1);
        if (!text)
                return 0;
        memcpy(text, data + 1, len);
        text[len] = '\0';

        switch (data[0] % 3) {
        case 0:
                fuzz_kubeconfig(text, len, NULL);
                break;
        case 1:
                fuzz_kubeconfig(text, len, "fuzz");
                break;
        default:
                fuzz_credential(text, len);
                break;
        }
        free(text);
        return 0;
}
