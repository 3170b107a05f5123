/* SPDX-License-Identifier: Apache-2.0 */
#pragma once

/*
 * Private to src/config/: the settings table shared by the environment
 * resolver (settings.c), the argv walker and help printer (cli.c), and the
 * value parsers (parse.c). Never included outside src/config/.
 */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ao/error.h"
#include "ao/settings.h"

enum ao_setting_type {
        AO_SETTING_TYPE_STRING,        /* stored as is; "" is a value */
        AO_SETTING_TYPE_PATH_LIST,     /* split on ':', empty parts dropped; raw copy kept */
        AO_SETTING_TYPE_COMMA_LIST,    /* split on ',', items trimmed, empty items dropped */
        AO_SETTING_TYPE_INT,           /* int64_t within [min, max] */
        AO_SETTING_TYPE_FLOAT,         /* double, finite and > 0 */
        AO_SETTING_TYPE_PORT,          /* uint16_t */
        AO_SETTING_TYPE_BOOL,          /* bool, ao_parse_bool() spellings */
        AO_SETTING_TYPE_DURATION,      /* uint64_t microseconds */
        AO_SETTING_TYPE_LOG_LEVEL,     /* enum ao_log_level */
        AO_SETTING_TYPE_LOG_FORMAT,    /* enum ao_log_format */
        AO_SETTING_TYPE_REACTOR,       /* enum ao_reactor_backend_choice */
        AO_SETTING_TYPE_METRIC_PREFIX, /* string matching [a-zA-Z_:][a-zA-Z0-9_:]* or "" */
        AO_SETTING_TYPE_LABELS,        /* string "k=v,k2=v2" with Kubernetes label syntax */
        _AO_SETTING_TYPE_MAX,
};

enum ao_setting_section {
        AO_SETTING_SECTION_LAYOUT,
        AO_SETTING_SECTION_IDENTITY,
        AO_SETTING_SECTION_HTTP,
        AO_SETTING_SECTION_CRD,
        AO_SETTING_SECTION_KUBE,
        AO_SETTING_SECTION_HELM,
        AO_SETTING_SECTION_LOG,
        AO_SETTING_SECTION_DEBUG,
        AO_SETTING_SECTION_RUNTIME,
        AO_SETTING_SECTION_HOOKS,
        _AO_SETTING_SECTION_MAX,
};

#define AO_SETTING_FLAGS_MAX 3
#define AO_SETTING_ENVS_MAX  4

/** One row of the settings table. Everything is static data. */
struct ao_setting_def {
        enum ao_setting_section section;
        const char *flags[AO_SETTING_FLAGS_MAX]; /* without "--"; primary first, then aliases; NULL-padded */
        const char *envs[AO_SETTING_ENVS_MAX];   /* priority order, first set one wins; NULL-padded */
        const char *def;                         /* default, parsed like any other value */
        enum ao_setting_type type;
        size_t offset;       /* offsetof() into struct ao_settings */
        bool keep_raw;       /* PATH_LIST only: also store the unsplit value at raw_offset */
        size_t raw_offset;   /* offsetof() of a char * field */
        int64_t min, max;    /* INT only: inclusive range */
        const char *metavar; /* placeholder for the value in --help; NULL derives one from the type */
        const char *help;    /* one line */
};

/** Where one setting got its value; one per table row, owned by struct ao_cli. */
struct ao_cli_origin {
        enum ao_setting_origin origin;
        const char *
            source; /* static: the env name or primary flag name that supplied the value, NULL for defaults */
        char *value; /* owned: the text that was parsed */
};

extern const struct ao_setting_def setting_defs[];
extern const size_t setting_defs_count;
extern const char *const ao_setting_section_names[_AO_SETTING_SECTION_MAX];

/**
 * The row whose primary flag or alias is the @len bytes at @name (without
 * "--"), or NULL. @ret_spelling (may be NULL) gets the table's copy of the
 * matching name, so messages can use the alias the user typed.
 */
const struct ao_setting_def *setting_def_by_flag(const char *name, size_t len, const char **ret_spelling);

/**
 * Resolve every setting: @flag_values[i] (borrowed, NULL when the flag was not
 * given) beats the environment, which beats the default. @flag_names[i] is the
 * spelling the user typed, for messages. Fills @cli->settings, @cli->notices and
 * @origins (an array of setting_defs_count entries, zeroed by the caller).
 * On failure the partially filled state is left for the caller to release.
 */
int settings_resolve(struct ao_cli *cli, struct ao_cli_origin *origins, const char *const *flag_values,
                     const char *const *flag_names, char *const *envp, struct ao_error *reterr);

/* Value parsers (parse.c). All return 0 or -EINVAL (-ERANGE for out-of-range numbers) and write ret_* only on success. */
int parse_int64(const char *s, int64_t min, int64_t max, int64_t *ret);
int parse_double_positive(const char *s, double *ret);
int parse_port(const char *s, uint16_t *ret);
int parse_metric_prefix(const char *s);
int parse_label_list(const char *s);
int parse_reactor(const char *s, enum ao_reactor_backend_choice *ret);
/** Split @s on @sep into a NULL-terminated owned vector, trimming ASCII blanks when @trim; empty items dropped. */
int config_split(const char *s, char sep, bool trim, char ***ret);
char **config_strv_free(char **v);
static inline void config_strv_freep(char ***v)
{
        *v = config_strv_free(*v);
}

/**
 * Copy @s into @buf (of @size >= 16 bytes) with control bytes, DEL and
 * backslash escaped C-style, so a message that quotes it stays on one line.
 * Longer input is cut and ends in "...". Returns @buf.
 */
const char *config_escape(const char *s, char *buf, size_t size);
