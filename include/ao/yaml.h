/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * YAML and JSON documents as cJSON trees: the loader every file from users
 * goes through (values.yaml, hook configs, sandbox profiles, kubeconfig).
 *
 * Plain scalars resolve the way sigs.k8s.io/yaml (go-yaml v2, YAML 1.1)
 * resolves them, so a values.yaml means here what it means to kubectl and
 * Helm: null/~/empty, true/false plus the YAML 1.1 y/yes/on/n/no/off
 * spellings, integers (decimal, 0x, 0o, 0b, leading-0 octal, '_' ignored),
 * floats (.inf, .nan included). Quoted and block scalars stay strings.
 * yaml.c has the complete table. Numbers become cJSON doubles: integers
 * beyond 2^53 lose precision exactly as they do in JSON.
 *
 * Anchors, aliases and merge keys ('<<') are supported, with caps on what
 * aliases may expand to (no billion laughs); duplicate mapping keys are an
 * error; non-string keys are converted to their string form. Errors read
 * "file:line:column: what", 1-based.
 *
 * Non-logging module: callers log. Thread-safe (no global state; the
 * process must keep the C locale for LC_NUMERIC, which it never changes).
 */

#include <stddef.h>

#include "ao/error.h"

struct cJSON;

/* Limits applied while loading; exceeding one is an error, never a crash. */
#define AO_YAML_MAX_INPUT       (64u * 1024 * 1024) /* bytes */
#define AO_YAML_MAX_DEPTH       256                 /* nesting of mappings and sequences */
#define AO_YAML_MAX_NODES       (4u * 1024 * 1024)  /* nodes (keys included) after alias expansion */
#define AO_YAML_MAX_ALIAS_BYTES (8u * 1024 * 1024)  /* string bytes copied by aliases and merge keys */
/*
 * Longest mapping key, in characters of its JSON string form without the
 * quotes: YAML's simple-key limit, so that every loaded document can be
 * written out as JSON and read back (libyaml refuses longer JSON keys).
 */
#define AO_YAML_MAX_KEY_CHARS 1022

/**
 * Parse one YAML (or JSON, which is YAML) document from @text (@len bytes,
 * need not be NUL-terminated) into a new cJSON tree in @ret (owned by the
 * caller). An empty document gives a cJSON null. More than one document is
 * an error. @filename names the input in error messages (may be NULL: "<input>").
 *
 * Besides AO_YAML_MAX_NODES, aliases are held to go-yaml's ratio
 * ("document contains excessive aliasing": above 1000 nodes, at most 99% of
 * them may come from aliases, sliding down to 10% at 4M nodes), so memory
 * stays proportional to the input.
 *
 * Returns 0, -EINVAL (syntax or content, message in @reterr), -EFBIG (input
 * over AO_YAML_MAX_INPUT), -E2BIG (a limit above was exceeded) or -ENOMEM.
 */
int ao_yaml_load(const char *text, size_t len, const char *filename, struct cJSON **ret,
                 struct ao_error *reterr);

/**
 * Parse a YAML stream of any number of documents ("---" between them) from
 * @text (@len bytes) into a new cJSON array in @ret_array, one element per
 * document in order. Documents that are empty or null ("---" alone, "~")
 * are skipped, as kubectl skips them; so "" gives an empty array. Scalars
 * resolve as in ao_yaml_load(); anchors reach only within their document.
 * The limits apply to the stream as a whole. Returns as ao_yaml_load().
 */
int ao_yaml_load_stream(const char *text, size_t len, const char *filename, struct cJSON **ret_array,
                        struct ao_error *reterr);

/**
 * Parse a JSON stream, values one after another with optional whitespace
 * between them ("{...}{...}", one per line, or "1 2"), from @text (@len
 * bytes) into a new cJSON array in @ret_array, one element per value; a
 * byte order mark at the start is skipped, "" gives an empty array.
 * Stricter than cJSON where cJSON would change meaning: raw control
 * characters, "\u0000", numbers outside JSON's grammar and a key twice in
 * one object are errors. The YAML limits apply (AO_YAML_MAX_INPUT, _DEPTH,
 * _NODES over the whole stream). Errors read "file:line:column: what".
 * Returns 0, -EINVAL, -EFBIG, -E2BIG or -ENOMEM. cJSON's parse-error global
 * makes it unsafe to run in two threads at once.
 */
int ao_json_load_stream(const char *text, size_t len, const char *filename, struct cJSON **ret_array,
                        struct ao_error *reterr);

/**
 * Read and parse the file at @path (capped at AO_YAML_MAX_INPUT). Read
 * errors are "cannot read 'path': strerror" with the -errno code; parse
 * errors are those of ao_yaml_load() with @path as the file name.
 */
int ao_yaml_load_file(const char *path, struct cJSON **ret, struct ao_error *reterr);

/** ao_yaml_load_stream() of the file at @path; errors name the file. */
int ao_yaml_load_stream_file(const char *path, struct cJSON **ret_array, struct ao_error *reterr);

/**
 * Canonical JSON text of @json: object keys sorted by byte value at every
 * level (equal keys keep their order), no insignificant whitespace, integers
 * below 1e21 without exponent or fraction, other numbers in the shortest of
 * %.15g/%.16g/%.17g that round-trips, NaN and infinities as null (as
 * cJSON_Print and JSON.stringify do). Equal documents give equal text: used
 * for checksums. The text of a tree from ao_yaml_load() loads back to the
 * same canonical text (C1 controls, U+2028/U+2029 and U+FFFE/U+FFFF are
 * written as \u escapes: YAML reads them raw as line breaks or refuses them)
 * unless aliases expanded it past AO_YAML_MAX_INPUT.
 * @json is not modified; no recursion, so any depth is fine.
 * Returns a malloc'd string (caller frees); allocation failure aborts, as
 * for every ao_strbuf.
 */
char *ao_json_canonical(const struct cJSON *json);

/**
 * @json as a YAML document (block style, keys in their order, strings
 * quoted where YAML would read them as something else), ending in a
 * newline. Loading it back with ao_yaml_load() gives the same canonical
 * JSON. Returns a malloc'd string.
 */
char *ao_yaml_emit(const struct cJSON *json);
