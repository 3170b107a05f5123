/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for src/kube/kubeconfig.c and exec-credential.c: kubeconfig fields (contexts, inline and file
 * credentials, relative paths, token files, basic auth, TLS options, proxy, exec plugins), every class
 * of error with its exact message, the resolution order (KUBE_SERVER, KUBE_CONFIG, $KUBECONFIG merged,
 * ~/.kube/config, in cluster), ExecCredential documents, and running plugins written to a temporary
 * directory: one that answers, one that fails, one that hangs past its timeout and must be killed and
 * reaped.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../tap.h"
#include "ao/kubeconfig.h"

#define KC "/etc/kc/config" /* the file name of in-memory documents; relative paths resolve to /etc/kc */

#define V1BETA1 "client.authentication.k8s.io/v1beta1"
#define V1      "client.authentication.k8s.io/v1"

#define CA_PEM   "-----BEGIN CERTIFICATE-----\nMIIBca\n-----END CERTIFICATE-----\n"
#define CERT_PEM "-----BEGIN CERTIFICATE-----\nMIIBcert\n-----END CERTIFICATE-----\n"
#define KEY_PEM  "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEE\n-----END EC PRIVATE KEY-----\n"

static char *tmp; /* the fixture directory */

/* ---- helpers ---------------------------------------------------------------------------------------- */

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...)
{
        va_list ap;
        char *s;

        va_start(ap, f);
        if (vasprintf(&s, f, ap) < 0)
                tap_bail("out of memory");
        va_end(ap);
        return s;
}

/* A path under the fixture directory (caller frees). */
static char *at(const char *rel)
{
        return fmt("%s/%s", tmp, rel);
}

static void make_dir(const char *rel)
{
        char *p = at(rel);
        if (mkdir(p, 0755) < 0 && errno != EEXIST)
                tap_bail("mkdir");
        free(p);
}

static void write_file(const char *rel, const char *content, mode_t mode)
{
        char *p = at(rel);
        FILE *f = fopen(p, "w");
        if (!f || fputs(content, f) < 0 || fclose(f) != 0 || chmod(p, mode) < 0)
                tap_bail("cannot write a fixture");
        free(p);
}

static void remove_tree(const char *path)
{
        char *cmd = fmt("rm -rf '%s'", path);
        if (system(cmd) != 0)
                tap_diag("could not remove %s", path);
        free(cmd);
}

static char *base64(const char *s)
{
        static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        size_t len = strlen(s), n = 0;
        char *out = malloc(len / 3 * 4 + 5);
        const unsigned char *p = (const unsigned char *) s;

        for (size_t i = 0; i < len; i += 3) {
                unsigned v = (unsigned) p[i] << 16 | (i + 1 < len ? (unsigned) p[i + 1] << 8 : 0) |
                             (i + 2 < len ? p[i + 2] : 0);
                out[n++] = digits[v >> 18 & 63];
                out[n++] = digits[v >> 12 & 63];
                out[n++] = i + 1 < len ? digits[v >> 6 & 63] : '=';
                out[n++] = i + 2 < len ? digits[v & 63] : '=';
        }
        out[n] = '\0';
        return out;
}

/* One context "ctx" using cluster "c" and user "u", with the given flow-mapping contents. */
static char *doc(const char *cluster, const char *user)
{
        return fmt("apiVersion: v1\nkind: Config\ncurrent-context: ctx\n"
                   "contexts:\n- name: ctx\n  context: {cluster: c, user: u}\n"
                   "clusters:\n- name: c\n  cluster: {%s}\n"
                   "users:\n- name: u\n  user: {%s}\n",
                   cluster, user);
}

static int parse(const char *text, const char *file, const char *context, struct ao_kube_config *cfg,
                 struct ao_error *err)
{
        *cfg = (struct ao_kube_config){0};
        *err = (struct ao_error){0};
        int r = ao_kubeconfig_parse(text, strlen(text), file, context, cfg, err);
        if (r < 0)
                tap_diag("parse: %d %s", r, err->msg);
        return r;
}

static char sentinel[] = "untouched";

/* A document that must fail with @code and exactly @msg, leaving the result alone. */
static void check_fail(const char *name, const char *text, const char *context, int code, const char *msg)
{
        struct ao_kube_config cfg = {.server = sentinel};
        struct ao_error err = {0};
        int r = ao_kubeconfig_parse(text, strlen(text), KC, context, &cfg, &err);

        tap_is_int(r, code, "%s: code", name);
        tap_is_int(err.code, code, "%s: error code", name);
        if (msg)
                tap_is_str(err.msg, msg, "%s: message", name);
        else
                tap_ok(err.msg[0] != '\0', "%s: message: %s", name, err.msg);
        tap_ok(cfg.server == sentinel && !cfg.token, "%s: result untouched", name);
}

static void check_fail_doc(const char *name, const char *cluster, const char *user, const char *msg)
{
        char *text = doc(cluster, user);
        check_fail(name, text, NULL, -EINVAL, msg);
        free(text);
}

/* ---- kubeconfig fields -------------------------------------------------------------------------------- */

static void test_kind_style(void)
{
        char *ca = base64(CA_PEM), *cert = base64(CERT_PEM), *key = base64(KEY_PEM);
        char *text = fmt("apiVersion: v1\n"
                         "clusters:\n"
                         "- cluster:\n"
                         "    certificate-authority-data: %s\n"
                         "    server: https://127.0.0.1:36443\n"
                         "  name: kind-kind\n"
                         "contexts:\n"
                         "- context:\n"
                         "    cluster: kind-kind\n"
                         "    user: kind-kind\n"
                         "  name: kind-kind\n"
                         "current-context: kind-kind\n"
                         "kind: Config\n"
                         "preferences: {}\n"
                         "users:\n"
                         "- name: kind-kind\n"
                         "  user:\n"
                         "    client-certificate-data: %s\n"
                         "    client-key-data: %s\n",
                         ca, cert, key);
        struct ao_kube_config cfg;
        struct ao_error err;

        tap_is_int(parse(text, KC, NULL, &cfg, &err), 0, "kind: parses");
        tap_is_str(cfg.server, "https://127.0.0.1:36443", "kind: server");
        tap_is_str(cfg.ca_data, CA_PEM, "kind: CA decoded");
        tap_is_int(cfg.ca_len, strlen(CA_PEM), "kind: CA length");
        tap_is_str(cfg.cert_data, CERT_PEM, "kind: client certificate decoded");
        tap_is_int(cfg.cert_len, strlen(CERT_PEM), "kind: client certificate length");
        tap_is_str(cfg.key_data, KEY_PEM, "kind: client key decoded");
        tap_is_int(cfg.key_len, strlen(KEY_PEM), "kind: client key length");
        tap_ok(!cfg.ca_file && !cfg.cert_file && !cfg.key_file && !cfg.token && !cfg.exec && !cfg.namespace_,
               "kind: nothing else set");
        tap_ok(!cfg.insecure_skip_tls_verify, "kind: TLS verified");
        tap_is_str(cfg.source, "kubeconfig " KC ", context kind-kind", "kind: source");
        ao_kube_config_done(&cfg);
        tap_ok(cfg.server == NULL && cfg.source == NULL, "done() clears the struct");
        ao_kube_config_done(&cfg);
        ao_kube_config_done(NULL);
        free(text);
        free(ca);
        free(cert);
        free(key);
}

static void test_contexts(void)
{
        const char *text = "current-context: dev\n"
                           "contexts:\n"
                           "- name: dev\n  context: {cluster: dev, user: dev-user}\n"
                           "- name: prod\n  context: {cluster: prod, user: admin, namespace: d8-system}\n"
                           "- name: anon\n  context: {cluster: prod}\n"
                           "clusters:\n"
                           "- name: dev\n  cluster: {server: 'https://dev:6443'}\n"
                           "- name: prod\n  cluster: {server: 'https://prod.example.com/', extra-field: 1}\n"
                           "users:\n"
                           "- name: dev-user\n  user: {token: dev-token}\n"
                           "- name: admin\n  user: {token: prod-token, unknown: [1, 2]}\n";
        struct ao_kube_config cfg;
        struct ao_error err;

        tap_is_int(parse(text, KC, NULL, &cfg, &err), 0, "contexts: current-context");
        tap_is_str(cfg.server, "https://dev:6443", "contexts: current server");
        tap_is_str(cfg.token, "dev-token", "contexts: current user's token");
        tap_ok(cfg.namespace_ == NULL, "contexts: no namespace");
        ao_kube_config_done(&cfg);

        tap_is_int(parse(text, KC, "prod", &cfg, &err), 0, "contexts: explicit context");
        tap_is_str(cfg.server, "https://prod.example.com", "contexts: trailing slash dropped");
        tap_is_str(cfg.token, "prod-token", "contexts: explicit context's user");
        tap_is_str(cfg.namespace_, "d8-system", "contexts: namespace from the context");
        tap_is_str(cfg.source, "kubeconfig " KC ", context prod", "contexts: source names the context");
        ao_kube_config_done(&cfg);

        tap_is_int(parse(text, KC, "", &cfg, &err), 0, "contexts: \"\" means current-context");
        tap_is_str(cfg.server, "https://dev:6443", "contexts: \"\" gives the current server");
        ao_kube_config_done(&cfg);

        tap_is_int(parse(text, KC, "anon", &cfg, &err), 0, "contexts: a context without a user");
        tap_ok(!cfg.token && !cfg.username && !cfg.exec && !cfg.cert_data, "contexts: anonymous");
        ao_kube_config_done(&cfg);

        tap_is_int(parse(text, NULL, "anon", &cfg, &err), 0, "contexts: no file name");
        tap_is_str(cfg.source, "kubeconfig <input>, context anon", "contexts: source without a file name");
        ao_kube_config_done(&cfg);
}

static void test_files(void)
{
        make_dir("kc");
        make_dir("kc/certs");
        write_file("kc/ca.crt", CA_PEM, 0644);
        write_file("kc/certs/client.crt", CERT_PEM, 0644);
        write_file("kc/certs/client.key", KEY_PEM, 0600);
        write_file("kc/token", "  file-token\n\n", 0600);
        write_file("kc/empty-token", "\n", 0600);

        char *file = at("kc/config"), *abs_key = at("kc/certs/client.key");
        char *text =
            fmt("current-context: ctx\n"
                "contexts:\n- name: ctx\n  context: {cluster: c, user: u}\n"
                "- name: tf\n  context: {cluster: c, user: tf}\n"
                "- name: both\n  context: {cluster: c, user: both}\n"
                "clusters:\n- name: c\n  cluster: {server: 'https://k', certificate-authority: ca.crt}\n"
                "users:\n"
                "- name: u\n  user: {client-certificate: certs/client.crt, client-key: '%s'}\n"
                "- name: tf\n  user: {tokenFile: token}\n"
                "- name: both\n  user: {token: inline, tokenFile: does-not-exist}\n",
                abs_key);
        struct ao_kube_config cfg;
        struct ao_error err;
        char *want;

        tap_is_int(parse(text, file, NULL, &cfg, &err), 0, "files: parses");
        want = at("kc/ca.crt");
        tap_is_str(cfg.ca_file, want, "files: CA path relative to the kubeconfig");
        free(want);
        want = at("kc/certs/client.crt");
        tap_is_str(cfg.cert_file, want, "files: certificate path relative to the kubeconfig");
        free(want);
        tap_is_str(cfg.key_file, abs_key, "files: absolute key path kept");
        tap_ok(!cfg.ca_data && !cfg.cert_data && !cfg.key_data, "files: no inline data");
        ao_kube_config_done(&cfg);

        tap_is_int(parse(text, file, "tf", &cfg, &err), 0, "tokenFile: parses");
        want = at("kc/token");
        tap_is_str(cfg.token_file, want, "tokenFile: relative to the kubeconfig");
        free(want);
        tap_is_str(cfg.token, "file-token", "tokenFile: read now, white space trimmed");
        ao_kube_config_done(&cfg);

        tap_is_int(parse(text, file, "both", &cfg, &err), 0, "token and tokenFile: the file is not read");
        tap_is_str(cfg.token, "inline", "token and tokenFile: the token");
        tap_ok(cfg.token_file && strstr(cfg.token_file, "/kc/does-not-exist"),
               "token and tokenFile: the file");
        ao_kube_config_done(&cfg);

        /* A relative path in a document without a file name stays relative. */
        tap_is_int(parse("current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                         "clusters: [{name: c, cluster: {server: 'http://k'}}]\n"
                         "users: [{name: u, user: {tokenFile: '/dev/null', token: t}}]\n",
                         NULL, NULL, &cfg, &err),
                   0, "tokenFile: absolute without a file name");
        tap_is_str(cfg.token_file, "/dev/null", "tokenFile: absolute kept");
        ao_kube_config_done(&cfg);

        /* Errors about files name the field and the path. */
        struct ao_kube_config bad = {.server = sentinel};
        char *missing =
            fmt("current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                "clusters: [{name: c, cluster: {server: 'http://k', certificate-authority: nope.crt}}]\n");
        tap_is_int(ao_kubeconfig_parse(missing, strlen(missing), file, NULL, &bad, &err), -EINVAL,
                   "files: missing CA file");
        want = fmt("%s: clusters[0].cluster.certificate-authority: cannot read '%s/kc/nope.crt': "
                   "No such file or directory",
                   file, tmp);
        tap_is_str(err.msg, want, "files: missing CA file message");
        free(want);
        free(missing);

        char *empty = fmt("current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                          "clusters: [{name: c, cluster: {server: 'http://k'}}]\n"
                          "users: [{name: u, user: {tokenFile: empty-token}}]\n");
        tap_is_int(ao_kubeconfig_parse(empty, strlen(empty), file, NULL, &bad, &err), -EINVAL,
                   "tokenFile: empty");
        want = fmt("%s: users[0].user.tokenFile: '%s/kc/empty-token' is empty", file, tmp);
        tap_is_str(err.msg, want, "tokenFile: empty file message");
        free(want);
        free(empty);

        char *gone = fmt("current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                         "clusters: [{name: c, cluster: {server: 'http://k'}}]\n"
                         "users: [{name: u, user: {tokenFile: gone}}]\n");
        tap_is_int(ao_kubeconfig_parse(gone, strlen(gone), file, NULL, &bad, &err), -EINVAL,
                   "tokenFile: missing file is -EINVAL, not -ENOENT");
        want = fmt("%s: users[0].user.tokenFile: cannot read '%s/kc/gone': No such file or directory", file,
                   tmp);
        tap_is_str(err.msg, want, "tokenFile: missing file message");
        free(want);
        free(gone);

        char *device = fmt("current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                           "clusters: [{name: c, cluster: {server: 'http://k'}}]\n"
                           "users: [{name: u, user: {tokenFile: /dev/zero}}]\n");
        tap_is_int(ao_kubeconfig_parse(device, strlen(device), file, NULL, &bad, &err), -EINVAL,
                   "tokenFile: a device is refused");
        want = fmt("%s: users[0].user.tokenFile: cannot read '/dev/zero': not a regular file", file);
        tap_is_str(err.msg, want, "tokenFile: device message");
        free(want);
        free(device);
        tap_ok(bad.server == sentinel, "files: failures leave the result alone");

        free(text);
        free(file);
        free(abs_key);
}

static void test_auth_and_tls(void)
{
        struct ao_kube_config cfg;
        struct ao_error err;
        char *text;

        text = doc(
            "server: 'https://k:443', insecure-skip-tls-verify: true, tls-server-name: kubernetes.default, "
            "proxy-url: 'http://user:pw@proxy:3128'",
            "username: admin, password: 's3cr:et'");
        tap_is_int(parse(text, KC, NULL, &cfg, &err), 0, "basic auth, TLS options: parses");
        tap_is_str(cfg.username, "admin", "basic auth: username");
        tap_is_str(cfg.password, "s3cr:et", "basic auth: password");
        tap_ok(cfg.insecure_skip_tls_verify, "insecure-skip-tls-verify");
        tap_is_str(cfg.tls_server_name, "kubernetes.default", "tls-server-name");
        tap_is_str(cfg.proxy_url, "http://user:pw@proxy:3128", "proxy-url");
        tap_ok(!cfg.token, "basic auth: no token");
        ao_kube_config_done(&cfg);
        free(text);

        text = doc("server: 'HTTPS://[fd00::1]:6443/k8s/clusters/c-abc//', proxy-url: 'socks5://proxy:1080'",
                   "token: abc.def");
        tap_is_int(parse(text, KC, NULL, &cfg, &err), 0, "IPv6 server with a path prefix");
        tap_is_str(cfg.server, "https://[fd00::1]:6443/k8s/clusters/c-abc",
                   "server: scheme lower-cased, slashes dropped");
        tap_is_str(cfg.proxy_url, "socks5://proxy:1080", "proxy-url: socks5");
        ao_kube_config_done(&cfg);
        free(text);

        text = doc("server: 'http://localhost'", "token: t, insecure-skip-tls-verify: 1");
        tap_is_int(parse(text, KC, NULL, &cfg, &err), 0, "http server without a port");
        tap_is_str(cfg.server, "http://localhost", "server: kept");
        ao_kube_config_done(&cfg);
        free(text);
}

static void test_exec_fields(void)
{
        struct ao_kube_config cfg;
        struct ao_error err;
        const char *text =
            "current-context: eks\n"
            "contexts:\n"
            "- name: eks\n  context: {cluster: eks, user: eks}\n"
            "- name: gke\n  context: {cluster: eks, user: gke}\n"
            "- name: local\n  context: {cluster: eks, user: local}\n"
            "clusters:\n- name: eks\n  cluster: {server: 'https://ABC.gr7.eu-west-1.eks.amazonaws.com'}\n"
            "users:\n"
            "- name: eks\n"
            "  user:\n"
            "    exec:\n"
            "      apiVersion: client.authentication.k8s.io/v1beta1\n"
            "      command: aws\n"
            "      args: [--region, eu-west-1, eks, get-token, --cluster-name, prod]\n"
            "      env:\n"
            "      - name: AWS_PROFILE\n        value: prod\n"
            "      - {name: EMPTY}\n"
            "      interactiveMode: IfAvailable\n"
            "      provideClusterInfo: false\n"
            "- name: gke\n"
            "  user:\n"
            "    exec: {apiVersion: client.authentication.k8s.io/v1, command: gke-gcloud-auth-plugin, "
            "interactiveMode: Never, installHint: 'install it'}\n"
            "- name: local\n"
            "  user:\n"
            "    exec: {apiVersion: client.authentication.k8s.io/v1, command: ./bin/plugin, args: null}\n";

        tap_is_int(parse(text, KC, NULL, &cfg, &err), 0, "exec v1beta1: parses");
        tap_ok(cfg.exec != NULL, "exec v1beta1: present");
        if (cfg.exec) {
                tap_is_str(cfg.exec->command, "aws", "exec: command from $PATH kept");
                tap_is_str(cfg.exec->api_version, V1BETA1, "exec: apiVersion");
                const char *want_args[] = {"--region",  "eu-west-1",      "eks",
                                           "get-token", "--cluster-name", "prod"};
                size_t n = 0;
                while (cfg.exec->args[n])
                        n++;
                tap_is_int(n, 6, "exec: six args");
                for (size_t i = 0; i < n && i < 6; i++)
                        tap_is_str(cfg.exec->args[i], want_args[i], "exec: arg %zu", i);
                tap_is_str(cfg.exec->env[0], "AWS_PROFILE=prod", "exec: env entry");
                tap_is_str(cfg.exec->env[1], "EMPTY=", "exec: env entry without a value");
                tap_ok(cfg.exec->env[2] == NULL, "exec: env is NULL-terminated");
        }
        ao_kube_config_done(&cfg);

        tap_is_int(parse(text, KC, "gke", &cfg, &err), 0, "exec v1: parses");
        if (cfg.exec) {
                tap_is_str(cfg.exec->api_version, V1, "exec v1: apiVersion");
                tap_ok(cfg.exec->args && !cfg.exec->args[0], "exec v1: empty args");
                tap_ok(cfg.exec->env && !cfg.exec->env[0], "exec v1: empty env");
        }
        ao_kube_config_done(&cfg);

        tap_is_int(parse(text, KC, "local", &cfg, &err), 0, "exec with a path: parses");
        if (cfg.exec)
                tap_is_str(cfg.exec->command, "/etc/kc/./bin/plugin",
                           "exec: a command with '/' is relative to the file");
        ao_kube_config_done(&cfg);

        check_fail_doc(
            "exec: v1alpha1", "server: 'https://k'",
            "exec: {apiVersion: client.authentication.k8s.io/v1alpha1, command: x}",
            KC ": users[0].user.exec.apiVersion: 'client.authentication.k8s.io/v1alpha1' is no longer "
               "supported (removed in Kubernetes 1.24)");
        check_fail_doc("exec: unknown apiVersion", "server: 'https://k'",
                       "exec: {apiVersion: v2, command: x}",
                       KC ": users[0].user.exec.apiVersion: 'v2' is not client.authentication.k8s.io/v1 or "
                          "client.authentication.k8s.io/v1beta1");
        check_fail_doc("exec: no command", "server: 'https://k'", "exec: {apiVersion: " V1 "}",
                       KC ": users[0].user.exec.command: missing");
        check_fail_doc("exec: no apiVersion", "server: 'https://k'", "exec: {command: x}",
                       KC ": users[0].user.exec.apiVersion: missing");
        check_fail_doc(
            "exec: interactive Always", "server: 'https://k'",
            "exec: {apiVersion: " V1 ", command: x, interactiveMode: Always}",
            KC ": users[0].user.exec.interactiveMode: 'Always' needs a terminal, which the operator has not");
        check_fail_doc("exec: args not strings", "server: 'https://k'",
                       "exec: {apiVersion: " V1 ", command: x, args: [a, {b: c}]}",
                       KC ": users[0].user.exec.args: item 1 must be a string, not a mapping");
        check_fail_doc("exec: env as a mapping", "server: 'https://k'",
                       "exec: {apiVersion: " V1 ", command: x, env: {A: b}}",
                       KC ": users[0].user.exec.env: must be a list, not a mapping");
        check_fail_doc("exec: env without a name", "server: 'https://k'",
                       "exec: {apiVersion: " V1 ", command: x, env: [{name: A, value: b}, {value: c}]}",
                       KC ": users[0].user.exec.env[1].name: missing");
        check_fail_doc("exec: env value not a string", "server: 'https://k'",
                       "exec: {apiVersion: " V1 ", command: x, env: [{name: A, value: 12}]}",
                       KC ": users[0].user.exec.env[0].value: must be a string, not a number");
        check_fail_doc("exec: not a mapping", "server: 'https://k'", "exec: aws",
                       KC ": users[0].user.exec: must be a mapping, not a string");
}

static void test_errors(void)
{
        const char *refs = "current-context: a\n"
                           "contexts:\n"
                           "- name: a\n  context: {cluster: c, user: u}\n"
                           "- name: no-cluster\n  context: {cluster: nope, user: u}\n"
                           "- name: no-user\n  context: {cluster: c, user: ghost}\n"
                           "- name: unset-cluster\n  context: {user: u}\n"
                           "clusters: [{name: c, cluster: {server: 'https://k'}}]\n"
                           "users: [{name: u, user: {token: t}}]\n";

        check_fail("missing explicit context", refs, "prod", -EINVAL, KC ": no context named 'prod'");
        check_fail("missing cluster", refs, "no-cluster", -EINVAL,
                   KC ": contexts[1].context.cluster: no cluster named 'nope'");
        check_fail("missing user", refs, "no-user", -EINVAL,
                   KC ": contexts[2].context.user: no user named 'ghost'");
        check_fail("context without a cluster", refs, "unset-cluster", -EINVAL,
                   KC ": contexts[3].context.cluster: missing");
        check_fail("current-context names nothing", "current-context: gone\ncontexts: []\n", NULL, -EINVAL,
                   KC ": current-context: no context named 'gone'");
        check_fail("no current-context", "clusters: []\n", NULL, -ENOENT,
                   KC ": no current-context is set and no context was given");
        check_fail("empty document", "", NULL, -ENOENT,
                   KC ": no current-context is set and no context was given");
        check_fail("control characters shown escaped", refs, "a\tb", -EINVAL,
                   KC ": no context named 'a\\x09b'");

        char *ca = base64(CA_PEM);
        char *text = fmt("current-context: a\ncontexts: [{name: a, context: {cluster: c, user: second}}]\n"
                         "clusters: [{name: c, cluster: {server: 'https://k'}}]\n"
                         "users:\n"
                         "- name: first\n  user: {client-key-data: '!!!'}\n"
                         "- name: second\n  user: {client-certificate-data: %s, client-key-data: 'AAA*'}\n",
                         ca);
        check_fail("bad base64", text, NULL, -EINVAL, KC ": users[1].user.client-key-data: not valid base64");
        free(text);

        /* The decoder: padding, wrapped lines, and data after the padding. */
        struct ao_kube_config cfg;
        struct ao_error err;
        text = doc("server: 'https://k', certificate-authority-data: \"TWFu\\nTWE=\\r\\n  TQ==\"", "");
        check_fail("data after padding", text, NULL, -EINVAL,
                   KC ": clusters[0].cluster.certificate-authority-data: not valid base64");
        free(text);
        text = doc("server: 'https://k', certificate-authority-data: \"TWFu\\nTWFu\\r\\n  TQ==\"", "");
        tap_is_int(parse(text, KC, NULL, &cfg, &err), 0, "base64: white space skipped");
        tap_is_str(cfg.ca_data, "ManManM", "base64: decoded across lines");
        tap_is_int(cfg.ca_len, 7, "base64: length");
        ao_kube_config_done(&cfg);
        free(text);
        text = doc("server: 'https://k', certificate-authority-data: 'TWE'", "");
        check_fail("base64 without padding", text, NULL, -EINVAL,
                   KC ": clusters[0].cluster.certificate-authority-data: not valid base64");
        free(text);
        text = doc("server: 'https://k', certificate-authority-data: 'T===' ", "");
        check_fail("base64 with three pads", text, NULL, -EINVAL,
                   KC ": clusters[0].cluster.certificate-authority-data: not valid base64");
        free(text);

        check_fail_doc("server missing", "certificate-authority-data: ''", "",
                       KC ": clusters[0].cluster.server: missing");
        check_fail_doc("server without a scheme", "server: 'k8s.local:6443'", "",
                       KC
                       ": clusters[0].cluster.server: 'k8s.local:6443' must start with http:// or https://");
        check_fail_doc("server ftp", "server: 'ftp://k'", "",
                       KC ": clusters[0].cluster.server: 'ftp://k' must start with http:// or https://");
        check_fail_doc("server without a host", "server: 'https:///api'", "",
                       KC ": clusters[0].cluster.server: 'https:///api' has no host");
        check_fail_doc("server with a bad port", "server: 'https://k:70000'", "",
                       KC ": clusters[0].cluster.server: 'https://k:70000' has an invalid port");
        check_fail_doc("server with user info", "server: 'https://me@k'", "",
                       KC ": clusters[0].cluster.server: 'https://me@k' must not contain user info");
        check_fail_doc("server with a query", "server: 'https://k/?x=1'", "",
                       KC ": clusters[0].cluster.server: 'https://k/?x=1' must not have a query or fragment");
        check_fail_doc("server with a space", "server: 'https://k /'", "",
                       KC
                       ": clusters[0].cluster.server: 'https://k /' must not contain white space or control "
                       "characters");
        check_fail_doc("server not a string", "server: 6443", "",
                       KC ": clusters[0].cluster.server: must be a string, not a number");
        check_fail_doc(
            "proxy scheme", "server: 'https://k', proxy-url: 'ftp://p'", "",
            KC ": clusters[0].cluster.proxy-url: 'ftp://p' must start with http://, https:// or socks5://");
        check_fail_doc("insecure with a CA",
                       "server: 'https://k', insecure-skip-tls-verify: true, "
                       "certificate-authority-data: TWFu",
                       "",
                       KC ": clusters[0].cluster.insecure-skip-tls-verify: cannot be combined with a "
                          "certificate authority");
        check_fail_doc("insecure not a boolean", "server: 'https://k', insecure-skip-tls-verify: 'sure'", "",
                       KC
                       ": clusters[0].cluster.insecure-skip-tls-verify: must be true or false, not a string");
        check_fail_doc(
            "CA twice",
            "server: 'https://k', certificate-authority: /etc/ca, certificate-authority-data: TWFu", "",
            KC ": clusters[0].cluster: certificate-authority and certificate-authority-data are both given");
        check_fail_doc("certificate twice", "server: 'https://k'",
                       "client-certificate: /x, client-certificate-data: TWFu, client-key-data: TWFu",
                       KC ": users[0].user: client-certificate and client-certificate-data are both given");
        check_fail_doc("certificate without a key", "server: 'https://k'", "client-certificate-data: TWFu",
                       KC ": users[0].user: a client certificate needs a client key and the other way round");
        check_fail_doc("key without a certificate", "server: 'https://k'", "client-key-data: TWFu",
                       KC ": users[0].user: a client certificate needs a client key and the other way round");
        check_fail_doc("token and basic auth", "server: 'https://k'", "token: t, username: u",
                       KC ": users[0].user: a token and basic auth are both given; only one is allowed");
        check_fail_doc(
            "auth-provider", "server: 'https://k'", "auth-provider: {name: oidc, config: {}}",
            KC ": users[0].user.auth-provider: 'oidc' is not supported; use an exec credential plugin");
        check_fail_doc("impersonation", "server: 'https://k'", "token: t, as: admin",
                       KC ": users[0].user.as: impersonation is not supported");
        check_fail_doc("token not a string", "server: 'https://k'", "token: [a]",
                       KC ": users[0].user.token: must be a string, not a list");

        text = doc("server: 'https://k'", "token: t, as: '', as-groups: [], auth-provider: null");
        tap_is_int(parse(text, KC, NULL, &cfg, &err), 0,
                   "empty impersonation and null auth-provider are fine");
        ao_kube_config_done(&cfg);
        free(text);

        check_fail("not a mapping", "- a\n- b\n", NULL, -EINVAL, KC ": must be a mapping, not a list");
        check_fail("clusters not a list",
                   "current-context: a\ncontexts: [{name: a, context: {cluster: c}}]\nclusters: {}\n", NULL,
                   -EINVAL, KC ": clusters: must be a list, not a mapping");
        check_fail("entry not a mapping", "current-context: a\ncontexts: [x]\n", NULL, -EINVAL,
                   KC ": contexts[0]: must be a mapping, not a string");
        check_fail("name not a string", "current-context: a\ncontexts: [{name: [a]}]\n", NULL, -EINVAL,
                   KC ": contexts[0].name: must be a string, not a list");
        check_fail("context body not a mapping", "current-context: a\ncontexts: [{name: a, context: c}]\n",
                   NULL, -EINVAL, KC ": contexts[0].context: must be a mapping, not a string");
        check_fail("duplicate name", "current-context: a\ncontexts: [{name: a}, {name: b}, {name: a}]\n",
                   NULL, -EINVAL, KC ": contexts[2].name: 'a' is also the name of contexts[0]");
        check_fail("current-context not a string", "current-context: [a]\n", NULL, -EINVAL,
                   KC ": current-context: must be a string, not a list");
        check_fail("YAML syntax", "current-context: [a\n", NULL, -EINVAL, NULL);
        free(ca);
}

/* ---- resolution ---------------------------------------------------------------------------------------- */

static void test_merge(void)
{
        make_dir("a");
        make_dir("b");
        make_dir("c");
        write_file("a/config",
                   "current-context: a\n"
                   "contexts:\n- name: a\n  context: {cluster: shared, user: ua, namespace: ns-a}\n"
                   "clusters:\n- name: shared\n  cluster: {server: 'https://a.example:6443'}\n"
                   "users:\n- name: ua\n  user: {token: token-a}\n",
                   0600);
        write_file(
            "b/config",
            "current-context: b\n"
            "contexts:\n"
            "- name: b\n  context: {cluster: cb, user: ub}\n"
            "- name: a\n  context: {cluster: cb, user: ub}\n"
            "- name: mixed\n  context: {cluster: shared, user: ub}\n"
            "clusters:\n"
            "- name: shared\n  cluster: {server: 'https://ignored.example'}\n"
            "- name: cb\n  cluster: {server: 'https://b.example:6443', certificate-authority: ca.crt}\n"
            "users:\n"
            "- name: ub\n  user: {tokenFile: token}\n"
            "- name: ua\n  user: {token: ignored}\n",
            0600);
        write_file("b/ca.crt", CA_PEM, 0644);
        write_file("b/token", "token-b\n", 0600);
        write_file("c/config",
                   "current-context: c\ncontexts: [{name: c, context: {cluster: c}}]\n"
                   "clusters: [{name: c, cluster: {server: 'https://c.example'}}]\n",
                   0600);

        char *a = at("a/config"), *b = at("b/config"), *c = at("c/config"), *want;
        char *list = fmt("%s::%s/missing:%s", a, tmp, b);
        struct ao_kube_config_options opts = {.kubeconfig_env = list, .home = "/nonexistent"};
        struct ao_kube_config cfg = {0};
        struct ao_error err = {0};

        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), 0, "merge: loads");
        tap_is_str(cfg.server, "https://a.example:6443",
                   "merge: the first file's current-context and cluster");
        tap_is_str(cfg.token, "token-a", "merge: the first file's user");
        tap_is_str(cfg.namespace_, "ns-a", "merge: namespace");
        want = fmt("kubeconfig %s, context a", a);
        tap_is_str(cfg.source, want, "merge: source names the file of the context");
        free(want);
        ao_kube_config_done(&cfg);

        opts.kube_context = "b";
        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), 0, "merge: KUBE_CONTEXT from the second file");
        tap_is_str(cfg.server, "https://b.example:6443", "merge: second file's cluster");
        want = at("b/ca.crt");
        tap_is_str(cfg.ca_file, want, "merge: paths relative to the file that names them");
        free(want);
        tap_is_str(cfg.token, "token-b", "merge: token file of the second file");
        ao_kube_config_done(&cfg);

        opts.kube_context = "mixed";
        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), 0, "merge: context mixing both files");
        tap_is_str(cfg.server, "https://a.example:6443", "merge: first definition of a cluster wins");
        tap_is_str(cfg.token, "token-b", "merge: user from the second file");
        ao_kube_config_done(&cfg);

        opts.kube_context = "nope";
        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), -EINVAL, "merge: unknown KUBE_CONTEXT");
        want = fmt("%s, %s: no context named 'nope'", a, b);
        tap_is_str(err.msg, want, "merge: the message names every file");
        free(want);

        opts.kube_context = NULL;
        opts.kube_config = c;
        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), 0, "KUBE_CONFIG: loads");
        tap_is_str(cfg.server, "https://c.example", "KUBE_CONFIG: wins over $KUBECONFIG");
        tap_ok(!cfg.token, "KUBE_CONFIG: anonymous context");
        ao_kube_config_done(&cfg);

        char *gone = at("gone/config");
        opts.kube_config = gone;
        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), -EINVAL,
                   "KUBE_CONFIG: a missing file is an error");
        want = fmt("cannot read '%s': No such file or directory", gone);
        tap_is_str(err.msg, want, "KUBE_CONFIG: missing file message");
        free(want);
        free(gone);

        /* ~/.kube/config when nothing else is set. */
        make_dir("home");
        make_dir("home/.kube");
        write_file("home/.kube/config",
                   "current-context: h\ncontexts: [{name: h, context: {cluster: h}}]\n"
                   "clusters: [{name: h, cluster: {server: 'https://home.example'}}]\n",
                   0600);
        char *home = at("home");
        struct ao_kube_config_options home_opts = {.home = home, .kubeconfig_env = ""};
        tap_is_int(ao_kube_config_load(&home_opts, &cfg, &err), 0, "home: ~/.kube/config");
        tap_is_str(cfg.server, "https://home.example", "home: server");
        ao_kube_config_done(&cfg);
        free(home);

        free(a);
        free(b);
        free(c);
        free(list);
}

static void test_in_cluster(void)
{
        make_dir("sa");
        make_dir("empty-sa");
        make_dir("nohome");
        write_file("sa/token", "sa-token\n", 0600);
        write_file("sa/ca.crt", CA_PEM, 0644);
        write_file("sa/namespace", "kube-system", 0644);

        char *sa = at("sa"), *empty_sa = at("empty-sa"), *nohome = at("nohome"), *want;
        struct ao_kube_config_options opts = {
            .home = nohome, .service_host = "10.96.0.1", .service_port = "443", .service_account_dir = sa};
        struct ao_kube_config cfg = {0};
        struct ao_error err = {0};

        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), 0, "in-cluster: loads");
        tap_is_str(cfg.server, "https://10.96.0.1:443", "in-cluster: server");
        tap_is_str(cfg.token, "sa-token", "in-cluster: token read now");
        want = at("sa/token");
        tap_is_str(cfg.token_file, want, "in-cluster: token file for rotation");
        free(want);
        want = at("sa/ca.crt");
        tap_is_str(cfg.ca_file, want, "in-cluster: CA file");
        free(want);
        tap_is_str(cfg.namespace_, "kube-system", "in-cluster: namespace");
        tap_is_str(cfg.source, "in-cluster", "in-cluster: source");
        ao_kube_config_done(&cfg);

        opts.service_host = "fd00:10:96::1";
        opts.service_port = "6443";
        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), 0, "in-cluster: IPv6");
        tap_is_str(cfg.server, "https://[fd00:10:96::1]:6443", "in-cluster: IPv6 in brackets");
        ao_kube_config_done(&cfg);

        opts.service_port = NULL;
        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), -EINVAL, "in-cluster: no port");
        tap_is_str(err.msg, "in-cluster: KUBERNETES_SERVICE_HOST is set, KUBERNETES_SERVICE_PORT is not",
                   "in-cluster: no port message");
        opts.service_port = "http";
        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), -EINVAL, "in-cluster: bad port");
        opts.service_port = "443";

        /* A kubeconfig wins over the cluster. */
        char *kc = at("c/config");
        opts.kubeconfig_env = kc;
        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), 0, "kubeconfig before in-cluster");
        tap_is_str(cfg.server, "https://c.example", "kubeconfig before in-cluster: server");
        ao_kube_config_done(&cfg);
        opts.kubeconfig_env = NULL;

        /* A kubeconfig selecting no context gives way to the cluster. */
        write_file("nohome/no-context", "clusters: []\n", 0600);
        char *no_context = at("nohome/no-context");
        opts.kubeconfig_env = no_context;
        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), 0, "kubeconfig without a context: in-cluster");
        tap_is_str(cfg.source, "in-cluster", "kubeconfig without a context: source");
        ao_kube_config_done(&cfg);
        opts.kubeconfig_env = NULL;

        /* Not in a cluster: a host without a token, or no host. */
        opts.service_account_dir = empty_sa;
        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), -ENOENT, "no token: nothing configured");
        opts.service_account_dir = sa;
        opts.service_host = NULL;
        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), -ENOENT, "no host: nothing configured");
        want = fmt("no kubeconfig (%s/nohome/.kube/config), and not in a cluster (KUBERNETES_SERVICE_HOST is "
                   "not set)",
                   tmp);
        tap_is_str(err.msg, want, "nothing configured: message");
        free(want);
        struct ao_kube_config_options none = {.service_account_dir = empty_sa};
        tap_is_int(ao_kube_config_load(&none, &cfg, &err), -ENOENT, "no HOME either: nothing configured");
        tap_is_str(err.msg,
                   "no kubeconfig (neither KUBECONFIG nor HOME is set), and not in a cluster "
                   "(KUBERNETES_SERVICE_HOST is not set)",
                   "no HOME either: message");
        opts.kubeconfig_env = no_context;
        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), -ENOENT,
                   "kubeconfig without a context, no cluster");
        opts.kubeconfig_env = NULL;

        /* Explicit settings that cannot be honoured are mistakes, not "no cluster". */
        opts.kube_context = "dev";
        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), -EINVAL, "KUBE_CONTEXT without a kubeconfig");
        want = fmt("KUBE_CONTEXT 'dev' is set, but no kubeconfig (%s/nohome/.kube/config)", tmp);
        tap_is_str(err.msg, want, "KUBE_CONTEXT without a kubeconfig: message");
        free(want);
        opts.kube_context = NULL;
        opts.kube_config = no_context;
        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), -EINVAL, "KUBE_CONFIG selecting no context");
        opts.kube_config = NULL;

        /* KUBE_SERVER alone, then with an in-cluster token. */
        opts.kube_server = "http://127.0.0.1:8001/";
        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), 0, "KUBE_SERVER alone");
        tap_is_str(cfg.server, "http://127.0.0.1:8001", "KUBE_SERVER: server");
        tap_ok(!cfg.token && !cfg.token_file && !cfg.ca_file && !cfg.exec, "KUBE_SERVER: no credentials");
        tap_is_str(cfg.source, "KUBE_SERVER", "KUBE_SERVER: source");
        ao_kube_config_done(&cfg);
        opts.service_host = "10.96.0.1";
        opts.kubeconfig_env = kc;
        tap_is_int(ao_kube_config_load(&opts, &cfg, &err), 0, "KUBE_SERVER in a cluster");
        tap_is_str(cfg.server, "http://127.0.0.1:8001", "KUBE_SERVER: wins over a kubeconfig");
        tap_is_str(cfg.token, "sa-token", "KUBE_SERVER: in-cluster token");
        tap_ok(!cfg.ca_file, "KUBE_SERVER: no in-cluster CA");
        tap_is_str(cfg.source, "KUBE_SERVER, in-cluster token", "KUBE_SERVER: source with a token");
        ao_kube_config_done(&cfg);
        opts.kube_server = "localhost:8080";
        struct ao_kube_config untouched = {.server = sentinel};
        tap_is_int(ao_kube_config_load(&opts, &untouched, &err), -EINVAL, "KUBE_SERVER without a scheme");
        tap_is_str(err.msg, "KUBE_SERVER: 'localhost:8080' must start with http:// or https://",
                   "KUBE_SERVER: message");
        tap_ok(untouched.server == sentinel, "KUBE_SERVER: failure leaves the result alone");

        free(sa);
        free(empty_sa);
        free(nohome);
        free(kc);
        free(no_context);
}

/* ---- ExecCredential ------------------------------------------------------------------------------------- */

static int cred(const char *text, struct ao_kube_exec_credential *c, struct ao_error *err)
{
        *c = (struct ao_kube_exec_credential){0};
        *err = (struct ao_error){0};
        return ao_kube_exec_credential_parse(text, strlen(text), c, err);
}

static void check_cred_fail(const char *name, const char *text, const char *msg)
{
        struct ao_kube_exec_credential c;
        struct ao_error err;

        tap_is_int(cred(text, &c, &err), -EINVAL, "%s: refused", name);
        tap_is_str(err.msg, msg, "%s: message", name);
        tap_ok(!c.token && !c.cert_data, "%s: result untouched", name);
}

static void check_expiry(const char *stamp, int64_t want)
{
        char *text = fmt("{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\","
                         "\"expirationTimestamp\":\"%s\"}}",
                         stamp);
        struct ao_kube_exec_credential c;
        struct ao_error err;

        tap_is_int(cred(text, &c, &err), 0, "expiry '%s': parses", stamp);
        tap_is_int(c.expires_unix, want, "expiry '%s'", stamp);
        ao_kube_exec_credential_done(&c);
        free(text);
}

static void test_exec_credential(void)
{
        struct ao_kube_exec_credential c;
        struct ao_error err;

        tap_is_int(cred("{\"apiVersion\": \"" V1BETA1 "\", \"kind\": \"ExecCredential\", "
                        "\"status\": {\"token\": \"my-bearer-token\"}}",
                        &c, &err),
                   0, "ExecCredential: token");
        tap_is_str(c.token, "my-bearer-token", "ExecCredential: token value");
        tap_ok(!c.cert_data && !c.key_data && c.expires_unix == 0,
               "ExecCredential: no expiry, no certificate");
        ao_kube_exec_credential_done(&c);
        tap_ok(!c.token, "ExecCredential: done() clears");
        ao_kube_exec_credential_done(NULL);

        tap_is_int(cred("apiVersion: " V1 "\nkind: ExecCredential\nspec: {interactive: false}\nstatus:\n"
                        "  clientCertificateData: \"-----BEGIN CERTIFICATE-----\\nMIIBcert\\n-----END "
                        "CERTIFICATE-----\\n\"\n"
                        "  clientKeyData: \"-----BEGIN EC PRIVATE KEY-----\\nMHcCAQEE\\n-----END EC PRIVATE "
                        "KEY-----\\n\"\n"
                        "  expirationTimestamp: 2030-01-02T03:04:05Z\n",
                        &c, &err),
                   0, "ExecCredential: certificate and key");
        tap_is_str(c.cert_data, CERT_PEM, "ExecCredential: certificate");
        tap_is_str(c.key_data, KEY_PEM, "ExecCredential: key");
        tap_ok(!c.token, "ExecCredential: no token");
        tap_is_int(c.expires_unix, 1893553445, "ExecCredential: expiry");
        ao_kube_exec_credential_done(&c);

        check_expiry("2030-01-02T03:04:05Z", 1893553445);
        check_expiry("2030-01-02T05:34:05+02:30", 1893553445);
        check_expiry("2030-01-01T22:04:05-05:00", 1893553445);
        check_expiry("2030-01-02T03:04:05.999999Z", 1893553445);
        check_expiry("2024-02-29T23:59:59Z", 1709251199);
        check_expiry("1969-12-31T23:59:59Z", -1);
        check_expiry("1970-01-01T00:00:00Z", -1);
        check_expiry("1970-01-01T00:00:01Z", 1);

        const char *head = "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\"";
        char *text;
        check_cred_fail("no status", "{\"apiVersion\":\"" V1 "\",\"kind\":\"ExecCredential\"}",
                        "ExecCredential: status: missing");
        text = fmt("%s,\"status\":{\"token\":\"t\",\"expirationTimestamp\":\"2023-02-29T00:00:00Z\"}}", head);
        check_cred_fail("no 29 February 2023", text,
                        "ExecCredential: status.expirationTimestamp: not an RFC 3339 time");
        free(text);
        text = fmt("%s,\"status\":{\"token\":\"t\",\"expirationTimestamp\":\"2023-01-01 00:00:00Z\"}}", head);
        check_cred_fail("space for T", text,
                        "ExecCredential: status.expirationTimestamp: not an RFC 3339 time");
        free(text);
        text = fmt("%s,\"status\":{\"token\":\"t\",\"expirationTimestamp\":\"2023-01-01T00:00:00\"}}", head);
        check_cred_fail("no zone", text, "ExecCredential: status.expirationTimestamp: not an RFC 3339 time");
        free(text);
        text = fmt("%s,\"status\":{\"token\":\"t\",\"expirationTimestamp\":\"2023-01-01T24:00:00Z\"}}", head);
        check_cred_fail("hour 24", text, "ExecCredential: status.expirationTimestamp: not an RFC 3339 time");
        free(text);
        text = fmt("%s,\"status\":{\"clientCertificateData\":\"x\"}}", head);
        check_cred_fail("certificate without a key", text,
                        "ExecCredential: status: has only one of clientCertificateData and clientKeyData");
        free(text);
        text = fmt("%s,\"status\":{}}", head);
        check_cred_fail(
            "empty status", text,
            "ExecCredential: status: has neither a token nor clientCertificateData and clientKeyData");
        free(text);
        text = fmt("%s,\"status\":{\"token\":5}}", head);
        check_cred_fail("token not a string", text, "ExecCredential: status.token: must be a string");
        free(text);
        check_cred_fail("wrong kind",
                        "{\"apiVersion\":\"" V1 "\",\"kind\":\"Pod\",\"status\":{\"token\":\"t\"}}",
                        "ExecCredential: kind: must be ExecCredential");
        check_cred_fail("wrong apiVersion",
                        "{\"apiVersion\":\"v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}",
                        "ExecCredential: apiVersion: must be client.authentication.k8s.io/v1 or "
                        "client.authentication.k8s.io/v1beta1");
        check_cred_fail("not an object", "[]", "ExecCredential: must be a JSON object");
        tap_is_int(cred("{", &c, &err), -EINVAL, "ExecCredential: syntax error");
}

/* ---- running plugins ------------------------------------------------------------------------------------ */

static uint64_t now_ms(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static int count_fds(void)
{
        int n = 0;
        for (int fd = 0; fd < 1024; fd++)
                n += fcntl(fd, F_GETFD) >= 0;
        return n;
}

static void test_exec_run(void)
{
        int fds_before = count_fds();

        make_dir("plugins");
        write_file(
            "plugins/ok.sh",
            "#!/bin/sh\n"
            "printf '%s' \"$KUBERNETES_EXEC_INFO\" > \"$OUT_DIR/exec-info\"\n"
            "n=$(env | grep -c '^AO_TEST_VAR=')\n"
            "echo 'some progress on stderr' >&2\n"
            "printf '{\"apiVersion\":\"" V1BETA1 "\",\"kind\":\"ExecCredential\","
            "\"status\":{\"token\":\"%s-%s-%s\",\"expirationTimestamp\":\"2030-01-02T03:04:05Z\"}}\\n' "
            "\"$1\" \"$AO_TEST_VAR\" \"$n\"\n",
            0755);
        write_file("plugins/fail.sh",
                   "#!/bin/sh\necho 'first line' >&2\necho 'boom: token expired' >&2\nexit 1\n", 0755);
        write_file("plugins/slow.sh", "#!/bin/sh\nsleep 10\necho never\n", 0755);
        write_file("plugins/big.sh", "#!/bin/sh\nhead -c 1100000 /dev/zero\n", 0755);
        write_file("plugins/v1.sh",
                   "#!/bin/sh\necho '{\"apiVersion\":\"" V1
                   "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}'\n",
                   0755);
        write_file("plugins/garbage.sh", "#!/bin/sh\necho 'not json: ['\n", 0755);

        char *ok = at("plugins/ok.sh"), *out_dir = fmt("OUT_DIR=%s", tmp), *want;
        char *args[] = {"arg1", NULL};
        char *env[] = {out_dir, "AO_TEST_VAR=first", "AO_TEST_VAR=child", NULL};
        struct ao_kube_exec exec = {.command = ok, .args = args, .env = env, .api_version = V1BETA1};
        struct ao_kube_exec_credential c = {0};
        struct ao_error err = {0};

        setenv("AO_TEST_VAR", "parent", 1);
        tap_is_int(ao_kube_exec_run(&exec, 10 * 1000000ULL, &c, &err), 0, "exec run: plugin answers");
        tap_is_str(c.token, "arg1-child-1", "exec run: args passed, env replaced once, last entry wins");
        tap_is_int(c.expires_unix, 1893553445, "exec run: expiry");
        ao_kube_exec_credential_done(&c);
        unsetenv("AO_TEST_VAR");
        char *info_path = at("exec-info");
        FILE *f = fopen(info_path, "r");
        char info[512] = "";
        if (f) {
                size_t n = fread(info, 1, sizeof(info) - 1, f);
                info[n] = '\0';
                fclose(f);
        }
        tap_is_str(info,
                   "{\"apiVersion\":\"" V1BETA1
                   "\",\"kind\":\"ExecCredential\",\"spec\":{\"interactive\":false}}",
                   "exec run: KUBERNETES_EXEC_INFO");
        free(info_path);

        /* From $PATH, without args or env. */
        char *sh_args[] = {"-c",
                           "echo '{\"apiVersion\":\"" V1
                           "\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"from-sh\"}}'",
                           NULL};
        struct ao_kube_exec sh = {.command = "sh", .args = sh_args, .api_version = V1};
        tap_is_int(ao_kube_exec_run(&sh, AO_USEC_INFINITY, &c, &err), 0,
                   "exec run: command from $PATH, no deadline");
        tap_is_str(c.token, "from-sh", "exec run: token from sh -c");
        ao_kube_exec_credential_done(&c);

        exec = (struct ao_kube_exec){.command = at("plugins/fail.sh"), .api_version = V1};
        tap_is_int(ao_kube_exec_run(&exec, 10 * 1000000ULL, &c, &err), -EIO, "exec run: exit 1");
        want = fmt("exec plugin '%s' exited with status 1: boom: token expired", exec.command);
        tap_is_str(err.msg, want, "exec run: exit 1 message has the command and the last stderr line");
        tap_ok(!c.token, "exec run: failure leaves the result alone");
        free(want);
        free(exec.command);

        exec.command = at("plugins/slow.sh");
        uint64_t start = now_ms();
        tap_is_int(ao_kube_exec_run(&exec, 200 * 1000ULL, &c, &err), -ETIMEDOUT, "exec run: timeout");
        uint64_t took = now_ms() - start;
        tap_ok(took >= 200 && took < 3000, "exec run: killed at the deadline (%llu ms)",
               (unsigned long long) took);
        want = fmt("exec plugin '%s': no credential within 200 ms, killed", exec.command);
        tap_is_str(err.msg, want, "exec run: timeout message");
        free(want);
        int status;
        errno = 0;
        tap_ok(waitpid(-1, &status, WNOHANG) < 0 && errno == ECHILD, "exec run: the plugin was reaped");
        free(exec.command);

        exec.command = at("plugins/big.sh");
        tap_is_int(ao_kube_exec_run(&exec, 10 * 1000000ULL, &c, &err), -EFBIG, "exec run: output over 1 MiB");
        free(exec.command);

        exec = (struct ao_kube_exec){.command = at("plugins/v1.sh"), .api_version = V1BETA1};
        tap_is_int(ao_kube_exec_run(&exec, 10 * 1000000ULL, &c, &err), -EINVAL,
                   "exec run: apiVersion mismatch");
        want =
            fmt("exec plugin '%s': ExecCredential: apiVersion: '" V1 "' is not the configured '" V1BETA1 "'",
                exec.command);
        tap_is_str(err.msg, want, "exec run: apiVersion mismatch message");
        free(want);
        free(exec.command);

        exec.command = at("plugins/garbage.sh");
        tap_is_int(ao_kube_exec_run(&exec, 10 * 1000000ULL, &c, &err), -EINVAL, "exec run: not JSON");
        tap_ok(strncmp(err.msg, "exec plugin '", 13) == 0 && strstr(err.msg, "ExecCredential:"),
               "exec run: parse errors name the plugin: %s", err.msg);
        free(exec.command);

        exec.command = "/nonexistent/plugin";
        tap_is_int(ao_kube_exec_run(&exec, 10 * 1000000ULL, &c, &err), -ENOENT, "exec run: missing command");
        tap_is_str(err.msg, "exec plugin '/nonexistent/plugin': cannot run it: No such file or directory",
                   "exec run: missing command message");
        errno = 0;
        tap_ok(waitpid(-1, &status, WNOHANG) < 0 && errno == ECHILD, "exec run: no child left behind");
        tap_is_int(count_fds(), fds_before, "exec run: no descriptor left open");

        free(ok);
        free(out_dir);
}

int main(void)
{
        const char *base = getenv("TMPDIR");
        char *template = fmt("%s/test-kubeconfig-XXXXXX", base && base[0] ? base : "/tmp");

        tmp = mkdtemp(template);
        if (!tmp)
                tap_bail("mkdtemp");
        test_kind_style();
        test_contexts();
        test_files();
        test_auth_and_tls();
        test_exec_fields();
        test_errors();
        test_merge();
        test_in_cluster();
        test_exec_credential();
        test_exec_run();
        remove_tree(tmp);
        free(template);
        return tap_done();
}
