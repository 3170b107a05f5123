/* SPDX-License-Identifier: Apache-2.0 */
/* Module names, values keys and the values merge. */
#include <cjson/cJSON.h>

#include "../tap.h"
#include "ao/values.h"
#include "ao/yaml.h"

static void check_dir(const char *dir, const char *name, const char *key, unsigned order, bool numbered)
{
        struct ao_module_name n;
        struct ao_error err = {0};
        int k = ao_module_name_parse(dir, 7, &n, &err);
        if (!tap_ok(k == 0, "dir '%s' parses", dir)) {
                tap_diag("%s", err.msg);
                return;
        }
        tap_is_str(n.name, name, "dir '%s': name", dir);
        tap_is_str(n.values_key, key, "dir '%s': values key", dir);
        char enabled[256];
        snprintf(enabled, sizeof(enabled), "%sEnabled", key);
        tap_is_str(n.enabled_key, enabled, "dir '%s': enabled key", dir);
        tap_is_int(n.order, order, "dir '%s': order", dir);
        tap_is_int(n.numbered, numbered, "dir '%s': numbered", dir);
        ao_module_name_done(&n);
}

static void check_bad_dir(const char *dir, const char *message)
{
        struct ao_module_name n;
        struct ao_error err = {0};
        tap_is_int(ao_module_name_parse(dir, 1, &n, &err), -EINVAL, "dir '%s' rejected", dir);
        tap_is_str(err.msg, message, "dir '%s': message", dir);
}

static void test_dirs(void)
{
        check_dir("001-simple-module", "simple-module", "simpleModule", 1, true);
        check_dir("prometheus-operator", "prometheus-operator", "prometheusOperator", 7, false);
        check_dir("020-cert-manager-crd", "cert-manager-crd", "certManagerCrd", 20, true);
        check_dir("l2-load-balancer", "l2-load-balancer", "l2LoadBalancer", 7, false);
        check_dir("100-module-one01", "module-one01", "moduleOne01", 100, true);
        check_dir("001-2-module-name", "2-module-name", "2ModuleName", 1, true);
        check_dir("0-nginx", "nginx", "nginx", 0, true);
        /* An order that does not fit in 31 bits counts as none; the prefix is still dropped. */
        check_dir("2147483648-big", "big", "big", 7, false);
        check_dir("2147483647-max", "max", "max", 2147483647, true);
        check_dir("123", "123", "123", 7, false);

        check_bad_dir("001-module_one",
                      "module directory '001-module_one': module name 'module_one' is not valid: "
                      "its values key 'moduleOne' converts back to 'module-one' (use lower-case "
                      "words separated by single '-')");
        check_bad_dir("MyModule",
                      "module directory 'MyModule': module name 'MyModule' is not valid: its values key "
                      "'myModule' converts back to 'my-module' (use lower-case words separated by single "
                      "'-')");
        check_bad_dir(
            "a--b", "module directory 'a--b': module name 'a--b' is not valid: its values key 'aB' converts "
                    "back to 'a-b' (use lower-case words separated by single '-')");
        check_bad_dir("x-2b",
                      "module directory 'x-2b': module name 'x-2b' is not valid: its values key 'x2b' "
                      "converts back to 'x2b' (use lower-case words separated by single '-')");
        check_bad_dir(
            "001-", "module directory '001-': module name '001-' is not valid: its values key '001' converts "
                    "back to '001' (use lower-case words separated by single '-')");
        check_bad_dir("mod.ule",
                      "module directory 'mod.ule': module name 'mod.ule' is not valid: its values key "
                      "'modUle' converts back to 'mod-ule' (use lower-case words separated by single '-')");
}

static void check_conv(const char *in, const char *camel, const char *kebab)
{
        char *c = ao_name_to_camel(in), *k = ao_name_to_kebab(in);
        tap_is_str(c, camel, "camel('%s')", in);
        tap_is_str(k, kebab, "kebab('%s')", in);
        free(c);
        free(k);
}

static void test_conversions(void)
{
        check_conv("simple-module", "simpleModule", "simple-module");
        check_conv("simpleModule", "simpleModule", "simple-module");
        check_conv("HTTPServer", "httpServer", "http-server");
        check_conv("2ModuleName", "2ModuleName", "2-module-name");
        check_conv("l2LoadBalancer", "l2LoadBalancer", "l2-load-balancer");
        check_conv("snake_case_name", "snakeCaseName", "snake-case-name");
        check_conv("", "", "");
        check_conv("---", "", "");
}

static void check_key(const char *key, enum ao_values_key_kind kind, const char *module)
{
        char *m = NULL;
        struct ao_error err = {0};
        tap_is_int(ao_values_key_classify(key, &m, &err), kind, "key '%s' kind", key);
        tap_is_str(m, module, "key '%s' module", key);
        free(m);
}

static void test_keys(void)
{
        check_key("global", AO_VALUES_KEY_GLOBAL, NULL);
        check_key("simpleModule", AO_VALUES_KEY_MODULE, "simple-module");
        check_key("simpleModuleEnabled", AO_VALUES_KEY_ENABLED, "simple-module");
        check_key("certManagerMaintenance", AO_VALUES_KEY_MAINTENANCE, "cert-manager");
        check_key("nginx", AO_VALUES_KEY_MODULE, "nginx");
        struct ao_error err = {0};
        tap_is_int(ao_values_key_classify("Enabled", NULL, &err), _AO_VALUES_KEY_KIND_INVALID,
                   "bare 'Enabled' invalid");
        tap_is_int(ao_values_key_classify("some_module", NULL, &err), _AO_VALUES_KEY_KIND_INVALID,
                   "snake key invalid");
        tap_is_str(err.msg,
                   "key 'some_module' does not name a module (its module name would be 'some-module')",
                   "invalid key message");
        tap_is_int(ao_values_key_classify("HTTPServer", NULL, &err), _AO_VALUES_KEY_KIND_INVALID,
                   "a key that does not round-trip is invalid");
}

static cJSON *load(const char *yaml)
{
        cJSON *j = NULL;
        struct ao_error err = {0};
        if (ao_yaml_load(yaml, strlen(yaml), "test", &j, &err) < 0)
                tap_bail(err.msg);
        return j;
}

static void check_merge(const char *a, const char *b, const char *want, const char *what)
{
        cJSON *dst = load(a), *src = load(b);
        char *before = ao_json_canonical(src);
        ao_values_merge(dst, src);
        char *got = ao_json_canonical(dst), *after = ao_json_canonical(src);
        tap_is_str(got, want, "merge: %s", what);
        tap_is_str(after, before, "merge: %s leaves the source alone", what);
        free(got), free(before), free(after);
        cJSON_Delete(dst);
        cJSON_Delete(src);
}

static void test_merge(void)
{
        check_merge("{a: 1, b: {c: 2, d: 3}}", "{b: {c: 20}, e: 5}",
                    "{\"a\":1,\"b\":{\"c\":20,\"d\":3},\"e\":5}", "maps merge recursively, later wins");
        check_merge("{a: [1, 2, 3]}", "{a: [9]}", "{\"a\":[9]}", "arrays are replaced, not merged");
        check_merge("{a: {x: 1}}", "{a: 5}", "{\"a\":5}", "a scalar replaces a map");
        check_merge("{a: 5}", "{a: {x: 1}}", "{\"a\":{\"x\":1}}", "a map replaces a scalar");
        check_merge("{a: 1}", "{a: null}", "{\"a\":null}", "null replaces too");
        check_merge("{}", "{}", "{}", "empty");
        /* The seed's example: modules/values.yaml, then the module's values.yaml, then the ConfigMap. */
        cJSON *values = load("{}");
        const char *layers[] = {"{param1: 100, param2: 'Yes'}", "{param1: 200}"};
        for (size_t i = 0; i < 2; i++) {
                cJSON *layer = load(layers[i]);
                ao_values_merge(values, layer);
                cJSON_Delete(layer);
        }
        char *got = ao_json_canonical(values);
        tap_is_str(got, "{\"param1\":200,\"param2\":\"Yes\"}",
                   "merge: global values from the seed's example");
        free(got);
        cJSON_Delete(values);
}

int main(void)
{
        test_dirs();
        test_conversions();
        test_keys();
        test_merge();
        return tap_done();
}
