/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tests for src/hooks/config*.c, selector.c and the jqFilter check: every binding
 * type in v0 and v1 as ao_hook_config_to_json() renders it (compared as
 * canonical JSON; expectations are written as YAML flow mappings for
 * legibility), defaults, the waitForSynchronization rule, executeHookOnEvent
 * versus watchEvent, v0 conversions, the struct fields behind the JSON,
 * every class of invalid configuration with its exact message, the limits,
 * selector query strings and the binding-type names. Every valid case is
 * also parsed a second time from its own JSON rendering, which must give the
 * same JSON.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../tap.h"
#include "ao/hook-config.h"
#include "ao/strbuf.h"
#include "ao/yaml.h"

#define HOOK "hooks/test.sh"

#define G AO_HOOK_GLOBAL
#define M AO_HOOK_MODULE

#define NO_SETTINGS "settings: {executionBurst: 1, executionMinPeriod: 0s}"

/* The defaults of a v1 kubernetes binding without queue, filter or selectors. */
#define KUBE_DEFAULTS                                                                          \
        "executeHookOnEvent: [Added, Modified, Deleted], executeHookOnSynchronization: true, " \
        "waitForSynchronization: true, keepFullObjectsInMemory: true, allowFailure: false, queue: main"

struct ok_case {
        const char *name;
        enum ao_hook_kind kind;
        const char *text; /* the hook's --config output */
        const char *want; /* to_json() result, as YAML */
};

struct fail_case {
        const char *name;
        enum ao_hook_kind kind;
        const char *text;
        int code;
        const char *msg;
};

/* ---- valid configurations, v1 ------------------------------------------------------------------------ */

static const struct ok_case v1_cases[] = {
    {"v1 onStartup only, JSON", G, "{\"configVersion\": \"v1\", \"onStartup\": 10}",
     "{configVersion: v1, kind: global, onStartup: 10, " NO_SETTINGS "}"},
    {"v1 global orders; onStartup may be negative", G,
     "configVersion: v1\nonStartup: -5\nbeforeAll: 0\nafterAll: 2\n",
     "{configVersion: v1, kind: global, onStartup: -5, beforeAll: 0, afterAll: 2, " NO_SETTINGS "}"},
    {"v1 module orders, YAML integer forms", M,
     "configVersion: v1\nonStartup: 0x10\nbeforeHelm: 1_000\nafterHelm: 2.0\nbeforeDeleteHelm: 3\n"
     "afterDeleteHelm: 9007199254740991\n",
     "{configVersion: v1, kind: module, onStartup: 16, beforeHelm: 1000, afterHelm: 2, beforeDeleteHelm: 3, "
     "afterDeleteHelm: 9007199254740991, " NO_SETTINGS "}"},
    {"v1 schedule in a zone", G, "configVersion: v1\nschedule:\n- crontab: 'TZ=Europe/Berlin */5 * * * *'\n",
     "{configVersion: v1, kind: global, schedule: [{name: schedule, crontab: 'TZ=Europe/Berlin */5 * * * *', "
     "allowFailure: false, queue: main}], " NO_SETTINGS "}"},
    {"v1 schedule defaults", G, "configVersion: v1\nschedule:\n- crontab: '*/5 * * * *'\n",
     "{configVersion: v1, kind: global, schedule: [{name: schedule, crontab: '*/5 * * * *', allowFailure: "
     "false, "
     "queue: main}], " NO_SETTINGS "}"},
    {"v1 schedule, every field", M,
     "configVersion: v1\n"
     "schedule:\n"
     "- name: every-second\n"
     "  crontab: '* * * * * *'\n"
     "  allowFailure: true\n"
     "  queue: slow\n"
     "  group: pods\n"
     "  includeSnapshotsFrom: [pods, nodes]\n"
     "- {name: '', crontab: '@every 1m', group: ''}\n"
     "kubernetes:\n"
     "- {name: pods, kind: Pod}\n"
     "- {name: nodes, kind: Node}\n",
     "{configVersion: v1, kind: module, "
     "schedule: [{name: every-second, crontab: '* * * * * *', allowFailure: true, queue: slow, group: pods, "
     "includeSnapshotsFrom: [pods, nodes]}, "
     "{name: schedule, crontab: '@every 1m', allowFailure: false, queue: main}], "
     "kubernetes: [{name: pods, kind: Pod, " KUBE_DEFAULTS "}, {name: nodes, kind: Node, " KUBE_DEFAULTS
     "}], " NO_SETTINGS "}"},
    {"v1 kubernetes defaults, JSON", G, "{\"configVersion\":\"v1\",\"kubernetes\":[{\"kind\":\"Pod\"}]}",
     "{configVersion: v1, kind: global, kubernetes: [{name: kubernetes, kind: Pod, " KUBE_DEFAULTS
     "}], " NO_SETTINGS "}"},
    {"v1 kubernetes, every field", G,
     "configVersion: v1\n"
     "kubernetes:\n"
     "- name: pods\n"
     "  apiVersion: v1\n"
     "  kind: Pod\n"
     "  executeHookOnEvent: [Modified, Added]\n"
     "  executeHookOnSynchronization: false\n"
     "  waitForSynchronization: false\n"
     "  keepFullObjectsInMemory: false\n"
     "  nameSelector: {matchNames: [a, b]}\n"
     "  labelSelector:\n"
     "    matchLabels: {tier: web, app: shop}\n"
     "    matchExpressions:\n"
     "    - {key: env, operator: In, values: [prod, stage]}\n"
     "    - {key: legacy, operator: DoesNotExist}\n"
     "    - {key: app.kubernetes.io/part-of, operator: NotIn, values: ['', a_b.C-9]}\n"
     "  fieldSelector:\n"
     "    matchExpressions:\n"
     "    - {field: status.phase, operator: NotEquals, value: Done}\n"
     "    - {field: spec.nodeName, operator: '==', value: node-1}\n"
     "  namespace:\n"
     "    nameSelector: {matchNames: [default]}\n"
     "    labelSelector: {matchExpressions: [{key: team, operator: Exists, values: []}]}\n"
     "  jqFilter: '.metadata.labels'\n"
     "  allowFailure: true\n"
     "  queue: pods-queue\n"
     "  group: g\n"
     "  includeSnapshotsFrom: [pods]\n"
     "  resynchronizationPeriod: 10m\n",
     "{configVersion: v1, kind: global, kubernetes: [{name: pods, apiVersion: v1, kind: Pod, "
     "executeHookOnEvent: [Added, Modified], executeHookOnSynchronization: false, waitForSynchronization: "
     "false, "
     "keepFullObjectsInMemory: false, allowFailure: true, queue: pods-queue, group: g, "
     "jqFilter: .metadata.labels, nameSelector: {matchNames: [a, b]}, "
     "labelSelector: {matchExpressions: [{key: app, operator: In, values: [shop]}, "
     "{key: tier, operator: In, values: [web]}, {key: env, operator: In, values: [prod, stage]}, "
     "{key: legacy, operator: DoesNotExist}, "
     "{key: app.kubernetes.io/part-of, operator: NotIn, values: ['', a_b.C-9]}]}, "
     "fieldSelector: {matchExpressions: [{field: status.phase, operator: '!=', value: Done}, "
     "{field: spec.nodeName, operator: '=', value: node-1}]}, "
     "namespace: {nameSelector: {matchNames: [default]}, "
     "labelSelector: {matchExpressions: [{key: team, operator: Exists}]}}, "
     "includeSnapshotsFrom: [pods], resynchronizationPeriod: 10m}], " NO_SETTINGS "}"},
    {"v1 waitForSynchronization false is forced back on without a queue", G,
     "configVersion: v1\n"
     "kubernetes:\n"
     "- {name: a, kind: Pod, waitForSynchronization: false}\n"
     "- {name: b, kind: Pod, waitForSynchronization: false, queue: main}\n"
     "- {name: c, kind: Pod, waitForSynchronization: true, queue: q}\n"
     "- {name: d, kind: Pod, queue: q}\n",
     "{configVersion: v1, kind: global, kubernetes: ["
     "{name: a, kind: Pod, " KUBE_DEFAULTS "}, "
     "{name: b, kind: Pod, executeHookOnEvent: [Added, Modified, Deleted], executeHookOnSynchronization: "
     "true, "
     "waitForSynchronization: false, keepFullObjectsInMemory: true, allowFailure: false, queue: main}, "
     "{name: c, kind: Pod, executeHookOnEvent: [Added, Modified, Deleted], executeHookOnSynchronization: "
     "true, "
     "waitForSynchronization: true, keepFullObjectsInMemory: true, allowFailure: false, queue: q}, "
     "{name: d, kind: Pod, executeHookOnEvent: [Added, Modified, Deleted], executeHookOnSynchronization: "
     "true, "
     "waitForSynchronization: true, keepFullObjectsInMemory: true, allowFailure: false, queue: "
     "q}], " NO_SETTINGS "}"},
    {"v1 executeHookOnEvent wins over watchEvent; [] means no events", G,
     "configVersion: v1\n"
     "kubernetes:\n"
     "- {name: watch, kind: Pod, watchEvent: [Deleted]}\n"
     "- {name: both, kind: Pod, watchEvent: [Deleted], executeHookOnEvent: [Added]}\n"
     "- {name: none, kind: Pod, executeHookOnEvent: []}\n"
     "- {name: none-watch, kind: Pod, watchEvent: []}\n"
     "- {name: empty-wins, kind: Pod, watchEvent: [Added], executeHookOnEvent: []}\n"
     "- {name: twice, kind: Pod, executeHookOnEvent: [Deleted, Deleted]}\n",
     "{configVersion: v1, kind: global, kubernetes: ["
     "{name: watch, kind: Pod, executeHookOnEvent: [Deleted], executeHookOnSynchronization: true, "
     "waitForSynchronization: true, keepFullObjectsInMemory: true, allowFailure: false, queue: main}, "
     "{name: both, kind: Pod, executeHookOnEvent: [Added], executeHookOnSynchronization: true, "
     "waitForSynchronization: true, keepFullObjectsInMemory: true, allowFailure: false, queue: main}, "
     "{name: none, kind: Pod, executeHookOnEvent: [], executeHookOnSynchronization: true, "
     "waitForSynchronization: true, keepFullObjectsInMemory: true, allowFailure: false, queue: main}, "
     "{name: none-watch, kind: Pod, executeHookOnEvent: [], executeHookOnSynchronization: true, "
     "waitForSynchronization: true, keepFullObjectsInMemory: true, allowFailure: false, queue: main}, "
     "{name: empty-wins, kind: Pod, executeHookOnEvent: [], executeHookOnSynchronization: true, "
     "waitForSynchronization: true, keepFullObjectsInMemory: true, allowFailure: false, queue: main}, "
     "{name: twice, kind: Pod, executeHookOnEvent: [Deleted], executeHookOnSynchronization: true, "
     "waitForSynchronization: true, keepFullObjectsInMemory: true, allowFailure: false, queue: "
     "main}], " NO_SETTINGS "}"},
    {"v1 includeSnapshotsFrom: itself and a later binding", G,
     "configVersion: v1\n"
     "kubernetes:\n"
     "- {name: a, kind: Pod, includeSnapshotsFrom: [a, b]}\n"
     "- {name: b, kind: Node}\n",
     "{configVersion: v1, kind: global, kubernetes: ["
     "{name: a, kind: Pod, " KUBE_DEFAULTS
     ", includeSnapshotsFrom: [a, b]}, {name: b, kind: Node, " KUBE_DEFAULTS "}], " NO_SETTINGS "}"},
    {"v1 empty strings mean not given; empty selectors are dropped", G,
     "configVersion: v1\n"
     "kubernetes:\n"
     "- name: ''\n"
     "  apiVersion: ''\n"
     "  kind: ConfigMap\n"
     "  group: ''\n"
     "  jqFilter: ''\n"
     "  resynchronizationPeriod: ''\n"
     "  nameSelector: {matchNames: []}\n"
     "  fieldSelector: {matchExpressions: []}\n"
     "  namespace: {nameSelector: {matchNames: []}}\n",
     "{configVersion: v1, kind: global, kubernetes: [{name: kubernetes, kind: ConfigMap, " KUBE_DEFAULTS
     "}], " NO_SETTINGS "}"},
    {"v1 an empty matchLabels is a selector that matches everything", G,
     "configVersion: v1\nkubernetes:\n- {kind: Pod, labelSelector: {matchLabels: {}}}\n",
     "{configVersion: v1, kind: global, kubernetes: [{name: kubernetes, kind: Pod, " KUBE_DEFAULTS
     ", labelSelector: {matchExpressions: []}}], " NO_SETTINGS "}"},
    {"v1 field operators are normalised", G,
     "configVersion: v1\nkubernetes:\n- kind: Pod\n  fieldSelector:\n    matchExpressions:\n"
     "    - {field: a, operator: '=', value: '1'}\n"
     "    - {field: b, operator: Equals, value: ''}\n"
     "    - {field: c, operator: '!=', value: '3'}\n",
     "{configVersion: v1, kind: global, kubernetes: [{name: kubernetes, kind: Pod, " KUBE_DEFAULTS
     ", fieldSelector: {matchExpressions: [{field: a, operator: '=', value: '1'}, "
     "{field: b, operator: '=', value: ''}, {field: c, operator: '!=', value: '3'}]}}], " NO_SETTINGS "}"},
    {"v1 one jqFilter shared by several bindings, apiVersion with a group", G,
     "configVersion: v1\nkubernetes:\n"
     "- {name: a, apiVersion: apps/v1, kind: Deployment, jqFilter: '{name: .metadata.name}'}\n"
     "- {name: b, apiVersion: apps/v1, kind: StatefulSet, jqFilter: '{name: .metadata.name}'}\n",
     "{configVersion: v1, kind: global, kubernetes: ["
     "{name: a, apiVersion: apps/v1, kind: Deployment, " KUBE_DEFAULTS
     ", jqFilter: '{name: .metadata.name}'}, "
     "{name: b, apiVersion: apps/v1, kind: StatefulSet, " KUBE_DEFAULTS
     ", jqFilter: '{name: .metadata.name}'}], " NO_SETTINGS "}"},
    {"v1 YAML anchors and merge keys", G,
     "configVersion: v1\n"
     "kubernetes:\n"
     "- &base {name: a, kind: Pod, queue: q, executeHookOnEvent: [Added]}\n"
     "- <<: *base\n"
     "  name: b\n",
     "{configVersion: v1, kind: global, kubernetes: ["
     "{name: a, kind: Pod, executeHookOnEvent: [Added], executeHookOnSynchronization: true, "
     "waitForSynchronization: true, keepFullObjectsInMemory: true, allowFailure: false, queue: q}, "
     "{name: b, kind: Pod, executeHookOnEvent: [Added], executeHookOnSynchronization: true, "
     "waitForSynchronization: true, keepFullObjectsInMemory: true, allowFailure: false, queue: "
     "q}], " NO_SETTINGS "}"},
    {"v1 settings: executionMinPeriod", G,
     "configVersion: v1\nonStartup: 1\nsettings: {executionMinPeriod: 1m30s, executionBurst: 3}\n",
     "{configVersion: v1, kind: global, onStartup: 1, settings: {executionMinPeriod: 1m30s, executionBurst: "
     "3}}"},
    {"v1 settings: executionMinInterval (the Go name), burst only", G,
     "{\"configVersion\":\"v1\",\"onStartup\":1,\"settings\":{\"executionMinInterval\":\"500ms\"}}",
     "{configVersion: v1, kind: global, onStartup: 1, settings: {executionMinPeriod: 500ms, executionBurst: "
     "1}}"},
    {"v1 settings alone are a configuration (minProperties 2)", G,
     "configVersion: v1\nsettings: {executionBurst: 2147483647}\n",
     "{configVersion: v1, kind: global, settings: {executionMinPeriod: 0s, executionBurst: 2147483647}}"},
    {"v1 ignored webhook bindings", M,
     "configVersion: v1\n"
     "kubernetesValidating: [{name: a.example.com, rules: []}]\n"
     "kubernetesMutating: [{name: b, anything: [1, 2]}]\n"
     "kubernetesCustomResourceConversion: [{name: c, crdName: x}]\n",
     "{configVersion: v1, kind: module, ignored: [kubernetesValidating, kubernetesMutating, "
     "kubernetesCustomResourceConversion], " NO_SETTINGS "}"},
};

/* Go duration spellings, as executionMinPeriod gives them back. */
static const struct {
        const char *in, *out;
} durations[] = {
    {"0", "0s"},
    {"0s", "0s"},
    {"+5s", "5s"},
    {"1ns", "1\xc2\xb5s"},
    {"1us", "1\xc2\xb5s"},
    {"999\xc2\xb5s", "999\xc2\xb5s"},
    {"3\xce\xbcs", "3\xc2\xb5s"},
    {"1ms", "1ms"},
    {"1.5ms", "1.5ms"},
    {"1500us", "1.5ms"},
    {"999999us", "999.999ms"},
    {"1s", "1s"},
    {"1.5s", "1.5s"},
    {".5s", "500ms"},
    {"1.s", "1s"},
    {"90s", "1m30s"},
    {"1m30s", "1m30s"},
    {"2h", "2h0m0s"},
    {"1h1m1.000001s", "1h1m1.000001s"},
    {"1.5h", "1h30m0s"},
    {"2562047h47m16.854775807s", "2562047h47m16.854776s"},
};

/* ---- valid configurations, v0 ------------------------------------------------------------------------ */

static const struct ok_case v0_cases[] = {
    {"v0 onStartup, no configVersion", G, "onStartup: 1\n",
     "{configVersion: v0, kind: global, onStartup: 1, " NO_SETTINGS "}"},
    {"v0 explicit configVersion, schedule", G,
     "{\"configVersion\":\"v0\",\"schedule\":[{\"name\":\"tick\",\"crontab\":\"*/10 * * * * *\","
     "\"allowFailure\":true},{\"crontab\":\"@hourly\"}]}",
     "{configVersion: v0, kind: global, schedule: [{name: tick, crontab: '*/10 * * * * *', allowFailure: "
     "true, "
     "queue: main}, {name: schedule, crontab: '@hourly', allowFailure: false, queue: main}], " NO_SETTINGS
     "}"},
    {"v0 global beforeAll and afterAll", G, "beforeAll: 1\nafterAll: 2\n",
     "{configVersion: v0, kind: global, beforeAll: 1, afterAll: 2, " NO_SETTINGS "}"},
    {"v0 module beforeHelm, afterHelm, afterDeleteHelm", M,
     "beforeHelm: 1\nafterHelm: 2\nafterDeleteHelm: 3\n",
     "{configVersion: v0, kind: module, beforeHelm: 1, afterHelm: 2, afterDeleteHelm: 3, " NO_SETTINGS "}"},
    {"v0 onKubernetesEvent defaults", G, "onKubernetesEvent:\n- kind: Pod\n",
     "{configVersion: v0, kind: global, kubernetes: [{name: onKubernetesEvent, kind: Pod, "
     "executeHookOnEvent: [Added, Modified, Deleted], executeHookOnSynchronization: false, "
     "waitForSynchronization: true, keepFullObjectsInMemory: false, allowFailure: false, queue: "
     "main}], " NO_SETTINGS "}"},
    {"v0 onKubernetesEvent, every field", M,
     "onKubernetesEvent:\n"
     "- name: pods\n"
     "  event: [delete, add]\n"
     "  kind: pod\n"
     "  selector:\n"
     "    matchLabels: {app: web}\n"
     "    matchExpressions: [{key: tier, operator: NotIn, values: [db]}]\n"
     "  objectName: web-0\n"
     "  namespaceSelector: {matchNames: [prod, stage], any: false}\n"
     "  jqFilter: .spec\n"
     "  allowFailure: true\n"
     "  disableDebug: true\n",
     "{configVersion: v0, kind: module, kubernetes: [{name: pods, kind: pod, executeHookOnEvent: [Added, "
     "Deleted], "
     "executeHookOnSynchronization: false, waitForSynchronization: true, keepFullObjectsInMemory: false, "
     "allowFailure: true, queue: main, jqFilter: .spec, nameSelector: {matchNames: [web-0]}, "
     "labelSelector: {matchExpressions: [{key: app, operator: In, values: [web]}, "
     "{key: tier, operator: NotIn, values: [db]}]}, namespace: {nameSelector: {matchNames: [prod, "
     "stage]}}}], " NO_SETTINGS "}"},
    {"v0 namespaceSelector any, empty event list, empty objectName", G,
     "onKubernetesEvent:\n"
     "- {kind: Pod, namespaceSelector: {matchNames: [a], any: true}, event: [update], objectName: ''}\n"
     "- {kind: Pod, namespaceSelector: {any: false}, event: []}\n",
     "{configVersion: v0, kind: global, kubernetes: ["
     "{name: onKubernetesEvent, kind: Pod, executeHookOnEvent: [Modified], executeHookOnSynchronization: "
     "false, "
     "waitForSynchronization: true, keepFullObjectsInMemory: false, allowFailure: false, queue: main}, "
     "{name: onKubernetesEvent, kind: Pod, executeHookOnEvent: [], executeHookOnSynchronization: false, "
     "waitForSynchronization: true, keepFullObjectsInMemory: false, allowFailure: false, queue: "
     "main}], " NO_SETTINGS "}"},
    {"v0 empty lists are bindings too", G, "onStartup: 5\nschedule: []\nonKubernetesEvent: []\n",
     "{configVersion: v0, kind: global, onStartup: 5, " NO_SETTINGS "}"},
};

/* ---- invalid configurations --------------------------------------------------------------------------- */

#define V1 "configVersion: v1\n"
#define KUBE_ALLOWED                                                                                    \
        "name, apiVersion, kind, executeHookOnEvent, watchEvent, executeHookOnSynchronization, "        \
        "waitForSynchronization, keepFullObjectsInMemory, nameSelector, labelSelector, fieldSelector, " \
        "namespace, jqFilter, allowFailure, queue, group, includeSnapshotsFrom, resynchronizationPeriod"

static const struct fail_case fail_cases[] = {
    /* document and version */
    {"empty output", G, "", -EINVAL, HOOK ": the configuration must be an object, not null"},
    {"an array", G, "[{\"onStartup\": 1}]", -EINVAL,
     HOOK ": the configuration must be an object, not an array"},
    {"YAML syntax error", G, "onStartup: [1\n", -EINVAL,
     HOOK
     ": config:2:1: did not find expected ',' or ']' (while parsing a flow sequence that starts at 1:12)"},
    {"YAML duplicate key", G, "onStartup: 1\nonStartup: 2\n", -EINVAL,
     HOOK ": config:2:1: duplicate key 'onStartup'"},
    {"unknown version", G, "configVersion: v2\nonStartup: 1\n", -EINVAL,
     HOOK ": configVersion: 'v2' is not one of v0, v1"},
    {"version is case-sensitive", G, "configVersion: V1\nonStartup: 1\n", -EINVAL,
     HOOK ": configVersion: 'V1' is not one of v0, v1"},
    {"version not a string", G, "configVersion: 1\nonStartup: 1\n", -EINVAL,
     HOOK ": configVersion: must be a string, not a number"},
    {"v1 without bindings", G, V1, -EINVAL,
     HOOK ": no bindings: the configuration has no key besides configVersion"},
    {"v0 without bindings", M, "{}", -EINVAL,
     HOOK ": no bindings: the configuration has no key besides configVersion"},

    /* top-level keys */
    {"unknown top-level key, v1 global", G, V1 "onStartup: 1\nonstartup: 2\n", -EINVAL,
     HOOK ": unknown key 'onstartup' (allowed: configVersion, onStartup, beforeAll, afterAll, schedule, "
          "kubernetes, "
          "settings, kubernetesValidating, kubernetesMutating, kubernetesCustomResourceConversion)"},
    {"unknown top-level key, v1 module", M, V1 "beforeHelm: 1\nbindings: []\n", -EINVAL,
     HOOK
     ": unknown key 'bindings' (allowed: configVersion, onStartup, beforeHelm, afterHelm, beforeDeleteHelm, "
     "afterDeleteHelm, schedule, kubernetes, settings, kubernetesValidating, kubernetesMutating, "
     "kubernetesCustomResourceConversion)"},
    {"unknown top-level key, v0 global", G, "onStartup: 1\nmode: v0\n", -EINVAL,
     HOOK ": unknown key 'mode' (allowed: configVersion, onStartup, beforeAll, afterAll, schedule, "
          "onKubernetesEvent)"},
    {"beforeDeleteHelm is v1 only", M, "beforeHelm: 1\nbeforeDeleteHelm: 2\n", -EINVAL,
     HOOK ": beforeDeleteHelm: needs configVersion: v1 (this is a v0 configuration)"},
    {"v1 keys in a v0 configuration", G, "kubernetes:\n- kind: Pod\n", -EINVAL,
     HOOK ": kubernetes: needs configVersion: v1 (this is a v0 configuration)"},
    {"onKubernetesEvent in v1", G, V1 "onKubernetesEvent: []\n", -EINVAL,
     HOOK
     ": unknown key 'onKubernetesEvent' (allowed: configVersion, onStartup, beforeAll, afterAll, schedule, "
     "kubernetes, settings, kubernetesValidating, kubernetesMutating, kubernetesCustomResourceConversion)"},
    {"beforeHelm in a global hook, v1", G, V1 "beforeHelm: 1\n", -EINVAL,
     HOOK ": beforeHelm: only module hooks may use this binding"},
    {"beforeDeleteHelm in a global hook, v1", G, V1 "onStartup: 1\nbeforeDeleteHelm: 1\n", -EINVAL,
     HOOK ": beforeDeleteHelm: only module hooks may use this binding"},
    {"beforeAll in a module hook, v1", M, V1 "beforeAll: 1\n", -EINVAL,
     HOOK ": beforeAll: only global hooks may use this binding"},
    {"afterDeleteHelm in a global hook, v0", G, "afterDeleteHelm: 1\n", -EINVAL,
     HOOK ": afterDeleteHelm: only module hooks may use this binding"},
    {"afterAll in a module hook, v0", M, "afterAll: 1\n", -EINVAL,
     HOOK ": afterAll: only global hooks may use this binding"},

    /* orders */
    {"order as a string", G, V1 "onStartup: '10'\n", -EINVAL,
     HOOK ": onStartup: must be an integer, not a string"},
    {"order as a boolean", G, V1 "onStartup: yes\n", -EINVAL,
     HOOK ": onStartup: must be an integer, not a boolean"},
    {"order as null", M, "afterHelm: ~\n", -EINVAL, HOOK ": afterHelm: must be an integer, not null"},
    {"order with a fraction", G, V1 "onStartup: 1.5\n", -EINVAL, HOOK ": onStartup: 1.5 is not an integer"},
    {"order beyond 2^53", G, V1 "onStartup: 9007199254740992\n", -EINVAL,
     HOOK ": onStartup: 9007199254740992 is out of range (-2^53, 2^53)"},
    {"order below -2^53", G, "onStartup: -1e300\n", -EINVAL,
     HOOK ": onStartup: -1e+300 is out of range (-2^53, 2^53)"},
    {"order infinite", G, V1 "onStartup: .inf\n", -EINVAL,
     HOOK ": onStartup: must be an integer, not infinite"},
    {"order NaN", G, V1 "onStartup: .nan\n", -EINVAL, HOOK ": onStartup: must be an integer, not NaN"},
    {"negative beforeAll", G, V1 "beforeAll: -1\n", -EINVAL, HOOK ": beforeAll: must be at least 0, not -1"},
    {"negative afterHelm", M, "afterHelm: -3\n", -EINVAL, HOOK ": afterHelm: must be at least 0, not -3"},

    /* settings */
    {"settings not an object", G, V1 "settings: 5s\n", -EINVAL,
     HOOK ": settings: must be an object, not a string"},
    {"settings unknown key", G, V1 "settings: {executionMinTime: 1s}\n", -EINVAL,
     HOOK ": settings: unknown key 'executionMinTime' (allowed: executionMinPeriod, executionMinInterval, "
          "executionBurst)"},
    {"settings with both period names", G,
     V1 "settings: {executionMinPeriod: 1s, executionMinInterval: 2s}\n", -EINVAL,
     HOOK
     ": settings: executionMinPeriod and executionMinInterval are two names of one setting: give only one"},
    {"settings period not a duration", G, V1 "settings: {executionMinPeriod: 5 minutes}\n", -EINVAL,
     HOOK ": settings.executionMinPeriod: '5 minutes' is not a duration (e.g. 500ms, 1m30s, 2h)"},
    {"settings period without unit", G, V1 "settings: {executionMinInterval: '10'}\n", -EINVAL,
     HOOK ": settings.executionMinInterval: '10' is not a duration (e.g. 500ms, 1m30s, 2h)"},
    {"settings period negative", G, V1 "settings: {executionMinPeriod: -1s}\n", -EINVAL,
     HOOK ": settings.executionMinPeriod: '-1s' is not a duration (e.g. 500ms, 1m30s, 2h)"},
    {"settings period empty", G, V1 "settings: {executionMinPeriod: ''}\n", -EINVAL,
     HOOK ": settings.executionMinPeriod: '' is not a duration (e.g. 500ms, 1m30s, 2h)"},
    {"settings period a number", G, V1 "settings: {executionMinPeriod: 5}\n", -EINVAL,
     HOOK ": settings.executionMinPeriod: must be a string, not a number"},
    {"settings period too long", G, V1 "settings: {executionMinPeriod: 2562048h}\n", -ERANGE,
     HOOK ": settings.executionMinPeriod: '2562048h' is out of range"},
    {"settings burst 0", G, V1 "settings: {executionBurst: 0}\n", -EINVAL,
     HOOK ": settings.executionBurst: must be at least 1, not 0"},
    {"settings burst as a string", G, V1 "settings: {executionBurst: '3'}\n", -EINVAL,
     HOOK ": settings.executionBurst: must be an integer, not a string"},
    {"settings burst beyond int32", G, V1 "settings: {executionBurst: 2147483648}\n", -EINVAL,
     HOOK ": settings.executionBurst: must be at most 2147483647"},

    /* schedule */
    {"empty schedule array", G, V1 "schedule: []\n", -EINVAL, HOOK ": schedule: must not be empty"},
    {"schedule not an array", G, V1 "schedule: {crontab: '* * * * *'}\n", -EINVAL,
     HOOK ": schedule: must be an array, not an object"},
    {"schedule entry not an object", G, V1 "schedule: ['* * * * *']\n", -EINVAL,
     HOOK ": schedule[0]: must be an object, not a string"},
    {"missing crontab", G, V1 "schedule:\n- {crontab: '* * * * *'}\n- {name: x}\n", -EINVAL,
     HOOK ": schedule[1]: missing crontab"},
    {"bad crontab", G, V1 "schedule:\n- crontab: '61 * * * *'\n", -EINVAL,
     HOOK ": schedule[0].crontab: cron '61 * * * *': minute: value 61 out of range 0-59"},
    {"bad crontab, v0", G, "schedule:\n- crontab: '* * *'\n", -EINVAL,
     HOOK ": schedule[0].crontab: cron '* * *': expected 5 or 6 fields, got 3"},
    {"crontab in an unknown zone", G, V1 "schedule:\n- crontab: 'TZ=Mars/Base 0 6 * * *'\n", -ENOENT,
     HOOK ": schedule[0].crontab: cron 'TZ=Mars/Base 0 6 * * *': time zone 'Mars/Base': no such zone in "
          "/usr/share/zoneinfo"},
    {"crontab in a zone outside zoneinfo", G, V1 "schedule:\n- crontab: 'TZ=../../etc/passwd * * * * *'\n",
     -EINVAL,
     HOOK
     ": schedule[0].crontab: cron 'TZ=../../etc/passwd * * * * *': time zone '../../etc/passwd' is not a "
     "zone name (zones are named like Europe/Berlin)"},
    {"unknown schedule key", G, V1 "schedule:\n- {crontab: '* * * * *', allowfailure: true}\n", -EINVAL,
     HOOK ": schedule[0]: unknown key 'allowfailure' (allowed: name, crontab, allowFailure, queue, group, "
          "includeSnapshotsFrom)"},
    {"v1 schedule key in v0", G, "schedule:\n- {crontab: '* * * * *', queue: q}\n", -EINVAL,
     HOOK ": schedule[0]: unknown key 'queue' (allowed: name, crontab, allowFailure)"},
    {"schedule empty queue", G, V1 "schedule:\n- {crontab: '* * * * *', queue: ''}\n", -EINVAL,
     HOOK ": schedule[0].queue: must not be empty"},
    {"schedule allowFailure as a string", G, V1 "schedule:\n- {crontab: '* * * * *', allowFailure: 'true'}\n",
     -EINVAL, HOOK ": schedule[0].allowFailure: must be a boolean, not a string"},
    {"includeSnapshotsFrom unknown binding", G,
     V1 "kubernetes:\n- {name: pods, kind: Pod}\nschedule:\n- {crontab: '* * * * *', "
        "includeSnapshotsFrom: [pods, nodes]}\n",
     -EINVAL,
     HOOK
     ": schedule[0].includeSnapshotsFrom[1]: 'nodes' is not the name of a kubernetes binding of this hook"},
    {"includeSnapshotsFrom without kubernetes bindings", G,
     V1 "schedule:\n- {crontab: '* * * * *', includeSnapshotsFrom: [pods]}\n", -EINVAL,
     HOOK
     ": schedule[0].includeSnapshotsFrom[0]: 'pods' is not the name of a kubernetes binding of this hook"},
    {"includeSnapshotsFrom duplicate", G,
     V1 "kubernetes:\n- {name: pods, kind: Pod}\nschedule:\n- {crontab: '* * * * *', "
        "includeSnapshotsFrom: [pods, x, pods]}\n",
     -EINVAL, HOOK ": schedule[0].includeSnapshotsFrom[2]: 'pods' is listed twice"},
    {"includeSnapshotsFrom empty", G, V1 "schedule:\n- {crontab: '* * * * *', includeSnapshotsFrom: []}\n",
     -EINVAL, HOOK ": schedule[0].includeSnapshotsFrom: must not be empty"},
    {"includeSnapshotsFrom entry not a string", G,
     V1 "schedule:\n- {crontab: '* * * * *', includeSnapshotsFrom: [{name: a}]}\n", -EINVAL,
     HOOK ": schedule[0].includeSnapshotsFrom[0]: must be a string, not an object"},
    {"kubernetes includeSnapshotsFrom unknown binding", G,
     V1 "kubernetes:\n- {name: a, kind: Pod}\n- {name: b, kind: Pod, includeSnapshotsFrom: [a, c]}\n",
     -EINVAL,
     HOOK
     ": kubernetes[1].includeSnapshotsFrom[1]: 'c' is not the name of a kubernetes binding of this hook"},

    /* kubernetes */
    {"empty kubernetes array", G, V1 "kubernetes: []\n", -EINVAL, HOOK ": kubernetes: must not be empty"},
    {"kubernetes mode is not a key", G, V1 "kubernetes:\n- {kind: Pod, mode: v0}\n", -EINVAL,
     HOOK ": kubernetes[0]: unknown key 'mode' (allowed: " KUBE_ALLOWED ")"},
    {"kubernetes unknown key", G, V1 "kubernetes:\n- {kind: Pod}\n- {kind: Pod, labelselector: {}}\n",
     -EINVAL, HOOK ": kubernetes[1]: unknown key 'labelselector' (allowed: " KUBE_ALLOWED ")"},
    {"missing kind", G, V1 "kubernetes:\n- {name: pods}\n", -EINVAL, HOOK ": kubernetes[0]: missing kind"},
    {"empty kind", G, V1 "kubernetes:\n- {kind: ''}\n", -EINVAL,
     HOOK ": kubernetes[0].kind: must not be empty"},
    {"kind not a string", G, V1 "kubernetes:\n- {kind: [Pod]}\n", -EINVAL,
     HOOK ": kubernetes[0].kind: must be a string, not an array"},
    {"apiVersion with two slashes", G, V1 "kubernetes:\n- {kind: Deployment, apiVersion: apps/v1/x}\n",
     -EINVAL, HOOK ": kubernetes[0].apiVersion: 'apps/v1/x' is not a group/version (e.g. v1, apps/v1)"},
    {"apiVersion without group", G, V1 "kubernetes:\n- {kind: Pod, apiVersion: /v1}\n", -EINVAL,
     HOOK ": kubernetes[0].apiVersion: '/v1' is not a group/version (e.g. v1, apps/v1)"},
    {"apiVersion without version", G, V1 "kubernetes:\n- {kind: Pod, apiVersion: apps/}\n", -EINVAL,
     HOOK ": kubernetes[0].apiVersion: 'apps/' is not a group/version (e.g. v1, apps/v1)"},
    {"apiVersion with a space", G, V1 "kubernetes:\n- {kind: Pod, apiVersion: apps v1}\n", -EINVAL,
     HOOK ": kubernetes[0].apiVersion: 'apps v1' is not a group/version (e.g. v1, apps/v1)"},
    {"bad event name", G, V1 "kubernetes:\n- {kind: Pod, executeHookOnEvent: [Added, added]}\n", -EINVAL,
     HOOK ": kubernetes[0].executeHookOnEvent[1]: 'added' is not one of Added, Modified, Deleted"},
    {"bad watchEvent name, even with executeHookOnEvent", G,
     V1 "kubernetes:\n- {kind: Pod, executeHookOnEvent: [Added], watchEvent: [Create]}\n", -EINVAL,
     HOOK ": kubernetes[0].watchEvent[0]: 'Create' is not one of Added, Modified, Deleted"},
    {"events not a list", G, V1 "kubernetes:\n- {kind: Pod, executeHookOnEvent: Added}\n", -EINVAL,
     HOOK ": kubernetes[0].executeHookOnEvent: must be an array, not a string"},
    {"boolean as a string", G, V1 "kubernetes:\n- {kind: Pod, queue: q, waitForSynchronization: 'false'}\n",
     -EINVAL, HOOK ": kubernetes[0].waitForSynchronization: must be a boolean, not a string"},
    {"empty queue", G, V1 "kubernetes:\n- {kind: Pod, queue: ''}\n", -EINVAL,
     HOOK ": kubernetes[0].queue: must not be empty"},
    {"bad label operator", G,
     V1 "kubernetes:\n- {kind: Pod}\n- kind: Pod\n  labelSelector:\n    matchExpressions:\n"
        "    - {key: app, operator: in, values: [a]}\n",
     -EINVAL,
     HOOK ": kubernetes[1].labelSelector.matchExpressions[0].operator: 'in' is not one of In, NotIn, Exists, "
          "DoesNotExist"},
    {"In without values", G,
     V1 "kubernetes:\n- kind: Pod\n  labelSelector: {matchExpressions: [{key: app, operator: In}]}\n",
     -EINVAL,
     HOOK ": kubernetes[0].labelSelector.matchExpressions[0].values: must not be empty for operator In"},
    {"NotIn with empty values", G,
     V1 "kubernetes:\n- kind: Pod\n  labelSelector: {matchExpressions: [{key: app, operator: NotIn, values: "
        "[]}]}\n",
     -EINVAL,
     HOOK ": kubernetes[0].labelSelector.matchExpressions[0].values: must not be empty for operator NotIn"},
    {"Exists with values", G,
     V1 "kubernetes:\n- kind: Pod\n  labelSelector: {matchExpressions: [{key: app, operator: Exists, values: "
        "[a]}]}\n",
     -EINVAL,
     HOOK ": kubernetes[0].labelSelector.matchExpressions[0].values: must be empty for operator Exists"},
    {"DoesNotExist with values", G,
     V1 "kubernetes:\n- kind: Pod\n  namespace:\n    labelSelector:\n      matchExpressions:\n"
        "      - {key: app, operator: DoesNotExist, values: [a]}\n",
     -EINVAL,
     HOOK ": kubernetes[0].namespace.labelSelector.matchExpressions[0].values: must be empty for operator "
          "DoesNotExist"},
    {"label expression without key", G,
     V1 "kubernetes:\n- kind: Pod\n  labelSelector: {matchExpressions: [{operator: Exists}]}\n", -EINVAL,
     HOOK ": kubernetes[0].labelSelector.matchExpressions[0]: missing key"},
    {"label expression without operator", G,
     V1 "kubernetes:\n- kind: Pod\n  labelSelector: {matchExpressions: [{key: a}]}\n", -EINVAL,
     HOOK ": kubernetes[0].labelSelector.matchExpressions[0]: missing operator"},
    {"label expression unknown key", G,
     V1 "kubernetes:\n- kind: Pod\n  labelSelector: {matchExpressions: [{key: a, operator: In, value: b}]}\n",
     -EINVAL,
     HOOK ": kubernetes[0].labelSelector.matchExpressions[0]: unknown key 'value' (allowed: key, operator, "
          "values)"},
    {"empty labelSelector", G, V1 "kubernetes:\n- {kind: Pod, labelSelector: {}}\n", -EINVAL,
     HOOK ": kubernetes[0].labelSelector: needs matchLabels or matchExpressions"},
    {"matchLabels value not a string", G,
     V1 "kubernetes:\n- {kind: Pod, labelSelector: {matchLabels: {app: 1}}}\n", -EINVAL,
     HOOK ": kubernetes[0].labelSelector.matchLabels: value of 'app' must be a string, not a number"},
    {"matchLabels not an object", G, V1 "kubernetes:\n- {kind: Pod, labelSelector: {matchLabels: [app]}}\n",
     -EINVAL, HOOK ": kubernetes[0].labelSelector.matchLabels: must be an object, not an array"},
    {"matchLabels empty key", G, V1 "kubernetes:\n- {kind: Pod, labelSelector: {matchLabels: {'': a}}}\n",
     -EINVAL, HOOK ": kubernetes[0].labelSelector.matchLabels: empty key"},
    /* A ',' in a value would turn one requirement into two in the labelSelector query. */
    {"matchLabels value that is query syntax", G,
     V1 "kubernetes:\n- {kind: Pod, labelSelector: {matchLabels: {app: 'web,!admin'}}}\n", -EINVAL,
     HOOK
     ": kubernetes[0].labelSelector.matchLabels: label value 'web,!admin' of 'app' may only hold letters, "
     "digits, '-', '_' and '.'"},
    {"matchLabels key with a space", G,
     V1 "kubernetes:\n- {kind: Pod, labelSelector: {matchLabels: {'my app': web}}}\n", -EINVAL,
     HOOK ": kubernetes[0].labelSelector.matchLabels: label key 'my app' may only hold letters, digits, '-', "
          "'_' and '.'"},
    {"label key with an upper-case prefix", G,
     V1 "kubernetes:\n- {kind: Pod, labelSelector: {matchLabels: {Example.com/app: web}}}\n", -EINVAL,
     HOOK ": kubernetes[0].labelSelector.matchLabels: label key 'Example.com/app' has a prefix that is not a "
          "lowercase DNS subdomain"},
    {"label value longer than 63 characters", G,
     V1 "kubernetes:\n- kind: Pod\n  labelSelector: {matchExpressions: [{key: app, operator: In, values: "
        "[a, a123456789012345678901234567890123456789012345678901234567890123]}]}\n",
     -EINVAL,
     HOOK ": kubernetes[0].labelSelector.matchExpressions[0].values: label value "
          "'a123456789012345678901234567890123456789012345678901234567890123' of 'app' is longer than 63 "
          "characters"},
    {"label expression key ending in a dash", G,
     V1 "kubernetes:\n- kind: Pod\n  labelSelector: {matchExpressions: [{key: app-, operator: Exists}]}\n",
     -EINVAL,
     HOOK ": kubernetes[0].labelSelector.matchExpressions[0]: label key 'app-' must start and end with a "
          "letter or digit"},
    {"field name that is query syntax", G,
     V1 "kubernetes:\n- kind: Pod\n  fieldSelector: {matchExpressions: [{field: 'a=b,c', operator: '=', "
        "value: d}]}\n",
     -EINVAL,
     HOOK
     ": kubernetes[0].fieldSelector.matchExpressions[0].field: 'a=b,c' may only hold letters, digits, '.', "
     "'-' and '_'"},
    {"bad field operator", G,
     V1
     "kubernetes:\n- kind: Pod\n  fieldSelector: {matchExpressions: [{field: a, operator: '~', value: b}]}\n",
     -EINVAL,
     HOOK ": kubernetes[0].fieldSelector.matchExpressions[0].operator: '~' is not one of =, ==, Equals, !=, "
          "NotEquals"},
    {"field expression with an extra key", G,
     V1 "kubernetes:\n- kind: Pod\n  fieldSelector:\n    matchExpressions:\n"
        "    - {field: a, operator: '=', value: b, values: [c]}\n",
     -EINVAL,
     HOOK ": kubernetes[0].fieldSelector.matchExpressions[0]: unknown key 'values' (allowed: field, "
          "operator, value)"},
    {"field expression without value", G,
     V1 "kubernetes:\n- kind: Pod\n  fieldSelector: {matchExpressions: [{field: a, operator: '='}]}\n",
     -EINVAL, HOOK ": kubernetes[0].fieldSelector.matchExpressions[0]: missing value"},
    {"fieldSelector without matchExpressions", G, V1 "kubernetes:\n- {kind: Pod, fieldSelector: {}}\n",
     -EINVAL, HOOK ": kubernetes[0].fieldSelector: missing matchExpressions"},
    {"metadata.name field selector and nameSelector", G,
     V1 "kubernetes:\n- kind: Pod\n  nameSelector: {matchNames: [a]}\n"
        "  fieldSelector: {matchExpressions: [{field: metadata.name, operator: '=', value: b}]}\n",
     -EINVAL,
     HOOK ": kubernetes[0]: fieldSelector 'metadata.name' and nameSelector.matchNames exclude each other"},
    {"nameSelector unknown key", G, V1 "kubernetes:\n- {kind: Pod, nameSelector: {names: [a]}}\n", -EINVAL,
     HOOK ": kubernetes[0].nameSelector: unknown key 'names' (allowed: matchNames)"},
    {"nameSelector without matchNames", G, V1 "kubernetes:\n- {kind: Pod, nameSelector: {}}\n", -EINVAL,
     HOOK ": kubernetes[0].nameSelector: missing matchNames"},
    {"matchNames entry not a string", G,
     V1 "kubernetes:\n- {kind: Pod, nameSelector: {matchNames: [a, ~]}}\n", -EINVAL,
     HOOK ": kubernetes[0].nameSelector.matchNames[1]: must be a string, not null"},
    {"empty namespace selector", G, V1 "kubernetes:\n- {kind: Pod, namespace: {}}\n", -EINVAL,
     HOOK ": kubernetes[0].namespace: needs nameSelector or labelSelector"},
    {"namespace unknown key", G, V1 "kubernetes:\n- {kind: Pod, namespace: {matchNames: [a]}}\n", -EINVAL,
     HOOK ": kubernetes[0].namespace: unknown key 'matchNames' (allowed: nameSelector, labelSelector)"},
    {"bad jqFilter", G, V1 "kubernetes:\n- {kind: Pod, jqFilter: '.foo |'}\n", -EINVAL,
     HOOK
     ": kubernetes[0].jqFilter: '.foo |' does not compile: syntax error, unexpected $end (Unix shell quoting "
     "issues?) at <top-level>, line 1"},
    {"jqFilter with an undefined function", G,
     V1 "kubernetes:\n- {kind: Pod, jqFilter: 'nosuchfunction(1)'}\n", -EINVAL,
     HOOK
     ": kubernetes[0].jqFilter: 'nosuchfunction(1)' does not compile: nosuchfunction/1 is not defined at "
     "<top-level>, line 1"},
    {"jqFilter importing a module", G,
     V1 "kubernetes:\n- {kind: Pod, jqFilter: 'import \"no-such-module\" as m; .'}\n", -EINVAL,
     HOOK ": kubernetes[0].jqFilter: 'import \"no-such-module\" as m; .' does not compile: module not found: "
          "no-such-module"},
    {"jqFilter not a string", G, V1 "kubernetes:\n- {kind: Pod, jqFilter: 5}\n", -EINVAL,
     HOOK ": kubernetes[0].jqFilter: must be a string, not a number"},

    /* ignored webhook bindings */
    {"kubernetesValidating empty", G, V1 "kubernetesValidating: []\n", -EINVAL,
     HOOK ": kubernetesValidating: must not be empty"},
    {"kubernetesMutating entry without name", G, V1 "kubernetesMutating: [{rules: []}]\n", -EINVAL,
     HOOK ": kubernetesMutating[0]: missing name"},
    {"kubernetesCustomResourceConversion entry not an object", G,
     V1 "kubernetesCustomResourceConversion: [a]\n", -EINVAL,
     HOOK ": kubernetesCustomResourceConversion[0]: must be an object, not a string"},
    {"kubernetesValidating name not a string", G, V1 "kubernetesValidating: [{name: 5}]\n", -EINVAL,
     HOOK ": kubernetesValidating[0].name: must be a string, not a number"},

    /* v0 onKubernetesEvent */
    {"v0 bad event", G, "onKubernetesEvent:\n- {kind: Pod, event: [add, create]}\n", -EINVAL,
     HOOK ": onKubernetesEvent[0].event[1]: 'create' is not one of add, update, delete"},
    {"v0 v1 event name", G, "onKubernetesEvent:\n- {kind: Pod, event: [Added]}\n", -EINVAL,
     HOOK ": onKubernetesEvent[0].event[0]: 'Added' is not one of add, update, delete"},
    {"v0 missing kind", G, "onKubernetesEvent:\n- {event: [add]}\n", -EINVAL,
     HOOK ": onKubernetesEvent[0]: missing kind"},
    {"v0 unknown key", G, "onKubernetesEvent:\n- {kind: Pod, executeHookOnEvent: [Added]}\n", -EINVAL,
     HOOK ": onKubernetesEvent[0]: unknown key 'executeHookOnEvent' (allowed: name, event, kind, selector, "
          "objectName, namespaceSelector, jqFilter, allowFailure, disableDebug)"},
    {"v0 namespaceSelector unknown key", G,
     "onKubernetesEvent:\n- {kind: Pod, namespaceSelector: {all: true}}\n", -EINVAL,
     HOOK ": onKubernetesEvent[0].namespaceSelector: unknown key 'all' (allowed: matchNames, any)"},
    {"v0 namespaceSelector any not a boolean", G,
     "onKubernetesEvent:\n- {kind: Pod, namespaceSelector: {any: 'yes'}}\n", -EINVAL,
     HOOK ": onKubernetesEvent[0].namespaceSelector.any: must be a boolean, not a string"},
    {"v0 disableDebug not a boolean", G, "onKubernetesEvent:\n- {kind: Pod, disableDebug: 1}\n", -EINVAL,
     HOOK ": onKubernetesEvent[0].disableDebug: must be a boolean, not a number"},
    {"v0 selector with a bad operator", G,
     "onKubernetesEvent:\n- {kind: Pod, selector: {matchExpressions: [{key: a, operator: Equals, values: "
     "[b]}]}}\n",
     -EINVAL,
     HOOK ": onKubernetesEvent[0].selector.matchExpressions[0].operator: 'Equals' is not one of In, NotIn, "
          "Exists, "
          "DoesNotExist"},
    {"v0 objectName not a string", G, "onKubernetesEvent:\n- {kind: Pod, objectName: [a]}\n", -EINVAL,
     HOOK ": onKubernetesEvent[0].objectName: must be a string, not an array"},
    {"v0 bad jqFilter", M, "onKubernetesEvent:\n- {kind: Pod, jqFilter: '{a: }'}\n", -EINVAL,
     HOOK
     ": onKubernetesEvent[0].jqFilter: '{a: }' does not compile: syntax error, unexpected '}' (Unix shell "
     "quoting issues?) at <top-level>, line 1"},
    {"v0 onKubernetesEvent not an array", G, "onKubernetesEvent: {kind: Pod}\n", -EINVAL,
     HOOK ": onKubernetesEvent: must be an array, not an object"},

    /* what users write goes into messages escaped and cut */
    {"control characters are escaped", G, "{\"onStartup\": 1, \"a\\u0001b\\tc\": 2}", -EINVAL,
     HOOK ": unknown key 'a\\x01b\\x09c' (allowed: configVersion, onStartup, beforeAll, afterAll, schedule, "
          "onKubernetesEvent)"},
    {"long strings are cut", G,
     V1
     "kubernetes:\n- {kind: Pod, apiVersion: "
     "'a/b/"
     "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc'}\n",
     -EINVAL,
     HOOK ": kubernetes[0].apiVersion: "
          "'a/b/cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc...' "
          "is not a group/version (e.g. v1, apps/v1)"},
    {"long strings are cut at a character boundary", G,
     V1 "kubernetes:\n- {kind: Pod, apiVersion: "
        "'a/b/"
        "ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc\xc3\xa9\xc3\xa9\xc3\xa9'}\n",
     -EINVAL,
     HOOK ": kubernetes[0].apiVersion: "
          "'a/b/ccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc...' "
          "is not a group/version (e.g. v1, apps/v1)"},
};

/* ---- helpers -------------------------------------------------------------------------------------------- */

static char *canonical_yaml(const char *yaml)
{
        struct ao_error err = {0};
        cJSON *json = NULL;
        if (ao_yaml_load(yaml, strlen(yaml), "want", &json, &err) < 0) {
                tap_diag("expectation does not load: %s", err.msg);
                return NULL;
        }
        char *text = ao_json_canonical(json);
        cJSON_Delete(json);
        return text;
}

/* to_json() of @cfg as canonical text. */
static char *render(const struct ao_hook_config *cfg)
{
        cJSON *json = ao_hook_config_to_json(cfg);
        if (!json)
                return NULL;
        char *text = ao_json_canonical(json);
        cJSON_Delete(json);
        return text;
}

/*
 * Parse the JSON rendering of @cfg again (without kind and ignored, as v1)
 * and render that: it must be the same text, configVersion aside.
 */
static void check_round_trip(const char *name, const struct ao_hook_config *cfg)
{
        struct ao_hook_config again;
        struct ao_error err = {0};
        cJSON *first = ao_hook_config_to_json(cfg);
        int r;

        cJSON_DeleteItemFromObjectCaseSensitive(first, "kind");
        cJSON_DeleteItemFromObjectCaseSensitive(first, "ignored");
        cJSON_ReplaceItemInObjectCaseSensitive(first, "configVersion", cJSON_CreateString("v1"));
        r = ao_hook_config_from_json(first, HOOK, cfg->kind, &again, &err);
        if (!tap_ok(r == 0, "%s: its JSON parses again", name)) {
                tap_diag("%s", err.msg);
                cJSON_Delete(first);
                return;
        }
        cJSON *second = ao_hook_config_to_json(&again);
        cJSON_DeleteItemFromObjectCaseSensitive(second, "kind");
        char *a = ao_json_canonical(first), *b = ao_json_canonical(second);
        tap_is_str(b, a, "%s: and gives the same JSON", name);
        free(a);
        free(b);
        cJSON_Delete(first);
        cJSON_Delete(second);
        ao_hook_config_done(&again);
}

static void run_ok_cases(const struct ok_case *cases, size_t n)
{
        for (size_t i = 0; i < n; i++) {
                struct ao_hook_config cfg;
                struct ao_error err = {0};
                int r = ao_hook_config_parse(cases[i].text, strlen(cases[i].text), HOOK, cases[i].kind, &cfg,
                                             &err);
                if (!tap_ok(r == 0, "%s: parses", cases[i].name)) {
                        tap_diag("%s", err.msg);
                        continue;
                }
                char *got = render(&cfg), *want = canonical_yaml(cases[i].want);
                tap_is_str(got, want, "%s: JSON", cases[i].name);
                free(got);
                free(want);
                check_round_trip(cases[i].name, &cfg);
                ao_hook_config_done(&cfg);
        }
}

static void run_fail_case(const struct fail_case *c)
{
        struct ao_hook_config cfg = {.version = 42};
        struct ao_error err = {0};
        int r = ao_hook_config_parse(c->text, strlen(c->text), HOOK, c->kind, &cfg, &err);
        tap_is_int(r, c->code, "%s: fails with the code", c->name);
        tap_is_str(err.msg, c->msg, "%s: message", c->name);
        if (r == 0)
                ao_hook_config_done(&cfg);
        else if (cfg.version != 42)
                tap_ok(false, "%s: the result is untouched", c->name);
}

/* ---- tests ------------------------------------------------------------------------------------------------ */

static void test_durations(void)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(durations); i++) {
                char text[256], want[256];
                struct ao_hook_config cfg;
                struct ao_error err = {0};
                snprintf(text, sizeof(text), "configVersion: v1\nsettings: {executionMinPeriod: '%s'}\n",
                         durations[i].in);
                snprintf(want, sizeof(want), "{\"executionBurst\":1,\"executionMinPeriod\":\"%s\"}",
                         durations[i].out);
                if (!tap_ok(ao_hook_config_parse(text, strlen(text), HOOK, G, &cfg, &err) == 0,
                            "duration '%s' parses", durations[i].in)) {
                        tap_diag("%s", err.msg);
                        continue;
                }
                cJSON *json = ao_hook_config_to_json(&cfg);
                char *got = ao_json_canonical(cJSON_GetObjectItemCaseSensitive(json, "settings"));
                tap_is_str(got, want, "duration '%s' is written as '%s'", durations[i].in, durations[i].out);
                free(got);
                cJSON_Delete(json);
                ao_hook_config_done(&cfg);
        }

        /* Rounded up to whole microseconds, never down to "no period". */
        struct ao_hook_config cfg;
        const char *text = "configVersion: v1\nsettings: {executionMinInterval: 1ns}\n";
        if (ao_hook_config_parse(text, strlen(text), HOOK, G, &cfg, NULL) == 0) {
                tap_is_int(cfg.execution_min_period_usec, 1, "1ns rounds up to 1 microsecond");
                ao_hook_config_done(&cfg);
        }
        text = "configVersion: v1\nsettings: {executionMinPeriod: 2562047h47m16.854775807s, executionBurst: "
               "7}\n";
        if (ao_hook_config_parse(text, strlen(text), HOOK, G, &cfg, NULL) == 0) {
                tap_is_int(cfg.execution_min_period_usec, 9223372036854776ULL, "the longest Go duration");
                tap_is_int(cfg.execution_burst, 7, "burst");
                ao_hook_config_done(&cfg);
        }
        text = "configVersion: v1\nsettings: {executionMinPeriod: 2562047h47m16.854775808s}\n";
        tap_is_int(ao_hook_config_parse(text, strlen(text), HOOK, G, &cfg, NULL), -ERANGE,
                   "one nanosecond more is out of range");
        static const char *const bad[] = {"1",  "s",     ".s", "1.2.3s", "1 s", "1sec",
                                          "1d", "1h 2m", "+",  "-0",     "1e3s"};
        for (size_t i = 0; i < AO_ARRAY_SIZE(bad); i++) {
                char t[128];
                snprintf(t, sizeof(t), "configVersion: v1\nsettings: {executionMinPeriod: '%s'}\n", bad[i]);
                tap_is_int(ao_hook_config_parse(t, strlen(t), HOOK, G, &cfg, NULL), -EINVAL,
                           "'%s' is not a duration", bad[i]);
        }
}

static void test_struct_fields(void)
{
        static const char text[] =
            "configVersion: v1\n"
            "onStartup: 7\n"
            "afterHelm: 3\n"
            "kubernetes:\n"
            "- name: pods\n"
            "  kind: Pod\n"
            "  executeHookOnEvent: [Deleted, Added]\n"
            "  waitForSynchronization: false\n"
            "  labelSelector: {matchLabels: {b: '2', a: '1'}}\n"
            "- {name: cms, kind: ConfigMap, queue: cm, waitForSynchronization: false}\n"
            "schedule: [{crontab: '@daily'}]\n"
            "settings: {executionMinPeriod: 2s}\n";
        struct ao_hook_config cfg;
        struct ao_error err = {0};

        if (!tap_ok(ao_hook_config_parse(text, strlen(text), HOOK, M, &cfg, &err) == 0,
                    "module config parses")) {
                tap_diag("%s", err.msg);
                return;
        }
        tap_is_int(cfg.version, 1, "version 1");
        tap_is_int(cfg.kind, M, "kind module");
        tap_ok(cfg.has_order[AO_BINDING_ON_STARTUP] && cfg.order[AO_BINDING_ON_STARTUP] == 7, "onStartup 7");
        tap_ok(cfg.has_order[AO_BINDING_AFTER_HELM] && cfg.order[AO_BINDING_AFTER_HELM] == 3, "afterHelm 3");
        tap_ok(!cfg.has_order[AO_BINDING_BEFORE_HELM], "no beforeHelm");
        tap_ok(ao_hook_config_has(&cfg, AO_BINDING_ON_STARTUP), "has onStartup");
        tap_ok(ao_hook_config_has(&cfg, AO_BINDING_AFTER_HELM), "has afterHelm");
        tap_ok(!ao_hook_config_has(&cfg, AO_BINDING_BEFORE_HELM), "has no beforeHelm");
        tap_ok(!ao_hook_config_has(&cfg, AO_BINDING_BEFORE_ALL), "has no beforeAll");
        tap_ok(ao_hook_config_has(&cfg, AO_BINDING_SCHEDULE), "has schedule");
        tap_ok(ao_hook_config_has(&cfg, AO_BINDING_KUBERNETES), "has kubernetes");
        tap_ok(!ao_hook_config_has(&cfg, _AO_BINDING_TYPE_INVALID), "invalid type: no");
        tap_ok(!ao_hook_config_has(&cfg, _AO_BINDING_TYPE_MAX), "type out of range: no");
        tap_is_int(cfg.execution_min_period_usec, 2000000, "period 2s in microseconds");
        tap_is_int(cfg.execution_burst, 1, "burst default 1");
        tap_is_int(cfg.n_kubernetes, 2, "two kubernetes bindings");
        tap_is_int(cfg.kubernetes[0].event_mask, AO_WATCH_ADDED | AO_WATCH_DELETED, "event mask");
        tap_ok(!cfg.kubernetes[0].queue_given, "queue not given");
        tap_ok(cfg.kubernetes[0].wait_for_synchronization, "wait forced on");
        tap_ok(cfg.kubernetes[1].queue_given, "queue given");
        tap_ok(!cfg.kubernetes[1].wait_for_synchronization, "wait off on its own queue");
        tap_is_str(cfg.kubernetes[1].queue, "cm", "queue name");
        tap_ok(!cfg.kubernetes[0].api_version, "no apiVersion: NULL");
        tap_ok(!cfg.kubernetes[0].jq_filter && !cfg.kubernetes[0].group, "no jqFilter, no group: NULL");
        tap_ok(cfg.kubernetes[0].label_selector.present, "label selector present");
        tap_ok(!cfg.kubernetes[1].label_selector.present, "label selector absent");
        tap_ok(!cfg.kubernetes[0].namespace_labels.present, "namespace labels absent");
        tap_is_int(cfg.kubernetes[0].label_selector.n_requirements, 2, "two requirements");
        tap_is_str(cfg.kubernetes[0].label_selector.requirements[0].key, "a", "matchLabels sorted by key");
        tap_is_int(cfg.kubernetes[0].label_selector.requirements[0].op, AO_SELECTOR_IN, "matchLabels as In");
        tap_is_int(cfg.kubernetes[0].label_selector.requirements[0].values.n, 1, "with one value");
        tap_ok(ao_hook_config_find_kubernetes(&cfg, "cms") == &cfg.kubernetes[1], "find_kubernetes by name");
        tap_ok(!ao_hook_config_find_kubernetes(&cfg, "nope"), "find_kubernetes: unknown name");
        tap_ok(!ao_hook_config_find_kubernetes(&cfg, NULL), "find_kubernetes: NULL");
        tap_is_str(cfg.schedules[0].name, "schedule", "schedule default name");
        tap_ok(!cfg.schedules[0].group && cfg.schedules[0].include_snapshots_from.n == 0,
               "schedule without extras");
        tap_is_int(cfg.ignored.n, 0, "nothing ignored");
        ao_hook_config_done(&cfg);
        tap_ok(cfg.n_kubernetes == 0 && !cfg.kubernetes && !cfg.schedules, "done empties the struct");
        ao_hook_config_done(&cfg);
        ao_hook_config_done(NULL);
        tap_ok(true, "done twice and done(NULL) are harmless");

        static const char v0[] = "onKubernetesEvent:\n- {kind: Pod, objectName: web, event: [update]}\n";
        if (ao_hook_config_parse(v0, strlen(v0), HOOK, G, &cfg, NULL) == 0) {
                tap_is_int(cfg.version, 0, "v0: version 0");
                tap_is_int(cfg.kubernetes[0].event_mask, AO_WATCH_MODIFIED, "v0: update is Modified");
                tap_ok(!cfg.kubernetes[0].execute_hook_on_synchronization, "v0: no synchronization run");
                tap_ok(cfg.kubernetes[0].wait_for_synchronization, "v0: waits");
                tap_ok(!cfg.kubernetes[0].queue_given, "v0: queue not given");
                tap_is_str(cfg.kubernetes[0].queue, "main", "v0: main queue");
                tap_ok(cfg.kubernetes[0].name_selector.n == 1 &&
                           strcmp(cfg.kubernetes[0].name_selector.items[0], "web") == 0,
                       "v0: objectName becomes a name selector");
                tap_ok(!ao_hook_config_has(&cfg, AO_BINDING_SCHEDULE), "v0: no schedule");
                ao_hook_config_done(&cfg);
        } else {
                tap_ok(false, "v0 config parses");
        }
}

static void test_limits(void)
{
        struct ao_hook_config cfg = {.version = 42};
        struct ao_error err = {0};
        struct ao_strbuf sb = {0};
        int r;

        /* 600 schedules and 425 kubernetes bindings: one too many. */
        ao_strbuf_append(&sb, "{\"configVersion\":\"v1\",\"schedule\":[");
        for (int i = 0; i < 600; i++)
                ao_strbuf_appendf(&sb, "%s{\"crontab\":\"@daily\"}", i ? "," : "");
        ao_strbuf_append(&sb, "],\"kubernetes\":[");
        for (int i = 0; i < 425; i++)
                ao_strbuf_appendf(&sb, "%s{\"kind\":\"Pod\"}", i ? "," : "");
        ao_strbuf_append(&sb, "]}");
        r = ao_hook_config_parse(sb.buf, sb.len, HOOK, G, &cfg, &err);
        tap_is_int(r, -E2BIG, "too many bindings: -E2BIG");
        tap_is_str(err.msg, HOOK ": 1025 schedule and kubernetes bindings, more than the 1024 allowed",
                   "too many bindings: message");
        tap_is_int(cfg.version, 42, "too many bindings: result untouched");

        /* Exactly the limit is fine. */
        ao_strbuf_reset(&sb);
        ao_strbuf_append(&sb, "{\"configVersion\":\"v1\",\"kubernetes\":[");
        for (int i = 0; i < AO_HOOK_CONFIG_MAX_BINDINGS; i++)
                ao_strbuf_appendf(&sb,
                                  "%s{\"name\":\"b%d\",\"kind\":\"Pod\",\"includeSnapshotsFrom\":[\"b%d\"]}",
                                  i ? "," : "", i, AO_HOOK_CONFIG_MAX_BINDINGS - 1 - i);
        ao_strbuf_append(&sb, "]}");
        r = ao_hook_config_parse(sb.buf, sb.len, HOOK, G, &cfg, &err);
        tap_is_int(r, 0, "1024 bindings, each including another: fine");
        if (r == 0) {
                tap_is_int(cfg.n_kubernetes, AO_HOOK_CONFIG_MAX_BINDINGS, "all of them");
                ao_hook_config_done(&cfg);
        }

        /* List entries of all bindings together. */
        ao_strbuf_reset(&sb);
        ao_strbuf_append(&sb, "{\"configVersion\":\"v1\",\"kubernetes\":[{\"kind\":\"Pod\",\"nameSelector\":"
                              "{\"matchNames\":[");
        for (int i = 0; i <= AO_HOOK_CONFIG_MAX_ITEMS; i++)
                ao_strbuf_appendf(&sb, "%s\"\"", i ? "," : "");
        ao_strbuf_append(&sb, "]}}]}");
        r = ao_hook_config_parse(sb.buf, sb.len, HOOK, G, &cfg, &err);
        tap_is_int(r, -E2BIG, "too many list entries: -E2BIG");
        tap_is_str(err.msg,
                   HOOK
                   ": kubernetes[0].nameSelector.matchNames: too many list entries: more than 65536 in the "
                   "configuration",
                   "too many list entries: message");

        /* Input size. */
        ao_strbuf_reset(&sb);
        ao_strbuf_append(&sb, "onStartup: 1\n");
        while (sb.len <= AO_HOOK_CONFIG_MAX_INPUT)
                ao_strbuf_append(&sb, "# padding padding padding padding padding padding padding padding\n");
        r = ao_hook_config_parse(sb.buf, sb.len, HOOK, G, &cfg, &err);
        tap_is_int(r, -EFBIG, "too large input: -EFBIG");
        tap_is_str(err.msg, HOOK ": the configuration is larger than 4194304 bytes",
                   "too large input: message");
        r = ao_hook_config_parse(sb.buf, AO_HOOK_CONFIG_MAX_INPUT, HOOK, G, &cfg, &err);
        tap_is_int(r, 0, "an input of exactly the limit is read");
        if (r == 0)
                ao_hook_config_done(&cfg);
        ao_strbuf_done(&sb);
}

static void test_from_json(void)
{
        struct ao_hook_config cfg;
        struct ao_error err = {0};
        cJSON *doc;
        int r;

        /* cJSON_Parse keeps duplicate keys; ao_yaml_load would have refused them. */
        doc = cJSON_Parse("{\"onStartup\":1,\"onStartup\":2}");
        r = ao_hook_config_from_json(doc, HOOK, G, &cfg, &err);
        tap_is_int(r, -EINVAL, "from_json: duplicate key refused");
        tap_is_str(err.msg, HOOK ": key 'onStartup' is given twice", "from_json: duplicate key message");
        cJSON_Delete(doc);

        doc = cJSON_Parse("{\"configVersion\":\"v1\",\"kubernetes\":[{\"kind\":\"Pod\",\"labelSelector\":"
                          "{\"matchLabels\":{\"a\":\"1\",\"a\":\"2\"}}}]}");
        r = ao_hook_config_from_json(doc, HOOK, G, &cfg, &err);
        tap_is_str(err.msg, HOOK ": kubernetes[0].labelSelector.matchLabels: key 'a' is given twice",
                   "from_json: duplicate label refused");
        cJSON_Delete(doc);

        r = ao_hook_config_from_json(NULL, HOOK, G, &cfg, &err);
        tap_is_str(err.msg, HOOK ": the configuration must be an object, not an invalid value",
                   "from_json: NULL");

        doc = cJSON_Parse("{\"onStartup\":1}");
        r = ao_hook_config_from_json(doc, NULL, G, &cfg, &err);
        tap_is_int(r, 0, "from_json: no hook name is fine");
        if (r == 0)
                ao_hook_config_done(&cfg);
        r = ao_hook_config_from_json(doc, HOOK, (enum ao_hook_kind) 7, &cfg, &err);
        tap_is_int(r, -EINVAL, "from_json: invalid kind");
        tap_is_str(err.msg, HOOK ": invalid hook kind 7", "from_json: invalid kind message");
        cJSON_Delete(doc);

        r = ao_hook_config_parse("onStartup: x", 12, HOOK, G, &cfg, NULL);
        tap_is_int(r, -EINVAL, "no reterr: only the code");
        r = ao_hook_config_parse("{\"a\":1}", 7, "hooks/\x1b[31mred", G, &cfg, &err);
        tap_is_str(err.msg,
                   "hooks/\\x1b[31mred: unknown key 'a' (allowed: configVersion, onStartup, beforeAll, "
                   "afterAll, schedule, onKubernetesEvent)",
                   "hook names are escaped too");
        r = ao_hook_config_parse("onStartup: 3\0garbage", 12, HOOK, G, &cfg, &err);
        tap_is_int(r, 0, "only len bytes are read");
        if (r == 0)
                ao_hook_config_done(&cfg);
}

static char *format_labels(const char *yaml)
{
        struct ao_hook_config cfg;
        struct ao_error err = {0};
        char text[1024];
        snprintf(text, sizeof(text), "configVersion: v1\nkubernetes:\n- kind: Pod\n  labelSelector: %s\n",
                 yaml);
        if (ao_hook_config_parse(text, strlen(text), HOOK, G, &cfg, &err) < 0) {
                tap_diag("%s", err.msg);
                return NULL;
        }
        char *s = ao_label_selector_format(&cfg.kubernetes[0].label_selector);
        ao_hook_config_done(&cfg);
        return s;
}

static void test_selector_format(void)
{
        static const struct {
                const char *yaml, *want;
        } labels[] = {
            {"{matchLabels: {}}", ""},
            {"{matchLabels: {app: web}}", "app=web"},
            {"{matchLabels: {tier: db, app: web}}", "app=web,tier=db"},
            {"{matchLabels: {app: web}, matchExpressions: [{key: tier, operator: In, values: [a, b]}, "
             "{key: legacy, operator: DoesNotExist}]}",
             "app=web,tier in (a,b),!legacy"},
            {"{matchExpressions: [{key: env, operator: NotIn, values: [dev]}, {key: canary, operator: "
             "Exists}]}",
             "env notin (dev),canary"},
            {"{matchExpressions: [{key: one, operator: In, values: [x]}, {key: two, operator: NotIn, values: "
             "[a, b]}]}",
             "one=x,two notin (a,b)"},
        };
        for (size_t i = 0; i < AO_ARRAY_SIZE(labels); i++) {
                char *got = format_labels(labels[i].yaml);
                tap_is_str(got, labels[i].want, "label selector %s", labels[i].yaml);
                free(got);
        }

        char *s = ao_label_selector_format(NULL);
        tap_is_str(s, "", "label selector NULL: empty");
        free(s);
        struct ao_label_selector empty = {0};
        s = ao_label_selector_format(&empty);
        tap_is_str(s, "", "label selector absent: empty");
        free(s);

        static const char text[] = "configVersion: v1\nkubernetes:\n- kind: Pod\n  fieldSelector:\n"
                                   "    matchExpressions:\n"
                                   "    - {field: metadata.name, operator: Equals, value: x}\n"
                                   "    - {field: status.phase, operator: NotEquals, value: Done}\n"
                                   "    - {field: metadata.namespace, operator: '==', value: 'a,b=c\\d'}\n"
                                   "    - {field: spec.nodeName, operator: '!=', value: ''}\n";
        struct ao_hook_config cfg;
        struct ao_error err = {0};
        if (ao_hook_config_parse(text, strlen(text), HOOK, G, &cfg, &err) == 0) {
                const struct ao_kubernetes_binding *b = &cfg.kubernetes[0];
                s = ao_field_selector_format(b->field_selector, b->n_field_selector);
                tap_is_str(
                    s, "metadata.name=x,status.phase!=Done,metadata.namespace=a\\,b\\=c\\\\d,spec.nodeName!=",
                    "field selector, values escaped");
                free(s);
                s = ao_field_selector_format(b->field_selector, 1);
                tap_is_str(s, "metadata.name=x", "field selector, one requirement");
                free(s);
                ao_hook_config_done(&cfg);
        } else {
                tap_ok(false, "field selector config parses: %s", err.msg);
        }
        s = ao_field_selector_format(NULL, 0);
        tap_is_str(s, "", "field selector: none");
        free(s);

        struct ao_strv v = {0};
        ao_strv_done(&v);
        ao_strv_done(NULL);
        tap_ok(true, "ao_strv_done on empty and NULL");
}

static void test_binding_type_names(void)
{
        static const char *const names[] = {"onStartup",       "beforeAll", "afterAll",
                                            "beforeHelm",      "afterHelm", "beforeDeleteHelm",
                                            "afterDeleteHelm", "schedule",  "kubernetes"};
        for (size_t i = 0; i < AO_ARRAY_SIZE(names); i++) {
                tap_is_str(ao_binding_type_to_string((enum ao_binding_type) i), names[i], "binding type %zu",
                           i);
                tap_is_int(ao_binding_type_from_string(names[i]), i, "binding type '%s'", names[i]);
        }
        tap_ok(AO_ARRAY_SIZE(names) == _AO_BINDING_TYPE_MAX, "every binding type named");
        tap_ok(!ao_binding_type_to_string(_AO_BINDING_TYPE_MAX), "no name past the end");
        tap_ok(!ao_binding_type_to_string(_AO_BINDING_TYPE_INVALID), "no name for invalid");
        tap_is_int(ao_binding_type_from_string("OnStartup"), _AO_BINDING_TYPE_INVALID,
                   "names are case-sensitive");
        tap_is_int(ao_binding_type_from_string("onKubernetesEvent"), _AO_BINDING_TYPE_INVALID,
                   "v0 name is not a type");
        tap_is_int(ao_binding_type_from_string(NULL), _AO_BINDING_TYPE_INVALID, "NULL");
}

int main(void)
{
        run_ok_cases(v1_cases, AO_ARRAY_SIZE(v1_cases));
        run_ok_cases(v0_cases, AO_ARRAY_SIZE(v0_cases));
        for (size_t i = 0; i < AO_ARRAY_SIZE(fail_cases); i++)
                run_fail_case(&fail_cases[i]);
        test_durations();
        test_struct_fields();
        test_limits();
        test_from_json();
        test_selector_format();
        test_binding_type_names();
        return tap_done();
}
