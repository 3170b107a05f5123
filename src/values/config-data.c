/* SPDX-License-Identifier: Apache-2.0 */
#include "ao/config-data.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "ao/alloc.h"
#include "ao/json-type.h"
#include "ao/quote.h"
#include "ao/strbuf.h"
#include "ao/values.h"
#include "ao/yaml.h"

/*
 * ConfigMap data ↔ parsed config. The Go addon-operator reads the same keys
 * (kube_config_manager): sections are YAML strings, "<key>Enabled" must be
 * exactly "true" or "false" (strconv.ParseBool would take more, the
 * operator does not), "<key>Maintenance" is passed on untouched.
 */

static void json_deletep(cJSON **json)
{
        cJSON_Delete(*json);
}

/* A key for an error message: control characters escaped, cut to about 100 bytes. */
static const char *describe(char *buf, size_t size, const char *s)
{
        struct ao_strbuf sb = {0};
        ao_quote_text(&sb, s, strlen(s), 100);
        (void) snprintf(buf, size, "%s", ao_strbuf_str(&sb));
        ao_strbuf_done(&sb);
        return buf;
}

/* A global or module section: YAML text, or (local file) a mapping or nothing. */
static int parse_section(const cJSON *value, const char *source, const char *key, cJSON **ret,
                         struct ao_error *reterr)
{
        _cleanup_(json_deletep) cJSON *doc = NULL;
        char what[512];

        if (cJSON_IsString(value)) {
                struct ao_error err = {0};
                const char *text = value->valuestring ? value->valuestring : "";
                /*
                 * An empty file name makes the loader's messages start with ':' (":3:5: what",
                 * ": out of memory"): cut that off and put the source and key in front.
                 */
                int r = ao_yaml_load(text, strlen(text), "", &doc, &err);
                if (r < 0) {
                        const char *msg = err.msg;
                        if (*msg == ':')
                                msg++;
                        if (*msg == ' ')
                                msg++;
                        return ao_error_set(reterr, r, "%s: key '%s': %s", source,
                                            describe(what, sizeof(what), key), msg);
                }
                value = doc;
        }
        if (cJSON_IsNull(value)) {
                *ret = cJSON_CreateObject();
        } else if (cJSON_IsObject(value)) {
                *ret = doc ? TAKE_PTR(doc) : cJSON_Duplicate(value, true);
        } else {
                return ao_error_set(reterr, -EINVAL, "%s: key '%s': must be a mapping, not %s", source,
                                    describe(what, sizeof(what), key),
                                    ao_json_type_name(value, AO_JSON_WORDS_KUBECTL));
        }
        if (!*ret)
                abort(); /* as ao_xmalloc */
        return 0;
}

static int parse_enabled(const cJSON *value, const char *source, const char *key, cJSON **ret,
                         struct ao_error *reterr)
{
        char what[512], got[512];
        if (cJSON_IsBool(value)) {
                *ret = cJSON_CreateBool(cJSON_IsTrue(value));
        } else if (cJSON_IsString(value) && value->valuestring && strcmp(value->valuestring, "true") == 0) {
                *ret = cJSON_CreateTrue();
        } else if (cJSON_IsString(value) && value->valuestring && strcmp(value->valuestring, "false") == 0) {
                *ret = cJSON_CreateFalse();
        } else if (cJSON_IsString(value)) {
                return ao_error_set(reterr, -EINVAL, "%s: key '%s': must be \"true\" or \"false\", not '%s'",
                                    source, describe(what, sizeof(what), key),
                                    describe(got, sizeof(got), value->valuestring ? value->valuestring : ""));
        } else {
                return ao_error_set(reterr, -EINVAL, "%s: key '%s': must be \"true\" or \"false\", not %s",
                                    source, describe(what, sizeof(what), key),
                                    ao_json_type_name(value, AO_JSON_WORDS_KUBECTL));
        }
        if (!*ret)
                abort();
        return 0;
}

int ao_config_data_parse(const struct cJSON *raw, const char *source, struct cJSON **ret,
                         struct ao_error *reterr)
{
        _cleanup_(json_deletep) cJSON *out = NULL;
        char what[512];

        source = source ? source : "<config>";
        if (!cJSON_IsObject(raw))
                return ao_error_set(reterr, -EINVAL, "%s: the data must be a mapping, not %s", source,
                                    ao_json_type_name(raw, AO_JSON_WORDS_KUBECTL));
        if (!(out = cJSON_CreateObject()))
                abort();

        for (const cJSON *item = raw->child; item; item = item->next) {
                const char *key = item->string ? item->string : "";
                struct ao_error err = {0};
                cJSON *value = NULL;
                int r;

                if (cJSON_GetObjectItemCaseSensitive(out, key))
                        return ao_error_set(reterr, -EINVAL, "%s: duplicate key '%s'", source,
                                            describe(what, sizeof(what), key));
                switch (ao_values_key_classify(key, NULL, &err)) {
                case AO_VALUES_KEY_GLOBAL:
                case AO_VALUES_KEY_MODULE:
                        r = parse_section(item, source, key, &value, reterr);
                        break;
                case AO_VALUES_KEY_ENABLED:
                        r = parse_enabled(item, source, key, &value, reterr);
                        break;
                case AO_VALUES_KEY_MAINTENANCE:
                        if (!cJSON_IsString(item))
                                return ao_error_set(reterr, -EINVAL, "%s: key '%s': must be a string, not %s",
                                                    source, describe(what, sizeof(what), key),
                                                    ao_json_type_name(item, AO_JSON_WORDS_KUBECTL));
                        value = cJSON_CreateString(item->valuestring ? item->valuestring : "");
                        r = value ? 0 : -ENOMEM;
                        break;
                default: {
                        /* It quotes the key and the module name it gives: make it one printable line. */
                        struct ao_strbuf sb = {0};
                        ao_strbuf_append_sanitized(&sb, err.msg);
                        r = ao_error_set(reterr, -EINVAL, "%s: %s", source, ao_strbuf_str(&sb));
                        ao_strbuf_done(&sb);
                        return r;
                }
                }
                if (r < 0)
                        return r;
                if (!value)
                        abort();
                cJSON_AddItemToObject(out, key, value);
        }
        *ret = TAKE_PTR(out);
        return 0;
}

struct cJSON *ao_config_data_format(const struct cJSON *data)
{
        cJSON *out = cJSON_CreateObject();
        if (!out)
                abort();
        for (const cJSON *item = data ? data->child : NULL; item; item = item->next) {
                cJSON *value;
                if (cJSON_IsBool(item)) {
                        value = cJSON_CreateString(cJSON_IsTrue(item) ? "true" : "false");
                } else if (cJSON_IsString(item)) {
                        value = cJSON_CreateString(item->valuestring ? item->valuestring : "");
                } else {
                        _cleanup_free_ char *text = ao_yaml_emit(item);
                        value = cJSON_CreateString(text);
                }
                if (!value)
                        abort();
                cJSON_AddItemToObject(out, item->string ? item->string : "", value);
        }
        return out;
}
