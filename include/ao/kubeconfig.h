/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Where the Kubernetes API is and how to authenticate to it.
 *
 * Resolution, as the Go operator does it (first that yields a config wins):
 *   1. KUBE_SERVER set: that URL, no credentials beyond an in-cluster token if one exists;
 *   2. a kubeconfig: KUBE_CONFIG, else every file of $KUBECONFIG (':'-separated, merged the
 *      way kubectl merges: the first file that defines a name wins), else ~/.kube/config;
 *      the context is KUBE_CONTEXT, else the file's current-context;
 *   3. in cluster: KUBERNETES_SERVICE_HOST/PORT with the service-account token, ca.crt and
 *      namespace under the service-account directory.
 *
 * A kubeconfig may give the CA, client certificate and key inline (base64 *-data) or as files
 * (relative paths are relative to the kubeconfig's directory), a token or tokenFile, basic
 * auth, insecure-skip-tls-verify, tls-server-name, proxy-url, and an exec credential plugin
 * (client.authentication.k8s.io v1 / v1beta1 ExecCredential).
 *
 * Errors name the file and field: "/root/.kube/config: users[0].user.client-key-data: not valid base64".
 *
 * Non-logging module; thread-safe.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/error.h"

#define AO_KUBECONFIG_MAX_INPUT (4u * 1024 * 1024)

/** An exec credential plugin (users[].user.exec). */
struct ao_kube_exec {
        char *command;     /* owned */
        char **args;       /* owned, NULL-terminated (may be empty) */
        char **env;        /* owned, NULL-terminated "NAME=value" entries to add */
        char *api_version; /* owned: "client.authentication.k8s.io/v1beta1", ... */
};

/**
 * Everything needed to talk to one API server. All strings owned; NULL when not given. The
 * *_data fields are decoded bytes, NUL-terminated one past their length. token holds the
 * token_file's content at load time, or the kubeconfig's token when both are given (client-go
 * then prefers the file whenever it can read it). source is also "KUBE_SERVER" or
 * "KUBE_SERVER, in-cluster token".
 */
struct ao_kube_config {
        char *server; /* "https://10.0.0.1:443": scheme, host, port, maybe a path prefix; no trailing "/" */
        char *tls_server_name; /* SNI / verification name when not the server's host */
        bool insecure_skip_tls_verify;
        char *ca_file; /* a PEM file */
        char *ca_data; /* PEM bytes (decoded certificate-authority-data), NUL-terminated beyond ca_len */
        size_t ca_len;
        char *cert_file; /* client certificate */
        char *cert_data;
        size_t cert_len;
        char *key_file; /* client key */
        char *key_data;
        size_t key_len;
        char *token;      /* a bearer token */
        char *token_file; /* re-read when it changes (service-account token rotation); see above */
        char *username;   /* basic auth */
        char *password;
        char *proxy_url;
        struct ao_kube_exec *exec; /* owned or NULL */
        char *namespace_; /* the context's namespace, or the in-cluster namespace file; NULL if none */
        char *source;     /* for logs: "kubeconfig /root/.kube/config, context kind-test" or "in-cluster" */
};

/** Where to look: the settings plus the environment (tests point these at fixtures). */
struct ao_kube_config_options {
        const char *kube_config;         /* KUBE_CONFIG; NULL or "": not set */
        const char *kube_context;        /* KUBE_CONTEXT */
        const char *kube_server;         /* KUBE_SERVER */
        const char *kubeconfig_env;      /* $KUBECONFIG */
        const char *home;                /* $HOME, for ~/.kube/config */
        const char *service_host;        /* $KUBERNETES_SERVICE_HOST */
        const char *service_port;        /* $KUBERNETES_SERVICE_PORT */
        const char *service_account_dir; /* NULL: /var/run/secrets/kubernetes.io/serviceaccount */
};

/**
 * Resolve the configuration. Returns 0, -ENOENT when nothing is configured (no kubeconfig
 * found and not in a cluster: the caller runs without a cluster), -EINVAL with the file and
 * field when something is configured but wrong, -ENOMEM.
 *
 * Details: a kubeconfig that selects no context (no current-context, no KUBE_CONTEXT) counts
 * as none, and the in-cluster configuration is tried, as the Go operator does; if that fails
 * too, it is -EINVAL when KUBE_CONFIG or KUBE_CONTEXT was set (asked for, not found) and
 * -ENOENT otherwise. A missing KUBE_CONFIG file is -EINVAL; missing $KUBECONFIG entries are
 * skipped as kubectl skips them. An unreadable file gives its -errno, an oversized one
 * -EFBIG, a YAML document over the loader's limits -E2BIG. Only the chosen context, its
 * cluster and its user are checked; certificate and key files must be readable now, and a
 * tokenFile is read now unless a token is given too. Impersonation (as, as-groups, ...) and
 * auth-provider are refused as not supported rather than ignored.
 */
int ao_kube_config_load(const struct ao_kube_config_options *opts, struct ao_kube_config *ret,
                        struct ao_error *reterr);

/**
 * Parse one kubeconfig text (@filename for messages and to resolve relative paths) for
 * @context (NULL or "": current-context). Same codes: -ENOENT when no context is selected,
 * -EFBIG over AO_KUBECONFIG_MAX_INPUT. @filename NULL: "<input>", relative paths kept.
 * @ret is written only on success.
 */
int ao_kubeconfig_parse(const char *text, size_t len, const char *filename, const char *context,
                        struct ao_kube_config *ret, struct ao_error *reterr);

void ao_kube_config_done(struct ao_kube_config *cfg);

/** What an exec plugin returned. Strings owned; NULL when absent. */
struct ao_kube_exec_credential {
        char *token;
        char *cert_data;      /* PEM */
        char *key_data;       /* PEM */
        int64_t expires_unix; /* status.expirationTimestamp as seconds since the epoch; 0: never */
};

/**
 * Parse an ExecCredential JSON document (the plugin's stdout). Errors name the field:
 * kind ExecCredential, apiVersion v1 or v1beta1, status with a token or a certificate and key
 * (both or neither), expirationTimestamp in RFC 3339. -EINVAL, -EFBIG over 1 MiB.
 */
int ao_kube_exec_credential_parse(const char *text, size_t len, struct ao_kube_exec_credential *ret,
                                  struct ao_error *reterr);
void ao_kube_exec_credential_done(struct ao_kube_exec_credential *c);

/**
 * Run @exec's plugin and parse its output, waiting at most @timeout_usec (AO_USEC_INFINITY:
 * no limit). The plugin gets KUBERNETES_EXEC_INFO as the spec asks. Blocking: called before
 * the event loop starts and when a credential expires (documented in docs/KUBERNETES.md).
 * @exec needs command and api_version (as ao_kubeconfig_parse() sets them); the returned
 * apiVersion must be the configured one. The plugin runs in its own process group with
 * stdin on /dev/null; its stderr is kept for the message. Returns 0, -errno when it cannot
 * be started, -EIO when it exits non-zero or is killed (message: command, status, last
 * stderr line), -ETIMEDOUT (the group is SIGKILLed and the plugin reaped), -EFBIG when it
 * prints more than 1 MiB, -EINVAL for a bad ExecCredential.
 */
int ao_kube_exec_run(const struct ao_kube_exec *exec, uint64_t timeout_usec,
                     struct ao_kube_exec_credential *ret, struct ao_error *reterr);
