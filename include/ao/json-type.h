/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * The type of a parsed node as "must be X, not Y" messages name it. Five
 * parsers had their own copy, and they disagreed: "an array" for JSON the
 * user wrote, "a list" or "a sequence" where the user wrote YAML. The JSON
 * words are the wording; the two YAML vocabularies stay because messages
 * that tests pin use them (see the enum). Non-logging; thread-safe.
 */

struct cJSON;

/** Words for arrays and objects; the scalars are always "a string", "a number", "a boolean", "null". */
enum ao_json_words {
        AO_JSON_WORDS_JSON,    /* "an array", "an object": hook --config output, helm's JSON */
        AO_JSON_WORDS_KUBECTL, /* "a list", "a mapping": kubeconfig (test-kubeconfig), ConfigMap data
                                  (test-config-file) */
        AO_JSON_WORDS_YAML, /* "a sequence", "a mapping": YAML's own terms, helm manifests (test-helm-output) */
        _AO_JSON_WORDS_MAX,
};

/**
 * "null", "a boolean", "a number", "a string", or the array and object word
 * of @words; "an invalid value" for NULL, a cJSON_Invalid node and an
 * unknown @words. Never NULL; a static string.
 */
const char *ao_json_type_name(const struct cJSON *node, enum ao_json_words words);
