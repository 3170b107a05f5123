/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Private to src/kube/: what its files share, by the file that defines it and the files that use
 * it. Never included outside src/kube/.
 *   kube_query_escape()   client.c; informer.c
 *   kube_credentials_*()  credentials.c; client.c
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/error.h"
#include "ao/kubeconfig.h"

struct ao_strbuf;

/** Append @s percent-encoded for a query parameter value. */
void kube_query_escape(struct ao_strbuf *q, const char *s);

/*
 * What the client authenticates with, copied from the config and kept fresh: a token file is
 * re-read every minute (service-account tokens rotate), an exec plugin is run again when its
 * credential expires or after a 401.
 */
struct kube_credentials {
        bool insecure;
        char *ca_file;
        char *ca_data;
        size_t ca_len;
        char *cert_file, *key_file;
        char *cert_data, *key_data; /* NUL-terminated PEM */
        char *token;
        char *token_file;
        uint64_t token_read_usec;
        char *username, *password;
        char *proxy_url;
        struct ao_kube_exec *exec;
        struct ao_kube_exec_credential exec_cred;
        bool exec_stale;
};

int kube_credentials_init(struct kube_credentials *cr, const struct ao_kube_config *config,
                          struct ao_error *reterr);
void kube_credentials_done(struct kube_credentials *cr);
/** The bearer token to send now (@now: monotonic µs), or NULL. */
const char *kube_credentials_token(struct kube_credentials *cr, uint64_t now);
/** The client certificate and key as PEM text, or NULL (then cert_file / key_file may apply). */
const char *kube_credentials_cert(const struct kube_credentials *cr);
const char *kube_credentials_key(const struct kube_credentials *cr);
/** The server refused the credential (401): re-read the token file, re-run the plugin. */
void kube_credentials_invalidate(struct kube_credentials *cr);
