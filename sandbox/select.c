/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Which profile a hook runs under: `<hook>.sandbox.yaml` next to the hook,
 * else `sandbox.yaml` in its module directory, else the operator's default.
 * Each file holds one key, `profile: NAME`. Whether NAME exists is the
 * caller's check, against the loaded set.
 */
#include "ao/sandbox.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ao/alloc.h"
#include "ao/yaml.h"
#include "internal.h"

#define HOOK_SUFFIX     ".sandbox.yaml"
#define MODULE_FILE     "sandbox.yaml"
#define SELECT_FILE_MAX (64u * 1024)

static void cjson_deletep(cJSON **p)
{
        cJSON_Delete(*p);
}

static int parse_selection(const char *path, const cJSON *doc, char **ret_name, struct ao_error *reterr)
{
        char q[96];

        if (!cJSON_IsObject(doc))
                return ao_error_set(reterr, -EINVAL, "%s: expected a mapping with the key 'profile'", path);
        for (const cJSON *item = doc->child; item; item = item->next)
                if (strcmp(item->string, "profile") != 0)
                        return ao_error_set(reterr, -EINVAL, "%s: unknown key '%s' (expected profile)", path,
                                            sandbox_escape(item->string, q, sizeof(q)));

        const cJSON *profile = cJSON_GetObjectItemCaseSensitive(doc, "profile");
        if (!profile)
                return ao_error_set(reterr, -EINVAL, "%s: missing key 'profile'", path);
        if (!cJSON_IsString(profile) || !sandbox_name_valid(profile->valuestring))
                return ao_error_set(reterr, -EINVAL, "%s: profile: expected a profile name of [a-z0-9-_.]",
                                    path);
        *ret_name = ao_xstrdup(profile->valuestring);
        return 0;
}

/* 1 and the name when @path selects a profile, 0 when there is no such file. */
static int read_selection(const char *path, char **ret_name, struct ao_error *reterr)
{
        _cleanup_free_ char *text = NULL;
        _cleanup_(cjson_deletep) cJSON *doc = NULL;
        size_t len;

        int r = sandbox_read_file(path, SELECT_FILE_MAX, &text, &len, reterr);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        r = ao_yaml_load(text, len, path, &doc, reterr);
        if (r < 0)
                return r;
        r = parse_selection(path, doc, ret_name, reterr);
        return r < 0 ? r : 1;
}

static int try_file(const char *dir_or_hook, const char *sep, const char *suffix, char **ret_name,
                    struct ao_error *reterr)
{
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s%s%s", dir_or_hook, sep, suffix) < 0) {
                path = NULL;
                return ao_error_set(reterr, -ENOMEM, "out of memory");
        }
        return read_selection(path, ret_name, reterr);
}

int ao_sandbox_select(const char *module_dir, const char *hook_path, const char *fallback, char **ret_name,
                      struct ao_error *reterr)
{
        int r;

        /* The hook's own file first: it may narrow or widen what its module chose. */
        if (hook_path) {
                r = try_file(hook_path, "", HOOK_SUFFIX, ret_name, reterr);
                if (r < 0)
                        return r;
                if (r > 0)
                        return 0;
        }
        if (module_dir) {
                r = try_file(module_dir, "/", MODULE_FILE, ret_name, reterr);
                if (r < 0)
                        return r;
                if (r > 0)
                        return 0;
        }
        if (!fallback)
                return ao_error_set(reterr, -EINVAL, "no sandbox profile selected and no default profile");
        *ret_name = ao_xstrdup(fallback);
        return 0;
}
