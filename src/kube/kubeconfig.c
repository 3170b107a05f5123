/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/kubeconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/base64.h"
#include "ao/input.h"
#include "ao/json-type.h"
#include "ao/quote.h"
#include "ao/yaml.h"

/*
 * Kubeconfig files are loaded whole into cJSON trees and never merged into a new one: a name is
 * looked up in each file in turn and the first file that defines it wins, which is what kubectl's
 * merge of $KUBECONFIG amounts to. Only what the chosen context uses (its cluster and user) is
 * checked, as client-go validates only the configuration it is about to use; unknown keys are
 * ignored, as kubectl ignores them.
 *
 * The result is built in a zeroed struct ao_kube_config, which ao_kube_config_done() releases
 * whatever a failure leaves half built, and handed to the caller only on success.
 */

#define SERVICE_ACCOUNT_DIR "/var/run/secrets/kubernetes.io/serviceaccount"
/* Bearer tokens are a few kilobytes; the cap only bounds what a wrong path can cost. */
#define TOKEN_MAX (1u << 20)
/* The namespace file holds one DNS label. */
#define NAMESPACE_MAX 4096
/* User strings in messages are cut to this many bytes. */
#define SHOW_MAX 128
/* "users[18446744073709551615].user.exec.env[18446744073709551615]" fits. */
#define FIELD_PATH_MAX 128

#define EXEC_API_V1       "client.authentication.k8s.io/v1"
#define EXEC_API_V1BETA1  "client.authentication.k8s.io/v1beta1"
#define EXEC_API_V1ALPHA1 "client.authentication.k8s.io/v1alpha1"

/* One loaded kubeconfig file. */
struct kc_file {
        char *name;  /* owned: the path as given, or "<input>" */
        char *dir;   /* owned: absolute directory relative paths start from; NULL: leave them relative */
        cJSON *root; /* owned: a mapping, or null for an empty document */
};

/* The files in precedence order. */
struct kc_files {
        struct kc_file *items; /* owned, n of them */
        size_t n;
        char *names; /* owned: "a, b", for messages about all of them */
};

/* A mapping inside one file (a cluster, user or context body, the exec section), for reads and messages. */
struct kc_node {
        const struct kc_file *file; /* borrowed */
        const cJSON *body;          /* borrowed; NULL when absent or null: every key reads as unset */
        char path[FIELD_PATH_MAX];  /* "users[3].user"; "" for the top level */
};

/* ---- messages ------------------------------------------------------------------------------------- */

/* @s for a message in @buf (@size bytes): control bytes as \xNN, cut with "..." when too long. */
static const char *escape(char *buf, size_t size, const char *s)
{
        return ao_quote_bytes(buf, size, s, strlen(s));
}

/* User strings in messages: names, URLs, versions. */
#define show(buf, s) escape(buf, sizeof(buf), s)
/* Paths are longer. */
#define SHOW_PATH_MAX 300

/* Set @node's path; vsnprintf, since paths are far below the limit and a cut one still reads well. */
_printf_(2, 3) static void set_path(struct kc_node *node, const char *fmt, ...)
{
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(node->path, sizeof(node->path), fmt, ap);
        va_end(ap);
}

/* "path.key", "path" or "key", whichever parts there are, in @buf of @size bytes. */
static const char *where(char *buf, size_t size, const struct kc_node *node, const char *key)
{
        bool dot = node->path[0] != '\0' && key;

        int n = snprintf(buf, size, "%s%s%s", node->path, dot ? "." : "", key ? key : "");
        /* A path longer than the buffer is cut: the message stays readable and bounded. */
        if (n < 0)
                buf[0] = '\0';
        return buf;
}

/* "file: path.key: reason", always -EINVAL: everything wrong inside a kubeconfig is a configuration error. */
_printf_(4, 5) static int fail(struct ao_error *reterr, const struct kc_node *node, const char *key,
                               const char *fmt, ...)
{
        char reason[AO_ERROR_MSG_MAX], at[FIELD_PATH_MAX + 64];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(reason, sizeof(reason), fmt, ap);
        va_end(ap);
        return ao_error_set(reterr, -EINVAL, "%s: %s: %s", node->file->name, where(at, sizeof(at), node, key),
                            reason);
}

/* Put "file: path.key" before the message a helper left in @reterr; -EINVAL, so a missing file is not -ENOENT. */
static int fail_prefix(struct ao_error *reterr, const struct kc_node *node, const char *key)
{
        char at[FIELD_PATH_MAX + 64];

        (void) ao_error_prefix(reterr, "%s: %s", node->file->name, where(at, sizeof(at), node, key));
        if (reterr)
                reterr->code = -EINVAL;
        return -EINVAL;
}

/* ---- typed reads ---------------------------------------------------------------------------------- */

static const cJSON *member(const struct kc_node *node, const char *key)
{
        const cJSON *v = node->body ? cJSON_GetObjectItemCaseSensitive(node->body, key) : NULL;

        return cJSON_IsNull(v) ? NULL : v;
}

/* @key as a string; NULL when absent, null or empty, which client-go cannot tell apart either. */
static int get_string(const struct kc_node *node, const char *key, const char **ret, struct ao_error *reterr)
{
        const cJSON *v = member(node, key);

        if (v && !cJSON_IsString(v))
                return fail(reterr, node, key, "must be a string, not %s",
                            ao_json_type_name(v, AO_JSON_WORDS_KUBECTL));
        *ret = v && v->valuestring[0] != '\0' ? v->valuestring : NULL;
        return 0;
}

static int get_bool(const struct kc_node *node, const char *key, bool *ret, struct ao_error *reterr)
{
        const cJSON *v = member(node, key);

        if (v && !cJSON_IsBool(v))
                return fail(reterr, node, key, "must be true or false, not %s",
                            ao_json_type_name(v, AO_JSON_WORDS_KUBECTL));
        *ret = cJSON_IsTrue(v);
        return 0;
}

/* A sub-mapping of @node (NULL body when absent); @ret's path is @node's plus @key. */
static int get_mapping(const struct kc_node *node, const char *key, struct kc_node *ret,
                       struct ao_error *reterr)
{
        const cJSON *v = member(node, key);

        if (v && !cJSON_IsObject(v))
                return fail(reterr, node, key, "must be a mapping, not %s",
                            ao_json_type_name(v, AO_JSON_WORDS_KUBECTL));
        ret->file = node->file;
        ret->body = v;
        (void) where(ret->path, sizeof(ret->path), node, key);
        return 0;
}

/* @key as base64 data: NULL when unset or when it decodes to nothing. */
static int get_data(const struct kc_node *node, const char *key, char **ret, size_t *ret_len,
                    struct ao_error *reterr)
{
        const char *s = NULL; /* gcc -O3 cannot see that get_string() sets it whenever it returns 0 */
        char *data;
        size_t len;
        int r = get_string(node, key, &s, reterr);

        if (r < 0)
                return r;
        if (!s)
                return 0;
        if (ao_base64_decode_dup(s, strlen(s), &data, &len) < 0)
                return fail(reterr, node, key, "not valid base64");
        if (len == 0) {
                free(data);
                return 0;
        }
        *ret = data;
        *ret_len = len;
        return 0;
}

/* ---- files ---------------------------------------------------------------------------------------- */

/*
 * Read @path whole, at most @max bytes, NUL-terminated. Only regular files unless @any_type (a
 * kubeconfig may come from a pipe: KUBE_CONFIG=<(...)); the type is checked before opening, because
 * opening a device can act on it. Errors: "cannot read 'path': reason" with -errno or -EFBIG.
 */
static int read_text(const char *path, size_t max, bool any_type, char **ret, size_t *ret_len,
                     struct ao_error *reterr)
{
        char shown[SHOW_PATH_MAX];
        _cleanup_free_ char *buf = NULL;
        _cleanup_close_ int fd = -EBADF;
        size_t len = 0, cap = 0;
        struct stat st;
        int r;

        if (stat(path, &st) < 0) {
                r = ao_negative_errno();
                goto fail;
        }
        if (!any_type && !S_ISREG(st.st_mode))
                return ao_error_set(reterr, -EINVAL, "cannot read '%s': not a regular file",
                                    show(shown, path));
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) {
                r = ao_negative_errno();
                goto fail;
        }
        for (;;) {
                if (len == cap) {
                        cap = AO_MIN(cap ? cap * 2 : 4096, max + 1);
                        buf = ao_xrealloc(buf, cap + 1);
                }
                ssize_t n = read(fd, buf + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        r = ao_negative_errno();
                        goto fail;
                }
                if (n == 0)
                        break;
                len += (size_t) n;
                if (len > max)
                        return ao_error_set(reterr, -EFBIG, "cannot read '%s': larger than %zu bytes",
                                            show(shown, path), max);
        }
        buf[len] = '\0';
        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
fail:
        return ao_error_set(reterr, r, "cannot read '%s': %s", show(shown, path), strerror(-r));
}

/* @s without the white space around it, in place. */
static char *trim(char *s)
{
        size_t start = strspn(s, " \t\r\n"), end = strlen(s);

        while (end > start && strchr(" \t\r\n", s[end - 1]))
                end--;
        memmove(s, s + start, end - start);
        s[end - start] = '\0';
        return s;
}

/* A bearer token file: surrounding white space dropped (client-go's file token source does so), never empty. */
static int read_token(const char *path, char **ret, struct ao_error *reterr)
{
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = read_text(path, TOKEN_MAX, false, &text, &len, reterr);

        if (r < 0)
                return r;
        char shown[SHOW_PATH_MAX];
        if (strlen(text) != len)
                return ao_error_set(reterr, -EINVAL, "'%s' holds a NUL byte", show(shown, path));
        if (trim(text)[0] == '\0')
                return ao_error_set(reterr, -EINVAL, "'%s' is empty", show(shown, path));
        *ret = TAKE_PTR(text);
        return 0;
}

/* The directory of @filename as an absolute path (client-go makes it absolute too); NULL: unknown. */
static char *file_dir(const char *filename)
{
        const char *slash = strrchr(filename, '/');
        _cleanup_free_ char *cwd = NULL;

        if (filename[0] == '/')
                return ao_xstrndup(filename, (size_t) (slash - filename));
        cwd = getcwd(NULL, 0);
        if (!cwd)
                return NULL;
        if (!slash)
                return TAKE_PTR(cwd);
        return ao_xasprintf("%s/%.*s", cwd, (int) (slash - filename), filename);
}

/* @path relative to the directory of the file that names it, as kubectl resolves it. */
static char *resolve_path(const struct kc_file *file, const char *path)
{
        if (path[0] == '/' || !file->dir)
                return ao_xstrdup(path);
        return ao_xasprintf("%s/%s", file->dir, path);
}

/* Fail early on a certificate or key file that the HTTP client could not open later (client-go checks too). */
static int check_readable(const struct kc_node *node, const char *key, const char *path,
                          struct ao_error *reterr)
{
        char shown[SHOW_PATH_MAX];

        if (access(path, R_OK) < 0) {
                int r = ao_negative_errno();
                return fail(reterr, node, key, "cannot read '%s': %s", show(shown, path), strerror(-r));
        }
        return 0;
}

/* ---- URLs ----------------------------------------------------------------------------------------- */

/* "host", "host:port", "[v6]" or "[v6]:port" (@len bytes); NULL when fine, else what is wrong. */
static const char *check_host_port(const char *s, size_t len)
{
        size_t host_len;
        const char *port;

        if (len == 0)
                return "has no host";
        if (s[0] == '[') {
                const char *close = memchr(s, ']', len);
                if (!close || close == s + 1)
                        return "has an invalid IPv6 address";
                for (const char *p = s + 1; p < close; p++)
                        if (!strchr("0123456789abcdefABCDEF:.", *p))
                                return "has an invalid IPv6 address";
                host_len = (size_t) (close - s) + 1;
        } else {
                host_len = 0;
                while (host_len < len && s[host_len] != ':')
                        host_len++;
                if (host_len == 0)
                        return "has no host";
                for (size_t i = 0; i < host_len; i++)
                        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._",
                                    s[i]))
                                return "has an invalid host name";
        }
        if (host_len == len)
                return NULL;
        if (s[host_len] != ':')
                return "has an invalid host";
        port = s + host_len + 1;
        size_t port_len = len - host_len - 1;
        unsigned value = 0;
        if (port_len == 0 || port_len > 5)
                return "has an invalid port";
        for (size_t i = 0; i < port_len; i++) {
                if (port[i] < '0' || port[i] > '9')
                        return "has an invalid port";
                value = value * 10 + (unsigned) (port[i] - '0');
        }
        return value >= 1 && value <= 65535 ? NULL : "has an invalid port";
}

/*
 * @url checked as an API server address (@proxy: as a proxy) and normalised: lower-case scheme, and for
 * a server no trailing '/'. A server is http:// or https://, a host (name, IPv4 or bracketed IPv6), an
 * optional port and an optional path prefix (proxies such as Rancher serve the API under one); no user
 * info, query or fragment. A proxy may also be socks5:// and carry user info, as client-go's
 * parseProxyURL allows. Returns NULL with @ret_reason set when it is not acceptable.
 */
static char *check_url(const char *url, bool proxy, const char **ret_reason)
{
        static const char *const schemes[] = {"https", "http", "socks5"};
        const char *sep = strstr(url, "://"), *authority, *rest, *host, *reason;
        size_t scheme = 0, n_schemes = proxy ? 3 : 2, authority_len;

        while (scheme < n_schemes && !(sep && (size_t) (sep - url) == strlen(schemes[scheme]) &&
                                       strncasecmp(url, schemes[scheme], strlen(schemes[scheme])) == 0))
                scheme++;
        if (scheme == n_schemes) {
                *ret_reason = proxy ? "must start with http://, https:// or socks5://"
                                    : "must start with http:// or https://";
                return NULL;
        }
        for (const unsigned char *p = (const unsigned char *) url; *p; p++)
                if (*p <= ' ' || *p == 0x7F) {
                        *ret_reason = "must not contain white space or control characters";
                        return NULL;
                }
        authority = sep + 3;
        authority_len = strcspn(authority, "/?#");
        rest = authority + authority_len;
        host = memrchr(authority, '@', authority_len);
        host = host ? host + 1 : authority;
        if (!proxy && host != authority) {
                *ret_reason = "must not contain user info";
                return NULL;
        }
        if (!proxy && strpbrk(rest, "?#")) {
                *ret_reason = "must not have a query or fragment";
                return NULL;
        }
        reason = check_host_port(host, authority_len - (size_t) (host - authority));
        if (reason) {
                *ret_reason = reason;
                return NULL;
        }
        size_t rest_len = strlen(rest);
        while (!proxy && rest_len > 0 && rest[rest_len - 1] == '/')
                rest_len--;
        return ao_xasprintf("%s://%.*s%.*s", schemes[scheme], (int) authority_len, authority, (int) rest_len,
                            rest);
}

/* ---- clusters ------------------------------------------------------------------------------------- */

static int parse_cluster(const struct kc_node *c, struct ao_kube_config *cfg, struct ao_error *reterr)
{
        const char *server = NULL, *ca = NULL, *name = NULL, *proxy = NULL, *reason = NULL;
        char buf[SHOW_MAX];
        int r;

        r = get_string(c, "server", &server, reterr);
        if (r < 0)
                return r;
        if (!server)
                return fail(reterr, c, "server", "missing");
        cfg->server = check_url(server, false, &reason);
        if (!cfg->server)
                return fail(reterr, c, "server", "'%s' %s", show(buf, server), reason);

        r = get_string(c, "certificate-authority", &ca, reterr);
        if (r >= 0)
                r = get_data(c, "certificate-authority-data", &cfg->ca_data, &cfg->ca_len, reterr);
        if (r < 0)
                return r;
        if (ca && cfg->ca_data)
                return fail(reterr, c, NULL,
                            "certificate-authority and certificate-authority-data are both given");
        if (ca) {
                cfg->ca_file = resolve_path(c->file, ca);
                r = check_readable(c, "certificate-authority", cfg->ca_file, reterr);
                if (r < 0)
                        return r;
        }

        /* client-go refuses the pair too ("specifying a root certificates file with the insecure flag"). */
        r = get_bool(c, "insecure-skip-tls-verify", &cfg->insecure_skip_tls_verify, reterr);
        if (r < 0)
                return r;
        if (cfg->insecure_skip_tls_verify && (cfg->ca_file || cfg->ca_data))
                return fail(reterr, c, "insecure-skip-tls-verify",
                            "cannot be combined with a certificate authority");

        r = get_string(c, "tls-server-name", &name, reterr);
        if (r >= 0)
                r = get_string(c, "proxy-url", &proxy, reterr);
        if (r < 0)
                return r;
        cfg->tls_server_name = name ? ao_xstrdup(name) : NULL;
        if (proxy) {
                cfg->proxy_url = check_url(proxy, true, &reason);
                if (!cfg->proxy_url)
                        return fail(reterr, c, "proxy-url", "'%s' %s", show(buf, proxy), reason);
        }
        return 0;
}

/* ---- users ---------------------------------------------------------------------------------------- */

static void strv_free(char **v)
{
        for (char **p = v; p && *p; p++)
                free(*p);
        free(v);
}

static void exec_free(struct ao_kube_exec *exec)
{
        if (!exec)
                return;
        free(exec->command);
        strv_free(exec->args);
        strv_free(exec->env);
        free(exec->api_version);
        free(exec);
}

/* A list member of @node (NULL when absent) and a zeroed NULL-terminated array with a slot per item. */
static int get_list(const struct kc_node *node, const char *key, const cJSON **ret, char ***ret_v,
                    struct ao_error *reterr)
{
        const cJSON *v = member(node, key);

        if (v && !cJSON_IsArray(v))
                return fail(reterr, node, key, "must be a list, not %s",
                            ao_json_type_name(v, AO_JSON_WORDS_KUBECTL));
        *ret = v;
        *ret_v = ao_xcalloc((size_t) (v ? cJSON_GetArraySize(v) : 0) + 1, sizeof(char *));
        return 0;
}

static int parse_exec_args(const struct kc_node *x, struct ao_kube_exec *exec, struct ao_error *reterr)
{
        const cJSON *args;
        size_t i = 0;
        int r = get_list(x, "args", &args, &exec->args, reterr);

        if (r < 0)
                return r;
        for (const cJSON *a = args ? args->child : NULL; a; a = a->next, i++) {
                if (!cJSON_IsString(a))
                        return fail(reterr, x, "args", "item %zu must be a string, not %s", i,
                                    ao_json_type_name(a, AO_JSON_WORDS_KUBECTL));
                exec->args[i] = ao_xstrdup(a->valuestring);
        }
        return 0;
}

static int parse_exec_env(const struct kc_node *x, struct ao_kube_exec *exec, struct ao_error *reterr)
{
        const cJSON *env;
        size_t i = 0;
        int r = get_list(x, "env", &env, &exec->env, reterr);

        if (r < 0)
                return r;
        for (const cJSON *e = env ? env->child : NULL; e; e = e->next, i++) {
                struct kc_node item = {.file = x->file, .body = e};
                const char *name = NULL, *value = NULL;
                set_path(&item, "%s.env[%zu]", x->path, i);
                if (!cJSON_IsObject(e))
                        return fail(reterr, &item, NULL, "must be a mapping with name and value, not %s",
                                    ao_json_type_name(e, AO_JSON_WORDS_KUBECTL));
                r = get_string(&item, "name", &name, reterr);
                if (r >= 0)
                        r = get_string(&item, "value", &value, reterr);
                if (r < 0)
                        return r;
                if (!name || strchr(name, '='))
                        return fail(reterr, &item, "name", "%s", name ? "must not contain '='" : "missing");
                exec->env[i] = ao_xasprintf("%s=%s", name, value ? value : "");
        }
        return 0;
}

/* users[].user.exec: the plugin client-go would run (client.authentication.k8s.io v1 or v1beta1). */
static int parse_exec(const struct kc_node *u, struct ao_kube_config *cfg, struct ao_error *reterr)
{
        const char *command = NULL, *version = NULL, *mode = NULL;
        struct kc_node x;
        char buf[SHOW_MAX];
        int r;

        r = get_mapping(u, "exec", &x, reterr);
        if (r < 0 || !x.body)
                return r;
        cfg->exec = ao_xcalloc(1, sizeof(*cfg->exec));
        r = get_string(&x, "command", &command, reterr);
        if (r >= 0)
                r = get_string(&x, "apiVersion", &version, reterr);
        if (r >= 0)
                r = get_string(&x, "interactiveMode", &mode, reterr);
        if (r < 0)
                return r;
        if (!command)
                return fail(reterr, &x, "command", "missing");
        if (!version)
                return fail(reterr, &x, "apiVersion", "missing");
        if (strcmp(version, EXEC_API_V1ALPHA1) == 0)
                return fail(reterr, &x, "apiVersion",
                            "'%s' is no longer supported (removed in Kubernetes 1.24)", version);
        if (strcmp(version, EXEC_API_V1) != 0 && strcmp(version, EXEC_API_V1BETA1) != 0)
                return fail(reterr, &x, "apiVersion", "'%s' is not %s or %s", show(buf, version), EXEC_API_V1,
                            EXEC_API_V1BETA1);
        /* The operator has no terminal to lend a plugin: "Always" could never work. */
        if (mode && strcmp(mode, "Never") != 0 && strcmp(mode, "IfAvailable") != 0)
                return fail(reterr, &x, "interactiveMode", "%s",
                            strcmp(mode, "Always") == 0
                                ? "'Always' needs a terminal, which the operator has not"
                                : "must be Never, IfAvailable or Always");
        /* As kubectl does: a command with a '/' is a path relative to the kubeconfig, others go through $PATH. */
        cfg->exec->command = strchr(command, '/') ? resolve_path(x.file, command) : ao_xstrdup(command);
        cfg->exec->api_version = ao_xstrdup(version);
        r = parse_exec_args(&x, cfg->exec, reterr);
        if (r >= 0)
                r = parse_exec_env(&x, cfg->exec, reterr);
        return r;
}

/* A certificate or key given as @file_key (a path) or @data_key (base64), not both. */
static int parse_pem(const struct kc_node *u, const char *file_key, const char *data_key, char **ret_file,
                     char **ret_data, size_t *ret_len, struct ao_error *reterr)
{
        const char *file;
        int r = get_string(u, file_key, &file, reterr);

        if (r >= 0)
                r = get_data(u, data_key, ret_data, ret_len, reterr);
        if (r < 0)
                return r;
        if (file && *ret_data)
                return fail(reterr, u, NULL, "%s and %s are both given", file_key, data_key);
        if (!file)
                return 0;
        *ret_file = resolve_path(u->file, file);
        return check_readable(u, file_key, *ret_file, reterr);
}

/*
 * Fields that would change who the operator acts as, or how it gets credentials, in ways this client
 * does not implement: refused rather than ignored, since ignoring them would send other credentials.
 */
static int refuse_unsupported(const struct kc_node *u, struct ao_error *reterr)
{
        static const char *const impersonation[] = {"as", "as-uid", "as-groups", "as-user-extra"};
        const cJSON *provider = member(u, "auth-provider");
        char buf[SHOW_MAX];

        if (provider) {
                const cJSON *name = cJSON_GetObjectItemCaseSensitive(provider, "name");
                return fail(reterr, u, "auth-provider",
                            "'%s' is not supported; use an exec credential plugin",
                            show(buf, cJSON_IsString(name) ? name->valuestring : ""));
        }
        for (size_t i = 0; i < AO_ARRAY_SIZE(impersonation); i++) {
                const cJSON *v = member(u, impersonation[i]);
                bool empty = !v || (cJSON_IsString(v) && v->valuestring[0] == '\0') ||
                             ((cJSON_IsArray(v) || cJSON_IsObject(v)) && !v->child);
                if (!empty)
                        return fail(reterr, u, impersonation[i], "impersonation is not supported");
        }
        return 0;
}

static int parse_user(const struct kc_node *u, struct ao_kube_config *cfg, struct ao_error *reterr)
{
        const char *token = NULL, *token_file = NULL, *username = NULL, *password = NULL;
        int r;

        r = refuse_unsupported(u, reterr);
        if (r >= 0)
                r = parse_pem(u, "client-certificate", "client-certificate-data", &cfg->cert_file,
                              &cfg->cert_data, &cfg->cert_len, reterr);
        if (r >= 0)
                r = parse_pem(u, "client-key", "client-key-data", &cfg->key_file, &cfg->key_data,
                              &cfg->key_len, reterr);
        if (r < 0)
                return r;
        if (!(cfg->cert_file || cfg->cert_data) != !(cfg->key_file || cfg->key_data))
                return fail(reterr, u, NULL,
                            "a client certificate needs a client key and the other way round");

        r = get_string(u, "token", &token, reterr);
        if (r >= 0)
                r = get_string(u, "tokenFile", &token_file, reterr);
        if (r >= 0)
                r = get_string(u, "username", &username, reterr);
        if (r >= 0)
                r = get_string(u, "password", &password, reterr);
        if (r < 0)
                return r;
        if ((token || token_file) && (username || password))
                return fail(reterr, u, NULL, "a token and basic auth are both given; only one is allowed");
        cfg->token = token ? ao_xstrdup(token) : NULL;
        cfg->username = username ? ao_xstrdup(username) : NULL;
        cfg->password = password ? ao_xstrdup(password) : NULL;
        if (token_file) {
                /*
                 * client-go prefers the file whenever it can read it and keeps a given token as the
                 * fallback; without one, the file must be readable now.
                 */
                cfg->token_file = resolve_path(u->file, token_file);
                if (!token && read_token(cfg->token_file, &cfg->token, reterr) < 0)
                        return fail_prefix(reterr, u, "tokenFile");
        }
        return parse_exec(u, cfg, reterr);
}

/* ---- contexts and lookups ------------------------------------------------------------------------- */

/* The name of entry @index of @list; "" when it has none (it then matches no reference). */
static int entry_name(const struct kc_file *file, const char *list, size_t index, const cJSON *entry,
                      const char **ret, struct ao_error *reterr)
{
        struct kc_node node = {.file = file, .body = entry};

        set_path(&node, "%s[%zu]", list, index);
        if (!cJSON_IsObject(entry))
                return fail(reterr, &node, NULL, "must be a mapping, not %s",
                            ao_json_type_name(entry, AO_JSON_WORDS_KUBECTL));
        const cJSON *name = member(&node, "name");
        if (name && !cJSON_IsString(name))
                return fail(reterr, &node, "name", "must be a string, not %s",
                            ao_json_type_name(name, AO_JSON_WORDS_KUBECTL));
        *ret = name ? name->valuestring : "";
        return 0;
}

/*
 * The entry named @name in the @list ("clusters", "users", "contexts") of the first file that has one,
 * as the node of its @body mapping ("cluster", ...). kubectl merges $KUBECONFIG the same way: the first
 * file to define a name wins. client-go refuses a name given twice in one file, and so does this.
 * Returns 1 when found, 0 when no file defines @name.
 */
static int lookup(const struct kc_files *files, const char *list, const char *body, const char *name,
                  struct kc_node *ret, struct ao_error *reterr)
{
        char buf[SHOW_MAX];

        for (size_t i = 0; i < files->n; i++) {
                const struct kc_file *file = &files->items[i];
                struct kc_node top = {.file = file, .body = file->root}, entry = {.file = file};
                const cJSON *entries = member(&top, list), *found = NULL;
                size_t index = 0, found_index = 0;
                const char *this_name = NULL;
                int r;

                if (entries && !cJSON_IsArray(entries))
                        return fail(reterr, &top, list, "must be a list, not %s",
                                    ao_json_type_name(entries, AO_JSON_WORDS_KUBECTL));
                for (const cJSON *e = entries ? entries->child : NULL; e; e = e->next, index++) {
                        r = entry_name(file, list, index, e, &this_name, reterr);
                        if (r < 0)
                                return r;
                        if (strcmp(this_name, name) != 0)
                                continue;
                        if (found) {
                                set_path(&entry, "%s[%zu]", list, index);
                                return fail(reterr, &entry, "name", "'%s' is also the name of %s[%zu]",
                                            show(buf, name), list, found_index);
                        }
                        found = e;
                        found_index = index;
                }
                if (found) {
                        entry.body = found;
                        set_path(&entry, "%s[%zu]", list, found_index);
                        r = get_mapping(&entry, body, ret, reterr);
                        return r < 0 ? r : 1;
                }
        }
        return 0;
}

/* The current-context of the first file that sets one; NULL when none does. */
static int current_context(const struct kc_files *files, const char **ret, const struct kc_file **ret_file,
                           struct ao_error *reterr)
{
        for (size_t i = 0; i < files->n; i++) {
                struct kc_node top = {.file = &files->items[i], .body = files->items[i].root};
                const char *name = NULL;
                int r = get_string(&top, "current-context", &name, reterr);
                if (r < 0)
                        return r;
                if (name) {
                        *ret = name;
                        *ret_file = top.file;
                        return 0;
                }
        }
        *ret = NULL;
        return 0;
}

/* The configuration of @context (NULL: the current one) in @files. */
static int resolve(const struct kc_files *files, const char *context, struct ao_kube_config *ret,
                   struct ao_error *reterr)
{
        _cleanup_(ao_kube_config_done) struct ao_kube_config cfg = {0};
        const struct kc_file *from = NULL;
        const char *name = context && context[0] ? context : NULL, *cluster_name = NULL, *user_name = NULL,
                   *ns = NULL;
        struct kc_node ctx, cluster, user;
        char buf[SHOW_MAX];
        int r;

        if (!name) {
                r = current_context(files, &name, &from, reterr);
                if (r < 0)
                        return r;
                if (!name)
                        return ao_error_set(reterr, -ENOENT,
                                            "%s: no current-context is set and no context was given",
                                            files->names);
        }
        r = lookup(files, "contexts", "context", name, &ctx, reterr);
        if (r < 0)
                return r;
        if (r == 0 && from)
                return ao_error_set(reterr, -EINVAL, "%s: current-context: no context named '%s'", from->name,
                                    show(buf, name));
        if (r == 0)
                return ao_error_set(reterr, -EINVAL, "%s: no context named '%s'", files->names,
                                    show(buf, name));

        r = get_string(&ctx, "cluster", &cluster_name, reterr);
        if (r >= 0)
                r = get_string(&ctx, "user", &user_name, reterr);
        if (r >= 0)
                r = get_string(&ctx, "namespace", &ns, reterr);
        if (r < 0)
                return r;
        if (!cluster_name)
                return fail(reterr, &ctx, "cluster", "missing");
        r = lookup(files, "clusters", "cluster", cluster_name, &cluster, reterr);
        if (r == 0)
                return fail(reterr, &ctx, "cluster", "no cluster named '%s'", show(buf, cluster_name));
        if (r > 0)
                r = parse_cluster(&cluster, &cfg, reterr);
        if (r < 0)
                return r;
        /* A context without a user is anonymous; one naming a user that does not exist is a mistake. */
        if (user_name) {
                r = lookup(files, "users", "user", user_name, &user, reterr);
                if (r == 0)
                        return fail(reterr, &ctx, "user", "no user named '%s'", show(buf, user_name));
                if (r > 0)
                        r = parse_user(&user, &cfg, reterr);
                if (r < 0)
                        return r;
        }
        cfg.namespace_ = ns ? ao_xstrdup(ns) : NULL;
        cfg.source = ao_xasprintf("kubeconfig %s, context %s", ctx.file->name, name);
        *ret = cfg;
        cfg = (struct ao_kube_config){0};
        return 0;
}

/* ---- the file set --------------------------------------------------------------------------------- */

static void files_done(struct kc_files *files)
{
        for (size_t i = 0; i < files->n; i++) {
                free(files->items[i].name);
                free(files->items[i].dir);
                cJSON_Delete(files->items[i].root);
        }
        free(files->items);
        free(files->names);
        *files = (struct kc_files){0};
}

static int files_add_text(struct kc_files *files, const char *text, size_t len, const char *filename,
                          struct ao_error *reterr)
{
        const char *name = filename ? filename : "<input>";
        cJSON *root = NULL;
        int r;

        r = ao_input_check_size(len, AO_KUBECONFIG_MAX_INPUT, name, NULL, reterr);
        if (r < 0)
                return r;
        r = ao_yaml_load(text, len, name, &root, reterr);
        if (r < 0)
                return r;
        if (!cJSON_IsNull(root) && !cJSON_IsObject(root)) {
                r = ao_error_set(reterr, -EINVAL, "%s: must be a mapping, not %s", name,
                                 ao_json_type_name(root, AO_JSON_WORDS_KUBECTL));
                cJSON_Delete(root);
                return r;
        }
        files->items = ao_xreallocarray(files->items, files->n + 1, sizeof(*files->items));
        files->items[files->n++] = (struct kc_file){
            .name = ao_xstrdup(name),
            .dir = filename ? file_dir(filename) : NULL,
            .root = root,
        };
        char *names = files->names ? ao_xasprintf("%s, %s", files->names, name) : ao_xstrdup(name);
        free(files->names);
        files->names = names;
        return 0;
}

/* Read and add one file; -ENOENT (message set) when it does not exist. */
static int files_add_path(struct kc_files *files, const char *path, struct ao_error *reterr)
{
        _cleanup_free_ char *text = NULL;
        size_t len;
        int r = read_text(path, AO_KUBECONFIG_MAX_INPUT, true, &text, &len, reterr);

        if (r < 0)
                return r;
        return files_add_text(files, text, len, path, reterr);
}

/* Every existing file of a ':'-separated $KUBECONFIG; kubectl skips missing ones. */
static int files_add_list(struct kc_files *files, const char *list, struct ao_error *reterr)
{
        for (const char *p = list; *p;) {
                size_t n = strcspn(p, ":");
                if (n > 0) {
                        _cleanup_free_ char *path = ao_xstrndup(p, n);
                        int r = files_add_path(files, path, reterr);
                        if (r < 0 && r != -ENOENT)
                                return r;
                }
                p += n + (p[n] == ':');
        }
        return 0;
}

/* ---- resolution ----------------------------------------------------------------------------------- */

static bool is_set(const char *s)
{
        return s && s[0] != '\0';
}

/* -ENOENT (message set) when no kubeconfig exists or none selects a context. */
static int load_kubeconfig(const struct ao_kube_config_options *opts, struct ao_kube_config *cfg,
                           struct ao_error *reterr)
{
        _cleanup_(files_done) struct kc_files files = {0};
        _cleanup_free_ char *home_config = NULL;
        const char *looked_at;
        int r;

        if (is_set(opts->kube_config)) {
                /* Named explicitly: its absence is a mistake, not "no cluster". */
                r = files_add_path(&files, opts->kube_config, reterr);
                if (r == -ENOENT && reterr)
                        reterr->code = -EINVAL;
                if (r < 0)
                        return r == -ENOENT ? -EINVAL : r;
                looked_at = opts->kube_config;
        } else if (is_set(opts->kubeconfig_env)) {
                r = files_add_list(&files, opts->kubeconfig_env, reterr);
                if (r < 0)
                        return r;
                looked_at = opts->kubeconfig_env;
        } else if (is_set(opts->home)) {
                home_config = ao_xasprintf("%s/.kube/config", opts->home);
                r = files_add_path(&files, home_config, reterr);
                if (r < 0 && r != -ENOENT)
                        return r;
                looked_at = home_config;
        } else {
                looked_at = "neither KUBECONFIG nor HOME is set";
        }
        if (files.n == 0)
                return ao_error_set(reterr, -ENOENT, "no kubeconfig (%s)", looked_at);
        return resolve(&files, opts->kube_context, cfg, reterr);
}

static bool in_cluster(const struct ao_kube_config_options *opts, const char *dir)
{
        _cleanup_free_ char *token = ao_xasprintf("%s/token", dir);

        return is_set(opts->service_host) && access(token, F_OK) == 0;
}

/* The service-account token (read now to fail early) and namespace. */
static int load_service_account(const char *dir, struct ao_kube_config *cfg, struct ao_error *reterr)
{
        _cleanup_free_ char *ns_path = ao_xasprintf("%s/namespace", dir), *ns = NULL;
        size_t len;
        int r;

        cfg->token_file = ao_xasprintf("%s/token", dir);
        r = read_token(cfg->token_file, &cfg->token, reterr);
        if (r >= 0) {
                r = read_text(ns_path, NAMESPACE_MAX, false, &ns, &len, reterr);
                if (r == -ENOENT)
                        return 0;
        }
        if (r < 0) {
                (void) ao_error_prefix(reterr, "in-cluster");
                if (reterr)
                        reterr->code = -EINVAL;
                return -EINVAL;
        }
        if (trim(ns)[0] != '\0')
                cfg->namespace_ = TAKE_PTR(ns);
        return 0;
}

/* -ENOENT without a message when not in a cluster. */
static int load_in_cluster(const struct ao_kube_config_options *opts, const char *dir,
                           struct ao_kube_config *cfg, struct ao_error *reterr)
{
        const char *host = opts->service_host, *port = opts->service_port, *reason;
        _cleanup_free_ char *url = NULL, *ca = NULL;
        char buf[SHOW_MAX];
        int r;

        if (!in_cluster(opts, dir))
                return -ENOENT;
        if (!is_set(port))
                return ao_error_set(
                    reterr, -EINVAL,
                    "in-cluster: KUBERNETES_SERVICE_HOST is set, KUBERNETES_SERVICE_PORT is not");
        if (strpbrk(host, "/?#@ "))
                return ao_error_set(reterr, -EINVAL, "in-cluster: KUBERNETES_SERVICE_HOST '%s' is not a host",
                                    show(buf, host));
        /* An IPv6 service address needs brackets in a URL (Go's net.JoinHostPort adds them too). */
        bool v6 = strchr(host, ':') && host[0] != '[';
        url = ao_xasprintf("https://%s%s%s:%s", v6 ? "[" : "", host, v6 ? "]" : "", port);
        cfg->server = check_url(url, false, &reason);
        if (!cfg->server)
                return ao_error_set(reterr, -EINVAL,
                                    "in-cluster: '%s' (KUBERNETES_SERVICE_HOST and _PORT) %s", show(buf, url),
                                    reason);
        r = load_service_account(dir, cfg, reterr);
        if (r < 0)
                return r;
        /* client-go too goes on without the CA file when it is missing. */
        ca = ao_xasprintf("%s/ca.crt", dir);
        if (access(ca, R_OK) == 0)
                cfg->ca_file = TAKE_PTR(ca);
        cfg->source = ao_xstrdup("in-cluster");
        return 0;
}

static int load_server(const struct ao_kube_config_options *opts, const char *dir, struct ao_kube_config *cfg,
                       struct ao_error *reterr)
{
        const char *reason;
        char buf[SHOW_MAX];
        int r;

        cfg->server = check_url(opts->kube_server, false, &reason);
        if (!cfg->server)
                return ao_error_set(reterr, -EINVAL, "KUBE_SERVER: '%s' %s", show(buf, opts->kube_server),
                                    reason);
        if (!in_cluster(opts, dir)) {
                cfg->source = ao_xstrdup("KUBE_SERVER");
                return 0;
        }
        r = load_service_account(dir, cfg, reterr);
        if (r < 0)
                return r;
        cfg->source = ao_xstrdup("KUBE_SERVER, in-cluster token");
        return 0;
}

int ao_kube_config_load(const struct ao_kube_config_options *opts, struct ao_kube_config *ret,
                        struct ao_error *reterr)
{
        _cleanup_(ao_kube_config_done) struct ao_kube_config cfg = {0};
        const char *dir = is_set(opts->service_account_dir) ? opts->service_account_dir : SERVICE_ACCOUNT_DIR;
        struct ao_error kerr = {0};
        char buf[SHOW_MAX];
        int r;

        if (is_set(opts->kube_server)) {
                r = load_server(opts, dir, &cfg, reterr);
        } else {
                r = load_kubeconfig(opts, &cfg, &kerr);
                if (r == -ENOENT) {
                        ao_kube_config_done(&cfg);
                        r = load_in_cluster(opts, dir, &cfg, reterr);
                } else if (r < 0 && reterr) {
                        *reterr = kerr;
                }
                /* Nothing found. Asking for a context, or for a kubeconfig that selects none, is a mistake. */
                if (r == -ENOENT && is_set(opts->kube_context))
                        return ao_error_set(reterr, -EINVAL, "KUBE_CONTEXT '%s' is set, but %s",
                                            show(buf, opts->kube_context), kerr.msg);
                if (r == -ENOENT && is_set(opts->kube_config))
                        return ao_error_set(reterr, -EINVAL, "%s", kerr.msg);
                if (r == -ENOENT)
                        return ao_error_set(reterr, -ENOENT, "%s, and not in a cluster (%s)", kerr.msg,
                                            is_set(opts->service_host)
                                                ? "no service-account token"
                                                : "KUBERNETES_SERVICE_HOST is not set");
        }
        if (r < 0)
                return r;
        *ret = cfg;
        cfg = (struct ao_kube_config){0};
        return 0;
}

int ao_kubeconfig_parse(const char *text, size_t len, const char *filename, const char *context,
                        struct ao_kube_config *ret, struct ao_error *reterr)
{
        _cleanup_(files_done) struct kc_files files = {0};
        int r = files_add_text(&files, text, len, filename, reterr);

        if (r < 0)
                return r;
        return resolve(&files, context, ret, reterr);
}

void ao_kube_config_done(struct ao_kube_config *cfg)
{
        if (!cfg)
                return;
        free(cfg->server);
        free(cfg->tls_server_name);
        free(cfg->ca_file);
        free(cfg->ca_data);
        free(cfg->cert_file);
        free(cfg->cert_data);
        free(cfg->key_file);
        free(cfg->key_data);
        free(cfg->token);
        free(cfg->token_file);
        free(cfg->username);
        free(cfg->password);
        free(cfg->proxy_url);
        exec_free(cfg->exec);
        free(cfg->namespace_);
        free(cfg->source);
        *cfg = (struct ao_kube_config){0};
}
