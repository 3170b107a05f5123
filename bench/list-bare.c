/* SPDX-License-Identifier: Apache-2.0 */
/*
 * The reference for bench-first-sync.sh: the bare limit of a first synchronisation, i.e. a
 * paginated LIST of a collection on a real kube-apiserver plus one compiled jq program run on
 * every item, with nothing kept. One curl easy handle (its connection reused page after page),
 * the request options the operator's client sets (HTTP/2 over TLS, any content encoding the
 * server offers, Accept: application/json), libjq's jv_parse_sized on each page, then
 * jq_start/jq_next of the program on each item of .items. No rate limiter, no store, no hook.
 *
 * Usage: list-bare SERVER CA_FILE PATH [LIMIT [PROGRAM]]
 *   SERVER   https://127.0.0.1:PORT
 *   CA_FILE  the CA bundle that signed the server's certificate
 *   PATH     the collection, e.g. /api/v1/namespaces/bench/configmaps
 *   LIMIT    page size (default 500, the operator's)
 *   PROGRAM  the jq program (default .metadata.name)
 * The bearer token comes from $TOKEN (not the command line, where ps would show it).
 * $ACCEPT_ENCODING, when set, replaces the operator's Accept-Encoding (every encoding curl can
 * decode, so gzip from kube-apiserver for bodies over 128 KiB): "identity" asks for none.
 * Prints one line: "items N results R pages P bytes B ms T maxrss_kb K" (B: the decoded body
 * bytes, T: from the first request to the last item's last result, K: this process's peak RSS).
 * Exit 1 on any failure: an HTTP status other than 200, a body that is not JSON, a jq error.
 */
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include <curl/curl.h>
#include <jq.h>
#include <jv.h>

struct body {
        char *data; /* owned; grows, reused page after page */
        size_t len, cap;
};

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *userdata)
{
        struct body *b = userdata;
        size_t n = size * nmemb;
        if (b->len + n + 1 > b->cap) {
                size_t cap = b->cap ? b->cap : 1 << 20;
                while (cap < b->len + n + 1)
                        cap *= 2;
                char *data = realloc(b->data, cap);
                if (!data)
                        return 0; /* curl fails the transfer with CURLE_WRITE_ERROR */
                b->data = data;
                b->cap = cap;
        }
        memcpy(b->data + b->len, ptr, n);
        b->len += n;
        b->data[b->len] = '\0'; /* for error messages */
        return n;
}

static uint64_t now_usec(void)
{
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000u + (uint64_t) ts.tv_nsec / 1000u;
}

__attribute__((format(printf, 1, 2), noreturn)) static void die(const char *fmt, ...)
{
        va_list ap;
        va_start(ap, fmt);
        fprintf(stderr, "list-bare: ");
        vfprintf(stderr, fmt, ap);
        fputc('\n', stderr);
        va_end(ap);
        exit(1);
}

/* The string at .metadata.continue, empty when there is none (the last page). Owned by the caller. */
static char *continue_token(jv page)
{
        jv meta = jv_object_get(jv_copy(page), jv_string("metadata"));
        char *token = NULL;
        if (jv_get_kind(meta) == JV_KIND_OBJECT) {
                jv c = jv_object_get(jv_copy(meta), jv_string("continue"));
                if (jv_get_kind(c) == JV_KIND_STRING)
                        token = strdup(jv_string_value(c));
                jv_free(c);
        }
        jv_free(meta);
        return token ? token : strdup("");
}

int main(int argc, char **argv)
{
        if (argc < 4 || argc > 6) {
                fprintf(stderr,
                        "usage: list-bare SERVER CA_FILE PATH [LIMIT [PROGRAM]]  (token in $TOKEN)\n");
                return 2;
        }
        const char *server = argv[1], *ca = argv[2], *path = argv[3];
        long limit = argc > 4 ? strtol(argv[4], NULL, 10) : 500;
        const char *program = argc > 5 ? argv[5] : ".metadata.name";
        const char *token = getenv("TOKEN");
        if (limit <= 0)
                die("invalid LIMIT '%s'", argv[4]);
        if (!token || !*token)
                die("no bearer token in $TOKEN");

        jq_state *jq = jq_init();
        if (!jq || !jq_compile(jq, program))
                die("cannot compile the jq program '%s'", program);
        if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0)
                die("curl_global_init failed");
        CURL *e = curl_easy_init();
        if (!e)
                die("curl_easy_init failed");

        size_t auth_len = strlen(token) + 32;
        char *auth = malloc(auth_len);
        snprintf(auth, auth_len, "Authorization: Bearer %s", token);
        struct curl_slist *headers = curl_slist_append(NULL, "Accept: application/json");
        headers = curl_slist_append(headers, auth);

        struct body body = {0};
        char errbuf[CURL_ERROR_SIZE];
        /* The options the operator's client sets (src/kube/client.c start_transfer). */
        curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long) CURL_HTTP_VERSION_2TLS);
        const char *encoding = getenv("ACCEPT_ENCODING");
        curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, encoding ? encoding : "");
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
        curl_easy_setopt(e, CURLOPT_CAINFO, ca);
        curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, &body);
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);

        uint64_t items = 0, results = 0, pages = 0, bytes = 0;
        char *cont = strdup("");
        uint64_t t0 = now_usec();
        do {
                char *escaped = curl_easy_escape(e, cont, 0);
                size_t url_len = strlen(server) + strlen(path) + strlen(escaped) + 64;
                char *url = malloc(url_len);
                snprintf(url, url_len, "%s%s?limit=%ld%s%s", server, path, limit, *cont ? "&continue=" : "",
                         escaped);
                curl_free(escaped);
                curl_easy_setopt(e, CURLOPT_URL, url);
                body.len = 0;
                errbuf[0] = '\0';
                CURLcode rc = curl_easy_perform(e);
                free(url);
                if (rc != CURLE_OK)
                        die("request failed: %s", errbuf[0] ? errbuf : curl_easy_strerror(rc));
                long status = 0;
                curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
                if (status != 200)
                        die("HTTP %ld: %.400s", status, body.len ? body.data : "(empty body)");
                pages++;
                bytes += body.len;

                jv page = jv_parse_sized(body.data, (int) body.len);
                if (!jv_is_valid(page)) {
                        jv msg = jv_invalid_get_msg(page);
                        die("a page is not JSON: %s",
                            jv_get_kind(msg) == JV_KIND_STRING ? jv_string_value(msg) : "?");
                }
                jv list = jv_object_get(jv_copy(page), jv_string("items"));
                if (jv_get_kind(list) != JV_KIND_ARRAY)
                        die("a page has no .items array");
                int n = jv_array_length(jv_copy(list));
                for (int i = 0; i < n; i++) {
                        jq_start(jq, jv_array_get(jv_copy(list), i), 0);
                        jv r;
                        while (jv_is_valid(r = jq_next(jq))) {
                                results++;
                                jv_free(r);
                        }
                        if (jv_invalid_has_msg(jv_copy(r)))
                                die("the jq program failed on an item");
                        jv_free(r);
                }
                items += (uint64_t) n;
                jv_free(list);
                free(cont);
                cont = continue_token(page);
                jv_free(page);
        } while (*cont);
        uint64_t elapsed = now_usec() - t0;

        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        printf("items %llu results %llu pages %llu bytes %llu ms %.1f maxrss_kb %ld\n",
               (unsigned long long) items, (unsigned long long) results, (unsigned long long) pages,
               (unsigned long long) bytes, (double) elapsed / 1000.0, ru.ru_maxrss);

        free(cont);
        free(body.data);
        curl_slist_free_all(headers);
        free(auth);
        curl_easy_cleanup(e);
        curl_global_cleanup();
        jq_teardown(&jq);
        return 0;
}
