/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for src/helm/output.c and src/helm/manifest.c: what helm 3.17 prints
 * for history, list, get values and version, a rendered manifest with
 * sources, Lists, empty documents and scalars that look like separators or
 * sources, every error message exactly, and the MD5 checksum.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../tap.h"
#include "ao/helm-output.h"

/* ---- helm history -------------------------------------------------------------------------------- */

static void is_history(const char *text, int revision, const char *status, const char *what)
{
        struct ao_helm_revision rev = {.revision = -1};
        struct ao_error err = {0};
        int r = ao_helm_parse_history(text, strlen(text), &rev, &err);

        tap_is_int(r, 0, "history: %s: parses", what);
        if (r < 0)
                tap_diag("%s", err.msg);
        tap_is_int(rev.revision, revision, "history: %s: revision", what);
        tap_is_str(rev.status, status, "history: %s: status", what);
}

static void test_history(void)
{
        is_history("[{\"revision\":1,\"updated\":\"2025-03-20T10:15:02.123456789Z\",\"status\":\"deployed\","
                   "\"chart\":\"mod-0.1.0\",\"app_version\":\"\",\"description\":\"Install complete\"}]\n",
                   1, "deployed", "one revision");
        is_history(
            "[{\"revision\":3,\"updated\":\"2025-03-20T10:17:40.5+01:00\",\"status\":\"failed\","
            "\"chart\":\"mod-0.1.0\",\"app_version\":\"1.0\",\"description\":\"Upgrade \\\"mod\\\" failed: "
            "timed out waiting for the condition\"},"
            "{\"revision\":1,\"updated\":\"2025-03-20T10:15:02Z\",\"status\":\"superseded\","
            "\"chart\":\"mod-0.1.0\",\"app_version\":\"1.0\",\"description\":\"Install complete\"},"
            "{\"revision\":4,\"updated\":\"2025-03-20T10:20:00Z\",\"status\":\"pending-upgrade\","
            "\"chart\":\"mod-0.1.1\",\"app_version\":\"1.0\",\"description\":\"Preparing upgrade\"},"
            "{\"revision\":2,\"updated\":\"2025-03-20T10:16:00Z\",\"status\":\"superseded\","
            "\"chart\":\"mod-0.1.0\",\"app_version\":\"1.0\",\"description\":\"Upgrade complete\"}]\n",
            4, "pending-upgrade", "revisions in any order");
        is_history("[{\"revision\":7,\"status\":\"deployed\"},{\"revision\":7,\"status\":\"failed\"}]", 7,
                   "deployed", "equal revisions: the first");
        is_history("[{\"revision\":12,\"status\":\"uninstalling\",\"extra\":{\"new\":[1,2]}}]", 12,
                   "uninstalling", "unknown members ignored");
        is_history("[{\"revision\":2147483647,\"status\":\"pending-rollback\"}]", 2147483647,
                   "pending-rollback", "largest revision");
        is_history("[]\n", 0, "", "no revisions");
        is_history("", 0, "", "empty output");
        is_history(" \n\t\r\n", 0, "", "whitespace only");
        is_history("\xEF\xBB\xBF[{\"revision\":5,\"status\":\"deployed\"}]", 5, "deployed",
                   "byte order mark");
}

/* ---- helm list ----------------------------------------------------------------------------------- */

static void is_list(const char *text, const char *ignore, const char *want, const char *what)
{
        char **names = NULL;
        struct ao_error err = {0};
        int r = ao_helm_parse_list(text, strlen(text), ignore, &names, &err);

        tap_is_int(r, 0, "list: %s: parses", what);
        if (r < 0) {
                tap_diag("%s", err.msg);
                return;
        }
        char got[1024] = "";
        for (char **n = names; *n; n++) {
                if (n != names)
                        strcat(got, ",");
                strcat(got, *n);
        }
        tap_is_str(got, want, "list: %s: names", what);
        ao_helm_names_free(names);
}

static const char list_3_17[] =
    "[{\"name\":\"node-manager\",\"namespace\":\"d8-system\",\"revision\":\"3\",\"updated\":\"2025-03-20 "
    "10:15:02.123456789 +0000 UTC\",\"status\":\"deployed\",\"chart\":\"node-manager-0.1.0\",\"app_version\":"
    "\"\"},"
    "{\"name\":\"cert-manager\",\"namespace\":\"d8-system\",\"revision\":\"12\",\"updated\":\"2025-03-19 "
    "08:00:00.5 +0000 "
    "UTC\",\"status\":\"failed\",\"chart\":\"cert-manager-1.2.3\",\"app_version\":\"v1.14\"},"
    "{\"name\":\"addon-operator\",\"namespace\":\"d8-system\",\"revision\":\"1\",\"updated\":\"2025-03-18 "
    "07:00:00 +0000 UTC\",\"status\":\"deployed\",\"chart\":\"addon-operator-0.0.1\",\"app_version\":\"\"},"
    "{\"name\":\"cert-manager\",\"namespace\":\"other\",\"revision\":\"2\",\"updated\":\"2025-03-18 "
    "07:00:00 +0000 "
    "UTC\",\"status\":\"pending-install\",\"chart\":\"cert-manager-1.2.3\",\"app_version\":\"\"},"
    "{\"name\":\"cni-cilium\",\"namespace\":\"d8-system\",\"revision\":\"7\",\"updated\":\"2025-03-18 "
    "07:00:00 +0000 "
    "UTC\",\"status\":\"uninstalling\",\"chart\":\"cni-cilium-0.1.0\",\"app_version\":\"\"}]\n";

static void test_list(void)
{
        is_list(list_3_17, NULL, "addon-operator,cert-manager,cni-cilium,node-manager",
                "sorted, de-duplicated");
        is_list(list_3_17, "addon-operator", "cert-manager,cni-cilium,node-manager", "ignore name left out");
        is_list(list_3_17, "cert-manager", "addon-operator,cni-cilium,node-manager", "ignored duplicate");
        is_list(list_3_17, "", "addon-operator,cert-manager,cni-cilium,node-manager", "empty ignore");
        is_list(list_3_17, "absent", "addon-operator,cert-manager,cni-cilium,node-manager", "ignore absent");
        is_list("[{\"name\":\"b\"},{\"name\":\"B\"},{\"name\":\"a\"},{\"name\":\"b\"},{\"name\":\"a\"}]",
                NULL, "B,a,b", "strcmp order, duplicates anywhere");
        is_list("[]\n", "x", "", "no releases");
        is_list("", NULL, "", "empty output");
        is_list("\n", NULL, "", "a newline");
        is_list("[{\"name\":\"x\"}]", "x", "", "only the ignored one");
        ao_helm_names_free(NULL);
}

/* ---- helm get values ----------------------------------------------------------------------------- */

static void is_checksum(const char *text, const char *want, const char *what)
{
        char *got = (char *) "untouched";
        struct ao_error err = {0};
        int r = ao_helm_parse_values_checksum(text, strlen(text), &got, &err);

        tap_is_int(r, 0, "values: %s: parses", what);
        if (r < 0) {
                tap_diag("%s", err.msg);
                return;
        }
        tap_is_str(got, want, "values: %s: checksum", what);
        free(got);
}

static void test_values(void)
{
        is_checksum("{\"_addonOperatorModuleChecksum\":\"8c3f1b0a9e6d2e4f5a7b9c1d3e5f7a9b\",\"replicas\":2,"
                    "\"nested\":{\"_addonOperatorModuleChecksum\":\"inner\",\"list\":[1,\"a\",null]}}\n",
                    "8c3f1b0a9e6d2e4f5a7b9c1d3e5f7a9b", "with the key");
        is_checksum("{\"nested\":{\"_addonOperatorModuleChecksum\":\"inner\"},\"replicas\":2}\n", NULL,
                    "only nested: absent");
        is_checksum("{\"_addonOperatorModuleChecksum\":12345}", NULL, "not a string");
        is_checksum("{\"_addonOperatorModuleChecksum\":null}", NULL, "null value");
        is_checksum("{\"_addonOperatorModuleChecksum\":\"\"}", "", "empty string kept");
        is_checksum("{}", NULL, "empty object");
        is_checksum("null\n", NULL, "null");
        is_checksum("", NULL, "empty output");
        is_checksum("  \n", NULL, "whitespace");
}

/* ---- helm version -------------------------------------------------------------------------------- */

/* @text's first line names the test: TAP names must not hold a newline. */
static void is_version(const char *text, int major, int minor, int patch)
{
        int shown = (int) strcspn(text, "\n");
        struct ao_helm_version v = {-1, -1, -1};
        struct ao_error err = {0};
        int r = ao_helm_parse_version(text, strlen(text), &v, &err);

        tap_is_int(r, 0, "version: '%.*s': parses", shown, text);
        if (r < 0)
                tap_diag("%s", err.msg);
        tap_ok(v.major == major && v.minor == minor && v.patch == patch, "version: '%.*s': %d.%d.%d", shown,
               text, major, minor, patch);
}

static void test_version(void)
{
        is_version("v3.17.2+gcc0bbbd\n", 3, 17, 2);
        is_version("v3.17.2+gcc0bbbd", 3, 17, 2);
        is_version("v3.2.4+g0ad800e\n", 3, 2, 4);
        is_version("v4.0.0\n", 4, 0, 0);
        is_version(
            "version.BuildInfo{Version:\"v3.17.2\", GitCommit:\"cc0bbbd6d6276b83880042c1ecb34087e84d41eb\", "
            "GitTreeState:\"clean\", GoVersion:\"go1.23.7\"}\n",
            3, 17, 2);
        is_version(
            "version.BuildInfo{Version:\"v3.2.4\", GitCommit:\"0ad800ef43d3b826f31a5ad8dfbb4fe05d143688\", "
            "GitTreeState:\"clean\", GoVersion:\"go1.13.12\"}",
            3, 2, 4);
        is_version("v3.18", 3, 18, 0);
        is_version("v3.18.\n", 3, 18, 0);
        is_version("v3.19.0-rc.1+g1234567", 3, 19, 0);
        is_version("WARNING: foo\nv3.16.4+g7877b45", 3, 16, 4);
}

/* ---- errors of the JSON and text parsers ------------------------------------------------------- */

enum parser {
        HISTORY,
        LIST,
        VALUES,
        VERSION,
};

static const struct {
        enum parser parser;
        const char *text;
        const char *msg;
} errors[] = {
    {HISTORY, "Error: release: not found", "helm history output: invalid JSON at byte 0"},
    {HISTORY, "[{\"revision\":1,", "helm history output: invalid JSON at byte 14"},
    {HISTORY, "[] []", "helm history output: unexpected text after the JSON value at byte 3"},
    {HISTORY, "null", "helm history output: expected a JSON array, got null"},
    {HISTORY, "{\"revision\":1}", "helm history output: expected a JSON array, got an object"},
    {HISTORY, "[\"deployed\"]", "helm history output: element 0: expected an object, got a string"},
    {HISTORY, "[{\"revision\":1,\"status\":\"deployed\"},{\"status\":\"failed\"}]",
     "helm history output: element 1: revision is missing"},
    {HISTORY, "[{\"revision\":0,\"status\":\"deployed\"}]",
     "helm history output: element 0: revision is not a positive integer"},
    {HISTORY, "[{\"revision\":\"1\",\"status\":\"deployed\"}]",
     "helm history output: element 0: revision is not a positive integer"},
    {HISTORY, "[{\"revision\":1.5,\"status\":\"deployed\"}]",
     "helm history output: element 0: revision is not a positive integer"},
    {HISTORY, "[{\"revision\":2147483648,\"status\":\"deployed\"}]",
     "helm history output: element 0: revision is not a positive integer"},
    {HISTORY, "[{\"revision\":-3,\"status\":\"deployed\"}]",
     "helm history output: element 0: revision is not a positive integer"},
    {HISTORY, "[{\"revision\":1}]", "helm history output: element 0: status is missing"},
    {HISTORY, "[{\"revision\":1,\"status\":null}]", "helm history output: element 0: status is missing"},
    {HISTORY, "[{\"revision\":1,\"status\":1}]", "helm history output: element 0: status is not a string"},
    {HISTORY, "[{\"revision\":1,\"status\":\"\"}]",
     "helm history output: element 0: status '' is not 1 to 31 printable ASCII characters"},
    {HISTORY, "[{\"revision\":1,\"status\":\"pending\\nupgrade\"}]",
     "helm history output: element 0: status 'pending\\nupgrade' is not 1 to 31 printable ASCII characters"},
    {HISTORY, "[{\"revision\":1,\"status\":\"abcdefghijklmnopqrstuvwxyz012345\"}]",
     "helm history output: element 0: status 'abcdefghijklmnopqrstuvwxyz012345' is not 1 to 31 printable "
     "ASCII characters"},
    {LIST, "Error: Kubernetes cluster unreachable", "helm list output: invalid JSON at byte 0"},
    {LIST, "{}", "helm list output: expected a JSON array, got an object"},
    {LIST, "[{\"name\":\"a\"},[]]", "helm list output: element 1: expected an object, got an array"},
    {LIST, "[{\"namespace\":\"d8-system\"}]", "helm list output: element 0: name is missing"},
    {LIST, "[{\"name\":true}]", "helm list output: element 0: name is not a string"},
    {LIST, "[{\"name\":\"\"}]", "helm list output: element 0: name is empty"},
    {VALUES, "foo: bar\n", "helm get values output: invalid JSON at byte 0"},
    {VALUES, "[1]", "helm get values output: expected a JSON object, got an array"},
    {VALUES, "\"x\"", "helm get values output: expected a JSON object, got a string"},
    {VALUES, "{} x", "helm get values output: unexpected text after the JSON value at byte 3"},
    {VERSION, "", "helm version output: no version vMAJOR.MINOR.PATCH in ''"},
    {VERSION, "version 3.17.2", "helm version output: no version vMAJOR.MINOR.PATCH in 'version 3.17.2'"},
    {VERSION, "v3\n", "helm version output: no version vMAJOR.MINOR.PATCH in 'v3\\n'"},
    {VERSION, "xv3.1.2", "helm version output: no version vMAJOR.MINOR.PATCH in 'xv3.1.2'"},
    {VERSION, "v1234567890.1.2", "helm version output: no version vMAJOR.MINOR.PATCH in 'v1234567890.1.2'"},
    {VERSION, "Error: unknown flag: --short\x01 and a very long line that goes on and on and on and on",
     "helm version output: no version vMAJOR.MINOR.PATCH in 'Error: unknown flag: --short\\x01 and a very "
     "long "
     "line that goes on ...'"},
};

static void test_errors(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(errors); i++) {
                const char *text = errors[i].text;
                struct ao_error err = {0};
                struct ao_helm_revision rev = {.revision = 99};
                struct ao_helm_version v = {.major = 99};
                char **names = (char **) &err, *checksum = (char *) &err;
                int r = -1;

                switch (errors[i].parser) {
                case HISTORY:
                        r = ao_helm_parse_history(text, strlen(text), &rev, &err);
                        break;
                case LIST:
                        r = ao_helm_parse_list(text, strlen(text), "x", &names, &err);
                        break;
                case VALUES:
                        r = ao_helm_parse_values_checksum(text, strlen(text), &checksum, &err);
                        break;
                case VERSION:
                        r = ao_helm_parse_version(text, strlen(text), &v, &err);
                        break;
                }
                tap_is_int(r, -EBADMSG, "error %zu: code", i);
                tap_is_str(err.msg, errors[i].msg, "error %zu: message", i);
                tap_ok(rev.revision == 99 && v.major == 99 && names == (char **) &err &&
                           checksum == (char *) &err,
                       "error %zu: result untouched", i);
        }
}

/* ---- rendered manifests -------------------------------------------------------------------------- */

/* What `helm template mod` prints for a module, give or take. */
static const char manifest[] = "---\n"
                               "# Source: mod/templates/serviceaccount.yaml\n"
                               "apiVersion: v1\n"
                               "kind: ServiceAccount\n"
                               "metadata:\n"
                               "  name: mod\n"
                               "  namespace: d8-mod\n"
                               "  labels:\n"
                               "    heritage: deckhouse\n"
                               "    module: mod\n"
                               "---\n"
                               "# Source: mod/templates/configmap.yaml\n"
                               "apiVersion: v1\n"
                               "kind: ConfigMap\n"
                               "metadata:\n"
                               "  name: mod-scripts\n"
                               "  namespace: d8-mod\n"
                               "data:\n"
                               "  run.sh: |\n"
                               "    #!/bin/sh\n"
                               "    cat <<EOF\n"
                               "    ---\n"
                               "    # Source: not/a/source.yaml\n"
                               "    apiVersion: v1\n"
                               "    kind: Fake\n"
                               "    EOF\n"
                               "  separator: \"---\"\n"
                               "  quoted: \"first line\n"
                               "# Source: mod/templates/fake.yaml\n"
                               "    last line\"\n"
                               "---\n"
                               "# Source: mod/templates/clusterrole.yaml\n"
                               "apiVersion: rbac.authorization.k8s.io/v1\n"
                               "kind: ClusterRole\n"
                               "metadata:\n"
                               "  name: d8:mod:reader\n"
                               "  namespace: \"\"\n"
                               "rules:\n"
                               "- apiGroups: [\"\"]\n"
                               "  resources: [\"pods\", \"configmaps\"]\n"
                               "  verbs: [\"get\", \"list\", \"watch\"]\n"
                               "---\n"
                               "# Source: mod/templates/disabled.yaml\n"
                               "# Everything here is behind {{- if .Values.mod.enabled }}\n"
                               "---\n"
                               "# Source: mod/templates/null.yaml\n"
                               "~\n"
                               "---\n"
                               "# Source: mod/templates/list.yaml\n"
                               "apiVersion: v1\n"
                               "kind: List\n"
                               "items:\n"
                               "- apiVersion: v1\n"
                               "  kind: Service\n"
                               "  metadata:\n"
                               "    name: mod-api\n"
                               "    namespace: d8-mod\n"
                               "  spec:\n"
                               "    ports: [{port: 443}]\n"
                               "- apiVersion: v1\n"
                               "  kind: Secret\n"
                               "  metadata:\n"
                               "    name: mod-tls\n"
                               "    namespace: other\n"
                               "---\n"
                               "# Source: mod/templates/empty-list.yaml\n"
                               "apiVersion: v1\n"
                               "kind: ConfigMapList\n"
                               "items: []\n"
                               "---\n"
                               "# Source: mod/templates/multi.yaml\n"
                               "apiVersion: apps/v1\n"
                               "kind: Deployment\n"
                               "metadata:\n"
                               "  name: mod\n"
                               "  namespace: d8-mod\n"
                               "spec:\n"
                               "  template:\n"
                               "    metadata:\n"
                               "      annotations:\n"
                               "        checksum/config: 5d41402abc4b2a76b9719d911017c592\n"
                               "---\n"
                               "apiVersion: v1\n"
                               "kind: Namespace\n"
                               "metadata:\n"
                               "  name: d8-mod\n"
                               "---\n"
                               "# Source: mod/templates/anchors.yaml\n"
                               "apiVersion: &v v1\n"
                               "kind: PodList\n"
                               "items: null\n"
                               "metadata: {name: not-a-list, labels: {v: *v}}\n";

static void is_object(const struct ao_helm_manifest *m, size_t i, const char *api_version, const char *kind,
                      const char *ns, const char *name)
{
        if (!tap_ok(i < m->n, "manifest: object %zu exists", i))
                return;
        const struct ao_helm_object *o = &m->objects[i];
        tap_is_str(o->api_version, api_version, "manifest: object %zu: apiVersion", i);
        tap_is_str(o->kind, kind, "manifest: object %zu: kind", i);
        tap_is_str(o->namespace, ns, "manifest: object %zu: namespace", i);
        tap_is_str(o->name, name, "manifest: object %zu: name", i);
}

static void test_manifest(void)
{
        struct ao_helm_manifest m = {0};
        struct ao_error err = {0};
        int r = ao_helm_manifest_parse(manifest, strlen(manifest), &m, &err);

        tap_is_int(r, 0, "manifest: parses");
        if (r < 0)
                tap_diag("%s", err.msg);
        tap_is_int(m.n, 8, "manifest: 8 objects");
        is_object(&m, 0, "v1", "ServiceAccount", "d8-mod", "mod");
        is_object(&m, 1, "v1", "ConfigMap", "d8-mod", "mod-scripts");
        is_object(&m, 2, "rbac.authorization.k8s.io/v1", "ClusterRole", NULL, "d8:mod:reader");
        is_object(&m, 3, "v1", "Service", "d8-mod", "mod-api");
        is_object(&m, 4, "v1", "Secret", "other", "mod-tls");
        is_object(&m, 5, "apps/v1", "Deployment", "d8-mod", "mod");
        is_object(&m, 6, "v1", "Namespace", NULL, "d8-mod");
        is_object(&m, 7, "v1", "PodList", NULL, "not-a-list");
        ao_helm_manifest_clear(&m);
        tap_ok(m.n == 0 && m.objects == NULL, "manifest: cleared");
        ao_helm_manifest_clear(&m);
        ao_helm_manifest_clear(NULL);

        static const char *const empty[] = {"",
                                            "\n",
                                            "---\n",
                                            "---\n# Source: mod/templates/x.yaml\n",
                                            "# only a comment\n",
                                            "---\n---\nnull\n---\n~\n...\n"};
        for (size_t i = 0; i < AO_ARRAY_SIZE(empty); i++) {
                m = (struct ao_helm_manifest){.n = 99};
                r = ao_helm_manifest_parse(empty[i], strlen(empty[i]), &m, &err);
                tap_ok(r == 0 && m.n == 0 && m.objects == NULL, "manifest: empty %zu: no objects", i);
                ao_helm_manifest_clear(&m);
        }

        /* No "---" at all, CRLF line ends, a byte order mark, a document end marker. */
        static const char crlf[] = "\xEF\xBB\xBF# Source: m/templates/a.yaml\r\napiVersion: v1\r\nkind: A\r\n"
                                   "metadata:\r\n  name: \xC3\xA9t\xC3\xA9\r\n...\r\n"
                                   "%YAML 1.1\r\n---\r\napiVersion: v1\r\nkind: B\r\nmetadata: {name: b}\r\n";
        r = ao_helm_manifest_parse(crlf, strlen(crlf), &m, &err);
        tap_is_int(r, 0, "manifest: CRLF, BOM, '...', directive: parses");
        if (r < 0)
                tap_diag("%s", err.msg);
        tap_is_int(m.n, 2, "manifest: CRLF: 2 objects");
        is_object(&m, 0, "v1", "A", NULL, "\xC3\xA9t\xC3\xA9");
        is_object(&m, 1, "v1", "B", NULL, "b");
        ao_helm_manifest_clear(&m);
}

#define CM "apiVersion: v1\nkind: ConfigMap\n"

static const struct {
        const char *text;
        int code;
        const char *msg;
} manifest_errors[] = {
    {"---\n# Source: mod/templates/cm.yaml\n" CM "metadata:\n  namespace: d8-mod\n", -EBADMSG,
     "mod/templates/cm.yaml: metadata.name is missing"},
    {"---\n# Source: mod/templates/cm.yaml\n" CM "data: {}\n", -EBADMSG,
     "mod/templates/cm.yaml: metadata.name is missing"},
    {"---\n# Source: mod/templates/cm.yaml\n" CM "metadata:\n  name: \"\"\n", -EBADMSG,
     "mod/templates/cm.yaml: metadata.name is empty"},
    {"---\n# Source: mod/templates/cm.yaml\n" CM "metadata:\n  name: 12\n", -EBADMSG,
     "mod/templates/cm.yaml: metadata.name is not a string"},
    {"---\n# Source: mod/templates/cm.yaml\n" CM "metadata: [a]\n", -EBADMSG,
     "mod/templates/cm.yaml: metadata is a sequence, not a mapping"},
    {"---\n# Source: mod/templates/cm.yaml\n" CM "metadata:\n  name: a\n  namespace: [x]\n", -EBADMSG,
     "mod/templates/cm.yaml: metadata.namespace is not a string"},
    {"---\n# Source: mod/templates/cm.yaml\nkind: ConfigMap\nmetadata: {name: a}\n", -EBADMSG,
     "mod/templates/cm.yaml: apiVersion is missing"},
    {"---\n# Source: mod/templates/cm.yaml\napiVersion: v1\nkind: null\nmetadata: {name: a}\n", -EBADMSG,
     "mod/templates/cm.yaml: kind is missing"},
    {"---\n# Source: mod/templates/cm.yaml\napiVersion: 1\nkind: A\nmetadata: {name: a}\n", -EBADMSG,
     "mod/templates/cm.yaml: apiVersion is not a string"},
    /* The nearest source before the document, not one inside a string of the previous document. */
    {"---\n# Source: mod/templates/quoted.yaml\n" CM "metadata: {name: q}\ndata:\n  note: \"first\n"
     "# Source: mod/templates/fake.yaml\n  last\"\n---\n" CM "metadata: {namespace: x}\n",
     -EBADMSG, "mod/templates/quoted.yaml: metadata.name is missing"},
    {CM "metadata: {name: a}\n---\napiVersion: v1\nmetadata: {name: b}\n", -EBADMSG,
     "document 2: kind is missing"},
    {"---\n---\n# nothing\n---\n- apiVersion: v1\n  kind: A\n", -EBADMSG,
     "document 3: the document is a sequence, not a mapping"},
    {"--- |\n  apiVersion: v1\n", -EBADMSG, "document 1: the document is a string, not a mapping"},
    {"# Source: m/templates/n.yaml\n42\n", -EBADMSG,
     "m/templates/n.yaml: the document is a number, not a mapping"},
    {"---\n# Source: mod/templates/list.yaml\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n"
     "  kind: ConfigMap\n  metadata: {name: a}\n- apiVersion: v1\n  metadata: {name: b}\n",
     -EBADMSG, "mod/templates/list.yaml: items[1]: kind is missing"},
    {"---\n# Source: mod/templates/list.yaml\napiVersion: v1\nkind: List\nitems:\n- x\n", -EBADMSG,
     "mod/templates/list.yaml: items[0] is a string, not a mapping"},
    {"---\n# Source: mod/templates/list.yaml\nkind: List\nitems: []\n", -EBADMSG,
     "mod/templates/list.yaml: apiVersion is missing"},
    {"---\n# Source: mod/templates/list.yaml\napiVersion: v1\nkind: List\nitems:\n- apiVersion: v1\n"
     "  kind: List\n  items: []\n",
     -EBADMSG, "mod/templates/list.yaml: items[0]: metadata.name is missing"},
    {"---\n# Source: mod/templates/cm.yaml\n" CM "metadata:\n  name: a\n  name: b\n", -EBADMSG,
     "mod/templates/cm.yaml: rendered manifest:7:3: duplicate key 'name'"},
    {"---\n# Source: a/templates/a.yaml\n" CM "metadata: {name: a}\n---\n# Source: b/templates/b.yaml\n" CM
     "metadata: {name: *x}\n",
     -EBADMSG, "b/templates/b.yaml: rendered manifest:10:18: unknown anchor 'x'"},
    {"---\n# Source: mod/templates/cm.yaml\n" CM "metadata: [\n", -EBADMSG,
     "rendered manifest:6:1: did not find expected node content (while parsing a flow node that starts at "
     "6:1)"},
    {"---\n# Source: mod/templates/cm.yaml\napiVersion: v1\nkind: \"x\n---\n", -EBADMSG,
     "rendered manifest:5:1: found unexpected document indicator (while scanning a quoted scalar that starts "
     "at 4:7)"},
    {"# Source: mod/\x01templates/cm.yaml\n", -EBADMSG,
     "rendered manifest:1:15: control characters are not allowed (0x1)"},
    {"\xFF\xFE-\0-\0-\0\n\0", -EBADMSG, "rendered manifest: UTF-16 is not supported"},
    {"---\n# Source: mod/templates/\t\xE2\x80\x94 weird.yaml\t \n" CM, -EBADMSG,
     "mod/templates/\\t\xE2\x80\x94 weird.yaml: metadata.name is missing"},
};

static void test_manifest_errors(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(manifest_errors); i++) {
                const char *text = manifest_errors[i].text;
                size_t len = strlen(text);
                struct ao_helm_manifest m = {.n = 99};
                struct ao_error err = {0};

                if (strncmp(text, "\xFF\xFE", 2) == 0)
                        len = 9;
                int r = ao_helm_manifest_parse(text, len, &m, &err);
                tap_is_int(r, manifest_errors[i].code, "manifest error %zu: code", i);
                tap_is_str(err.msg, manifest_errors[i].msg, "manifest error %zu: message", i);
                tap_ok(m.n == 99 && m.objects == NULL, "manifest error %zu: result untouched", i);
        }

        /* reterr may be NULL: only the code comes back. */
        static const char dup[] = "---\n# Source: m/templates/a.yaml\n" CM "metadata: {name: a, name: b}\n";
        struct ao_helm_manifest none = {0};
        tap_is_int(ao_helm_manifest_parse(dup, strlen(dup), &none, NULL), -EBADMSG,
                   "NULL reterr: YAML error");
        tap_is_int(ao_helm_manifest_parse(CM, strlen(CM), &none, NULL), -EBADMSG, "NULL reterr: no name");
        tap_is_int(ao_helm_manifest_parse("[[", 2, &none, NULL), -EBADMSG, "NULL reterr: syntax error");
        struct ao_helm_revision rev = {0};
        tap_is_int(ao_helm_parse_history("[1]", 3, &rev, NULL), -EBADMSG, "NULL reterr: history");
        struct ao_helm_version v = {0};
        tap_is_int(ao_helm_parse_version("x", 1, &v, NULL), -EBADMSG, "NULL reterr: version");

        /* A long source path is cut in the message. */
        char text[1024] = "---\n# Source: ";
        for (int i = 0; i < 30; i++)
                strcat(text, "0123456789");
        strcat(text, "\n" CM);
        struct ao_helm_manifest m = {0};
        struct ao_error err = {0};
        tap_is_int(ao_helm_manifest_parse(text, strlen(text), &m, &err), -EBADMSG, "long source: code");
        char want[512] = "";
        for (int i = 0; i < 20; i++)
                strcat(want, "0123456789");
        strcat(want, "...: metadata.name is missing");
        tap_is_str(err.msg, want, "long source: cut to 200 bytes");

        /* Nesting beyond the loader's limit stops the first pass too. */
        char deep[1200];
        memset(deep, '[', 600);
        deep[600] = '\0';
        tap_is_int(ao_helm_manifest_parse(deep, strlen(deep), &m, &err), -E2BIG, "deep nesting: code");
        tap_is_str(err.msg, "rendered manifest:1:257: nesting deeper than 256 levels",
                   "deep nesting: message");
}

/* ---- checksum ------------------------------------------------------------------------------------ */

static void test_checksum(void)
{
        char out[33];

        ao_helm_checksum("", 0, out);
        tap_is_str(out, "d41d8cd98f00b204e9800998ecf8427e", "md5 of ''");
        ao_helm_checksum("The quick brown fox jumps over the lazy dog", 43, out);
        tap_is_str(out, "9e107d9d372bb6826bd81d3542a419d6", "md5 of the quick brown fox");
        ao_helm_checksum("abc\0def", 7, out);
        tap_is_str(out, "a5e4d5963ae44c1f4bfb37b1a3d55a3c", "md5 counts bytes after a NUL");
        ao_helm_checksum(manifest, strlen(manifest), out);
        tap_is_int(strspn(out, "0123456789abcdef"), 32, "md5 of the manifest: 32 hex digits");
}

int main(void)
{
        test_history();
        test_list();
        test_values();
        test_version();
        test_errors();
        test_manifest();
        test_manifest_errors();
        test_checksum();
        return tap_done();
}
