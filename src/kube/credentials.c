/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Credentials the client sends, kept current. The exec plugin runs synchronously (bounded by
 * EXEC_TIMEOUT): at start-up, before the loop, and afterwards only when the credential expires
 * or is refused, which for the cloud plugins that use it means about once an hour.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/log.h"

#include "internal.h"

#define TOKEN_REREAD_USEC  (60ULL * 1000000)
#define TOKEN_FILE_MAX     (1024 * 1024)
#define EXEC_TIMEOUT_USEC  (30ULL * 1000000)
#define EXEC_EXPIRY_MARGIN 10 /* seconds before expiry that a credential counts as expired */

static char *dup_or_null(const char *s)
{
        return s ? ao_xstrdup(s) : NULL;
}

static char *dup_bytes(const char *data, size_t len)
{
        if (!data)
                return NULL;
        char *s = ao_xmalloc(len + 1);
        memcpy(s, data, len);
        s[len] = '\0';
        return s;
}

static char **dup_strv(char *const *v)
{
        size_t n = 0;
        while (v && v[n])
                n++;
        char **out = ao_xcalloc(n + 1, sizeof(*out));
        for (size_t i = 0; i < n; i++)
                out[i] = ao_xstrdup(v[i]);
        return out;
}

static void free_strv(char **v)
{
        for (size_t i = 0; v && v[i]; i++)
                free(v[i]);
        free(v);
}

/* Read a token file, trailing whitespace trimmed. */
static int read_token_file(const char *path, char **ret, struct ao_error *reterr)
{
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return ao_error_set(reterr, -errno, "cannot read token file '%s': %m", path);
        char *buf = ao_xmalloc(TOKEN_FILE_MAX + 1);
        size_t len = 0;
        ssize_t n;
        while (len < TOKEN_FILE_MAX && (n = read(fd, buf + len, TOKEN_FILE_MAX - len)) > 0)
                len += (size_t) n;
        close(fd);
        while (len > 0 && strchr(" \t\r\n", buf[len - 1]))
                len--;
        buf[len] = '\0';
        if (len == 0) {
                free(buf);
                return ao_error_set(reterr, -EINVAL, "token file '%s' is empty", path);
        }
        *ret = ao_xrealloc(buf, len + 1);
        return 0;
}

static int run_exec(struct kube_credentials *cr, struct ao_error *reterr)
{
        struct ao_kube_exec_credential fresh = {0};
        int r = ao_kube_exec_run(cr->exec, EXEC_TIMEOUT_USEC, &fresh, reterr);
        if (r < 0)
                return r;
        ao_kube_exec_credential_done(&cr->exec_cred);
        cr->exec_cred = fresh;
        cr->exec_stale = false;
        return 0;
}

int kube_credentials_init(struct kube_credentials *cr, const struct ao_kube_config *config,
                          struct ao_error *reterr)
{
        *cr = (struct kube_credentials){
            .insecure = config->insecure_skip_tls_verify,
            .ca_file = dup_or_null(config->ca_file),
            .ca_data = dup_bytes(config->ca_data, config->ca_len),
            .ca_len = config->ca_len,
            .cert_file = dup_or_null(config->cert_file),
            .key_file = dup_or_null(config->key_file),
            .cert_data = dup_bytes(config->cert_data, config->cert_len),
            .key_data = dup_bytes(config->key_data, config->key_len),
            .token = dup_or_null(config->token),
            .token_file = dup_or_null(config->token_file),
            .username = dup_or_null(config->username),
            .password = dup_or_null(config->password),
            .proxy_url = dup_or_null(config->proxy_url),
        };
        if (config->exec) {
                cr->exec = ao_xcalloc(1, sizeof(*cr->exec));
                cr->exec->command = ao_xstrdup(config->exec->command);
                cr->exec->args = dup_strv(config->exec->args);
                cr->exec->env = dup_strv(config->exec->env);
                cr->exec->api_version = dup_or_null(config->exec->api_version);
                int r = run_exec(cr, reterr);
                if (r < 0)
                        return ao_error_prefix(reterr, "exec credential plugin");
        }
        if (cr->token_file) {
                /* As in client-go, the file's contents win over an inline token. */
                char *from_file = NULL;
                int r = read_token_file(cr->token_file, &from_file, reterr);
                if (r < 0)
                        return r;
                free(cr->token);
                cr->token = from_file;
        }
        return 0;
}

void kube_credentials_done(struct kube_credentials *cr)
{
        free(cr->ca_file);
        free(cr->ca_data);
        free(cr->cert_file);
        free(cr->key_file);
        free(cr->cert_data);
        if (cr->key_data)
                explicit_bzero(cr->key_data, strlen(cr->key_data));
        free(cr->key_data);
        if (cr->token)
                explicit_bzero(cr->token, strlen(cr->token));
        free(cr->token);
        free(cr->token_file);
        free(cr->username);
        free(cr->password);
        free(cr->proxy_url);
        if (cr->exec) {
                free(cr->exec->command);
                free_strv(cr->exec->args);
                free_strv(cr->exec->env);
                free(cr->exec->api_version);
                free(cr->exec);
        }
        ao_kube_exec_credential_done(&cr->exec_cred);
        *cr = (struct kube_credentials){0};
}

static bool exec_expired(const struct kube_credentials *cr)
{
        if (cr->exec_stale)
                return true;
        return cr->exec_cred.expires_unix > 0 &&
               time(NULL) + EXEC_EXPIRY_MARGIN >= cr->exec_cred.expires_unix;
}

const char *kube_credentials_token(struct kube_credentials *cr, uint64_t now)
{
        if (cr->exec) {
                if (exec_expired(cr)) {
                        struct ao_error err = {0};
                        if (run_exec(cr, &err) < 0)
                                ao_log(AO_LOG_ERROR,
                                       "exec credential plugin '%s': %s (keeping the old credential)",
                                       cr->exec->command, err.msg);
                        cr->exec_stale = false; /* retry at the next expiry or 401, not on every request */
                }
                if (cr->exec_cred.token)
                        return cr->exec_cred.token;
        }
        if (cr->token_file && now - cr->token_read_usec >= TOKEN_REREAD_USEC) {
                char *fresh = NULL;
                struct ao_error err = {0};
                if (read_token_file(cr->token_file, &fresh, &err) >= 0) {
                        free(cr->token);
                        cr->token = fresh;
                } else {
                        ao_log(AO_LOG_WARN, "%s (keeping the token read before)", err.msg);
                }
                cr->token_read_usec = now;
        }
        return cr->token;
}

const char *kube_credentials_cert(const struct kube_credentials *cr)
{
        return cr->exec_cred.cert_data ? cr->exec_cred.cert_data : cr->cert_data;
}

const char *kube_credentials_key(const struct kube_credentials *cr)
{
        return cr->exec_cred.key_data ? cr->exec_cred.key_data : cr->key_data;
}

void kube_credentials_invalidate(struct kube_credentials *cr)
{
        if (cr->exec)
                cr->exec_stale = true;
        cr->token_read_usec = 0;
}
