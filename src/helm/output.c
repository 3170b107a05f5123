/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/helm-output.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>
#include <openssl/evp.h>

#include "ao/alloc.h"
#include "ao/json-type.h"
#include "ao/quote.h"
#include "ao/strbuf.h"

/*
 * helm prints its --output json with Go's encoding/json: one value and a
 * newline. cJSON reads it; anything but whitespace after the value is an
 * error, as it would be for Go. Only the fields the operator uses are
 * checked, so a newer helm adding fields still parses.
 */

#define SHOW_MAX 64 /* bytes of a user string quoted in an error */

static void json_deletep(cJSON **json)
{
        cJSON_Delete(*json);
}

/* @s for a message, control characters escaped, cut at SHOW_MAX bytes. Valid until the next call. */
static const char *show(struct ao_strbuf *sb, const char *s, size_t len)
{
        ao_strbuf_reset(sb);
        ao_quote_text(sb, s, len, SHOW_MAX);
        return ao_strbuf_str(sb);
}

static bool is_json_space(char c)
{
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_blank(const char *text, size_t len)
{
        for (size_t i = 0; i < len; i++)
                if (!is_json_space(text[i]))
                        return false;
        return true;
}

/* One JSON value from @text into *@ret; NULL for "" or whitespace only. */
static int parse_json(const char *what, const char *text, size_t len, cJSON **ret, struct ao_error *reterr)
{
        const char *end = NULL;

        if (is_blank(text, len)) {
                *ret = NULL;
                return 0;
        }
        _cleanup_(json_deletep) cJSON *json = cJSON_ParseWithLengthOpts(text, len, &end, false);
        if (!json) {
                size_t at = end && end >= text && end <= text + len ? (size_t) (end - text) : 0;
                return ao_error_set(reterr, -EBADMSG, "%s: invalid JSON at byte %zu", what, at);
        }
        size_t at = (size_t) (end - text);
        while (at < len && is_json_space(text[at]))
                at++;
        if (at < len)
                return ao_error_set(reterr, -EBADMSG, "%s: unexpected text after the JSON value at byte %zu",
                                    what, at);
        *ret = TAKE_PTR(json);
        return 0;
}

/* The array @what printed, or NULL for empty output. */
static int parse_array(const char *what, const char *text, size_t len, cJSON **ret, struct ao_error *reterr)
{
        _cleanup_(json_deletep) cJSON *json = NULL;
        int r = parse_json(what, text, len, &json, reterr);

        if (r < 0)
                return r;
        if (json && !cJSON_IsArray(json))
                return ao_error_set(reterr, -EBADMSG, "%s: expected a JSON array, got %s", what,
                                    ao_json_type_name(json, AO_JSON_WORDS_JSON));
        *ret = TAKE_PTR(json);
        return 0;
}

static int element_fail(struct ao_error *reterr, const char *what, size_t index, const char *fmt, ...)
    _printf_(4, 5);
static int element_fail(struct ao_error *reterr, const char *what, size_t index, const char *fmt, ...)
{
        char problem[AO_ERROR_MSG_MAX];
        va_list ap;

        va_start(ap, fmt);
        (void) vsnprintf(problem, sizeof(problem), fmt, ap);
        va_end(ap);
        return ao_error_set(reterr, -EBADMSG, "%s: element %zu: %s", what, index, problem);
}

/* ---- helm history -------------------------------------------------------------------------------- */

#define HISTORY "helm history output"

static bool is_status(const char *s)
{
        size_t n = strlen(s);

        if (n == 0 || n >= sizeof(((struct ao_helm_revision *) NULL)->status))
                return false;
        for (const unsigned char *p = (const unsigned char *) s; *p; p++)
                if (*p <= ' ' || *p >= 0x7F)
                        return false;
        return true;
}

static int history_element(const cJSON *e, size_t index, struct ao_helm_revision *ret,
                           struct ao_error *reterr)
{
        struct ao_strbuf sb = {0};

        if (!cJSON_IsObject(e))
                return element_fail(reterr, HISTORY, index, "expected an object, got %s",
                                    ao_json_type_name(e, AO_JSON_WORDS_JSON));

        const cJSON *revision = cJSON_GetObjectItemCaseSensitive(e, "revision");
        if (!revision || cJSON_IsNull(revision))
                return element_fail(reterr, HISTORY, index, "revision is missing");
        double d = cJSON_IsNumber(revision) ? revision->valuedouble : NAN;
        if (!(d >= 1 && d <= INT_MAX && d == floor(d)))
                return element_fail(reterr, HISTORY, index, "revision is not a positive integer");

        const cJSON *status = cJSON_GetObjectItemCaseSensitive(e, "status");
        if (!status || cJSON_IsNull(status))
                return element_fail(reterr, HISTORY, index, "status is missing");
        if (!cJSON_IsString(status))
                return element_fail(reterr, HISTORY, index, "status is not a string");
        if (!is_status(status->valuestring)) {
                int r = element_fail(reterr, HISTORY, index,
                                     "status '%s' is not 1 to 31 printable ASCII characters",
                                     show(&sb, status->valuestring, strlen(status->valuestring)));
                ao_strbuf_done(&sb);
                return r;
        }

        *ret = (struct ao_helm_revision){.revision = (int) d};
        (void) snprintf(ret->status, sizeof(ret->status), "%s", status->valuestring);
        return 0;
}

int ao_helm_parse_history(const char *text, size_t len, struct ao_helm_revision *ret, struct ao_error *reterr)
{
        _cleanup_(json_deletep) cJSON *array = NULL;
        struct ao_helm_revision last = {0};
        size_t index = 0;
        int r = parse_array(HISTORY, text, len, &array, reterr);

        if (r < 0)
                return r;
        for (const cJSON *e = array ? array->child : NULL; e; e = e->next, index++) {
                struct ao_helm_revision rev = {0};
                if ((r = history_element(e, index, &rev, reterr)) < 0)
                        return r;
                if (rev.revision > last.revision)
                        last = rev;
        }
        *ret = last;
        return 0;
}

/* ---- helm list ----------------------------------------------------------------------------------- */

#define LIST "helm list output"

void ao_helm_names_free(char **names)
{
        if (!names)
                return;
        for (char **n = names; *n; n++)
                free(*n);
        free(names);
}

static void names_freep(char ***names)
{
        ao_helm_names_free(*names);
}

static int compare_names(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

int ao_helm_parse_list(const char *text, size_t len, const char *ignore, char ***ret_names,
                       struct ao_error *reterr)
{
        _cleanup_(json_deletep) cJSON *array = NULL;
        _cleanup_(names_freep) char **names = NULL;
        size_t n = 0, index = 0;
        int r = parse_array(LIST, text, len, &array, reterr);

        if (r < 0)
                return r;
        names = ao_xcalloc((size_t) cJSON_GetArraySize(array) + 1, sizeof(*names));
        for (const cJSON *e = array ? array->child : NULL; e; e = e->next, index++) {
                if (!cJSON_IsObject(e))
                        return element_fail(reterr, LIST, index, "expected an object, got %s",
                                            ao_json_type_name(e, AO_JSON_WORDS_JSON));
                const cJSON *name = cJSON_GetObjectItemCaseSensitive(e, "name");
                if (!name || cJSON_IsNull(name))
                        return element_fail(reterr, LIST, index, "name is missing");
                if (!cJSON_IsString(name))
                        return element_fail(reterr, LIST, index, "name is not a string");
                if (name->valuestring[0] == '\0')
                        return element_fail(reterr, LIST, index, "name is empty");
                if (ignore && ignore[0] && strcmp(name->valuestring, ignore) == 0)
                        continue;
                names[n++] = ao_xstrdup(name->valuestring);
        }

        qsort(names, n, sizeof(*names), compare_names);
        size_t kept = 0;
        for (size_t i = 0; i < n; i++) {
                char *name = TAKE_PTR(names[i]);
                if (kept > 0 && strcmp(names[kept - 1], name) == 0)
                        free(name);
                else
                        names[kept++] = name;
        }
        *ret_names = TAKE_PTR(names);
        return 0;
}

/* ---- helm get values ----------------------------------------------------------------------------- */

#define VALUES "helm get values output"

/* The key the operator adds to the values it installs a module's release with. */
#define CHECKSUM_KEY "_addonOperatorModuleChecksum"

int ao_helm_parse_values_checksum(const char *text, size_t len, char **ret, struct ao_error *reterr)
{
        _cleanup_(json_deletep) cJSON *values = NULL;
        int r = parse_json(VALUES, text, len, &values, reterr);

        if (r < 0)
                return r;
        if (values && !cJSON_IsObject(values) && !cJSON_IsNull(values))
                return ao_error_set(reterr, -EBADMSG, "%s: expected a JSON object, got %s", VALUES,
                                    ao_json_type_name(values, AO_JSON_WORDS_JSON));
        const cJSON *checksum = cJSON_GetObjectItemCaseSensitive(values, CHECKSUM_KEY);
        *ret = cJSON_IsString(checksum) ? ao_xstrdup(checksum->valuestring) : NULL;
        return 0;
}

/* ---- helm version -------------------------------------------------------------------------------- */

#define VERSION            "helm version output"
#define VERSION_DIGITS_MAX 9 /* keeps every number below INT_MAX */

static bool is_digit(char c)
{
        return c >= '0' && c <= '9';
}

static bool is_alnum(char c)
{
        return is_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

/* A number of 1 to VERSION_DIGITS_MAX digits at @text[*pos], or -1 (and *pos unchanged). */
static int version_number(const char *text, size_t len, size_t *pos)
{
        size_t i = *pos;
        int n = 0;

        while (i < len && is_digit(text[i]) && i - *pos < VERSION_DIGITS_MAX)
                n = n * 10 + (text[i++] - '0');
        if (i == *pos || (i < len && is_digit(text[i])))
                return -1;
        *pos = i;
        return n;
}

/* "vMAJOR.MINOR[.PATCH]" at @text[@pos]. */
static bool version_at(const char *text, size_t len, size_t pos, struct ao_helm_version *ret)
{
        struct ao_helm_version v = {0};

        if (text[pos] != 'v' || (pos > 0 && is_alnum(text[pos - 1])))
                return false;
        pos++;
        if ((v.major = version_number(text, len, &pos)) < 0 || pos >= len || text[pos] != '.')
                return false;
        pos++;
        if ((v.minor = version_number(text, len, &pos)) < 0)
                return false;
        if (pos + 1 < len && text[pos] == '.' && is_digit(text[pos + 1])) {
                pos++;
                if ((v.patch = version_number(text, len, &pos)) < 0)
                        return false;
        }
        *ret = v;
        return true;
}

int ao_helm_parse_version(const char *text, size_t len, struct ao_helm_version *ret, struct ao_error *reterr)
{
        struct ao_strbuf sb = {0};

        for (size_t i = 0; i < len; i++)
                if (version_at(text, len, i, ret))
                        return 0;
        int r = ao_error_set(reterr, -EBADMSG, "%s: no version vMAJOR.MINOR.PATCH in '%s'", VERSION,
                             show(&sb, text, strnlen(text, len)));
        ao_strbuf_done(&sb);
        return r;
}

/* ---- checksum ------------------------------------------------------------------------------------ */

void ao_helm_checksum(const char *text, size_t len, char out[33])
{
        unsigned char md[EVP_MAX_MD_SIZE];
        unsigned md_len = 0;

        out[0] = '\0';
        if (EVP_Digest(text, len, md, &md_len, EVP_md5(), NULL) != 1) {
                /* COMPAT(OpenSSL 3 with fips=yes by default): MD5 is no security function here. */
                EVP_MD *md5 = EVP_MD_fetch(NULL, "MD5", "-fips");
                int ok = md5 && EVP_Digest(text, len, md, &md_len, md5, NULL) == 1;
                EVP_MD_free(md5);
                if (!ok)
                        return;
        }
        if (md_len != 16)
                return;
        for (unsigned i = 0; i < md_len; i++)
                (void) snprintf(out + 2 * i, 3, "%02x", md[i]);
}
