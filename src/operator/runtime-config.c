/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Runtime parameters: what `config list` shows and `config set NAME VALUE
 * [DURATION]` changes in a running operator, as the Go operator has them.
 *
 * A parameter's value is, in this order: a temporary value until it expires,
 * the value set without a duration, its default. A value is checked before
 * it is taken, so applying it cannot fail (the Go operator's lastError never
 * appears here). A temporary value reverts on a reactor timer at its expiry (no polling),
 * applying whatever the value is then. `log.level debug` without a duration
 * is temporary too: debug reverts after 30 minutes unless a duration says
 * otherwise.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ao/alloc.h"
#include "ao/duration.h"
#include "ao/log.h"
#include "ao/reactor.h"
#include "ao/strbuf.h"
#include "internal.h"

/* How long `log.level debug` lasts when no duration is given. */
#define DEBUG_LEVEL_USEC (30 * 60 * AO_USEC_PER_SEC)

struct runtime_param {
        const char *name;
        const char *description;
        /* The value's syntax: 0, or -EINVAL with the reason. */
        int (*validate)(const char *value, struct ao_error *reterr);
        /* Make @value the one in force. */
        void (*apply)(const char *value);
        /* A value set without a duration that lasts only this long anyway; 0: for good. */
        uint64_t (*forced_usec)(const char *value);

        char *default_value; /* owned */
        char *value;         /* owned: set without a duration; NULL: the default */
        char *temporary;     /* owned: set with a duration, until @expire_wall; NULL: none */
        time_t expire_wall;
        struct ao_source *expiry; /* owned: fires when @temporary expires */
};

struct runtime_config {
        struct operator_state *op;
        struct runtime_param params[1];
};

/* ---- log.level --------------------------------------------------------------------------------- */

static int validate_log_level(const char *value, struct ao_error *reterr)
{
        if (ao_log_level_from_string(value) < 0)
                return ao_error_set(reterr, -EINVAL,
                                    "unknown log level '%s' (trace, debug, info, warn, error or fatal)",
                                    value);
        return 0;
}

static void apply_log_level(const char *value)
{
        enum ao_log_level level = ao_log_level_from_string(value);
        /* Logged at info while the old or the new level shows it: before a quieter level, after a louder one. */
        bool before = ao_log_enabled(AO_LOG_INFO);
        if (!before)
                ao_log_set_level(level);
        ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"parameter", "log.level"}, {"value", value}),
                    "log level is now %s", ao_log_level_to_string(level));
        if (before)
                ao_log_set_level(level);
}

static uint64_t log_level_forced_usec(const char *value)
{
        return ao_log_level_from_string(value) == AO_LOG_DEBUG ? DEBUG_LEVEL_USEC : 0;
}

/* ---- values ------------------------------------------------------------------------------------ */

static const char *current(const struct runtime_param *p)
{
        return p->temporary ? p->temporary : p->value ? p->value : p->default_value;
}

static void apply(struct runtime_param *p)
{
        p->apply(current(p));
}

static void drop_temporary(struct runtime_param *p)
{
        p->expiry = ao_source_free(p->expiry);
        free(p->temporary);
        p->temporary = NULL;
}

static int on_expired(struct ao_source *s, uint64_t usec, void *userdata)
{
        (void) s;
        (void) usec;
        struct runtime_param *p = userdata;
        _cleanup_free_ char *was = TAKE_PTR(p->temporary);
        drop_temporary(p);
        ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"parameter", p->name}, {"value", current(p)}),
                    "runtime parameter '%s': the temporary value '%s' expired, back to '%s'", p->name, was,
                    current(p));
        apply(p);
        return 0;
}

static struct runtime_param *find(struct runtime_config *rc, const char *name)
{
        for (size_t i = 0; i < AO_ARRAY_SIZE(rc->params); i++)
                if (strcmp(rc->params[i].name, name) == 0)
                        return &rc->params[i];
        return NULL;
}

static int set_temporarily(struct runtime_config *rc, struct runtime_param *p, const char *value,
                           uint64_t usec, struct ao_error *reterr)
{
        drop_temporary(p);
        int r = ao_reactor_add_time_relative(rc->op->reactor, &p->expiry, usec, on_expired, p);
        if (r < 0)
                return ao_error_set(reterr, r, "runtime parameter '%s': cannot arm its expiry: %s", p->name,
                                    strerror(-r));
        (void) ao_source_set_description(p->expiry, "runtime-config-expiry");
        p->temporary = ao_xstrdup(value);
        p->expire_wall = time(NULL) + (time_t) ((usec + AO_USEC_PER_SEC - 1) / AO_USEC_PER_SEC);
        return 0;
}

int runtime_config_set(struct operator_state *op, const char *name, const char *value, const char *duration,
                       struct ao_error *reterr)
{
        struct runtime_config *rc = op->runtime;
        struct runtime_param *p = find(rc, name);
        if (!p)
                return ao_error_set(reterr, -ENOENT, "unknown runtime parameter '%s' (see `config list`)",
                                    name);
        struct ao_error err = {0};
        if (p->validate(value, &err) < 0)
                return ao_error_set(reterr, -EINVAL, "%s: %s", name, err.msg);
        uint64_t usec = 0;
        if (duration && duration[0] && ao_parse_duration_usec(duration, &usec) < 0)
                return ao_error_set(reterr, -EINVAL,
                                    "invalid duration '%s': a Go duration such as 90s, 10m or 1h30m",
                                    duration);
        if (usec == 0 && p->forced_usec)
                usec = p->forced_usec(value);
        if (usec > 0) {
                int r = set_temporarily(rc, p, value, usec, reterr);
                if (r < 0)
                        return r;
        } else {
                drop_temporary(p);
                free(p->value);
                p->value = ao_xstrdup(value);
        }
        char until[32] = "";
        if (p->temporary) {
                struct tm tm;
                (void) strftime(until, sizeof(until), " until %Y-%m-%dT%H:%M:%SZ",
                                gmtime_r(&p->expire_wall, &tm));
        }
        ao_log_with(AO_LOG_INFO, AO_LOG_FIELDS({"parameter", name}, {"value", value}),
                    "runtime parameter '%s' set to '%s'%s", name, value, until);
        apply(p);
        return 0;
}

/* ---- config list ------------------------------------------------------------------------------- */

static void expire_at(const struct runtime_param *p, char buf[static 32])
{
        struct tm tm;
        buf[0] = '\0';
        if (p->temporary)
                (void) strftime(buf, 32, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&p->expire_wall, &tm));
}

cJSON *runtime_config_list(const struct operator_state *op)
{
        const struct runtime_config *rc = op->runtime;
        cJSON *list = cJSON_CreateArray();
        /* The keys in the order the Go operator writes them (a map: sorted). */
        for (size_t i = 0; i < AO_ARRAY_SIZE(rc->params); i++) {
                const struct runtime_param *p = &rc->params[i];
                char expire[32];
                expire_at(p, expire);
                cJSON *o = cJSON_CreateObject();
                cJSON_AddStringToObject(o, "default", p->default_value);
                cJSON_AddStringToObject(o, "description", p->description);
                if (expire[0])
                        cJSON_AddStringToObject(o, "expireAt", expire);
                cJSON_AddStringToObject(o, "name", p->name);
                cJSON_AddStringToObject(o, "value", current(p));
                cJSON_AddItemToArray(list, o);
        }
        return list;
}

char *runtime_config_table(const struct operator_state *op)
{
        const struct runtime_config *rc = op->runtime;
        struct ao_strbuf sb = {0};
        ao_strbuf_appendf(&sb, "%-30s %-20s %-20s %-40s\n", "NAME", "VALUE", "EXPIRE AT", "DESCRIPTION");
        for (size_t i = 0; i < AO_ARRAY_SIZE(rc->params); i++) {
                const struct runtime_param *p = &rc->params[i];
                char expire[32];
                expire_at(p, expire);
                ao_strbuf_appendf(&sb, "%-30s %-20s %-20s %-40s\n", p->name, current(p), expire,
                                  p->description);
        }
        return ao_strbuf_steal(&sb);
}

/* ---- set-up ------------------------------------------------------------------------------------ */

void runtime_config_init(struct operator_state *op)
{
        struct runtime_config *rc = ao_xcalloc(1, sizeof(*rc));
        rc->op = op;
        rc->params[0] = (struct runtime_param){
            .name = "log.level",
            .description = "the log level; debug reverts after 30m0s unless a duration is given",
            .validate = validate_log_level,
            .apply = apply_log_level,
            .forced_usec = log_level_forced_usec,
            .default_value = ao_xstrdup(ao_log_level_to_string(op->settings->log_level)),
        };
        op->runtime = rc;
}

void runtime_config_done(struct operator_state *op)
{
        struct runtime_config *rc = op->runtime;
        if (!rc)
                return;
        for (size_t i = 0; i < AO_ARRAY_SIZE(rc->params); i++) {
                struct runtime_param *p = &rc->params[i];
                drop_temporary(p);
                free(p->default_value);
                free(p->value);
        }
        free(rc);
        op->runtime = NULL;
}
