/* SPDX-License-Identifier: Apache-2.0 */
/*
 * values.yaml files: a mapping, or nothing at all. Shared by the operator's
 * module loader and `addon-operator lint`, so both read a file the same way.
 */
#include <errno.h>
#include <stdlib.h>

#include <cjson/cJSON.h>

#include "ao/values.h"
#include "ao/yaml.h"

int ao_values_file_load(const char *path, cJSON **ret, struct ao_error *reterr)
{
        cJSON *doc = NULL;
        struct ao_error load_err = {0};
        int r = ao_yaml_load_file(path, &doc, &load_err);
        if (r == -ENOENT || (r >= 0 && cJSON_IsNull(doc))) {
                cJSON_Delete(doc);
                *ret = cJSON_CreateObject();
                if (!*ret)
                        abort(); /* as ao_xmalloc */
                return 0;
        }
        if (r < 0)
                return ao_error_set(reterr, r, "%s", load_err.msg);
        if (!cJSON_IsObject(doc)) {
                cJSON_Delete(doc);
                return ao_error_set(reterr, -EINVAL, "%s: the document must be a mapping", path);
        }
        *ret = doc;
        return 0;
}
