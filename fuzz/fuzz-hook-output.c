/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz what a hook writes to stdout and stderr: the line splitter with its
 * caps, the JSON-object lines re-logged as records, and the joining of
 * objects printed over several lines (LOG_PROXY_HOOK_JSON).
 *
 * Input: byte 0 holds the options (bit 0: join JSON lines; bits 1-2: the
 * line cap, 16 to 4096 bytes), byte 1 the chunk size the output arrives in
 * (1 to 64 bytes, alternating between stdout and stderr when bit 3 of byte 0
 * is set), the rest is the output itself.
 *
 * The log goes to a memfd in the JSON format. Besides crashes, leaks and
 * undefined behaviour, it aborts when a log line is not one JSON object
 * with a string "msg", the hook's context and, for output records, an
 * "output" of stdout or stderr: whatever a hook prints, the log stays
 * machine-readable and attributable.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "ao/log.h"
#include "../src/proc/run.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The output cap below keeps each run's log small; the input cap keeps runs fast. */
#define FUZZ_INPUT_MAX (64 * 1024)
#define OUTPUT_MAX     (16 * 1024)

static int log_fd = -1;

static void check(bool ok)
{
        if (!ok)
                abort();
}

static void setup_log(void)
{
        if (log_fd >= 0)
                return;
        log_fd = memfd_create("fuzz-hook-output-log", MFD_CLOEXEC);
        check(log_fd >= 0);
        struct ao_log_options o = {
            .format = AO_LOG_FORMAT_JSON, .level = AO_LOG_DEBUG, .no_time = true, .fd = log_fd};
        check(ao_log_setup(&o) == 0);
}

static void check_record(const char *line, size_t len)
{
        cJSON *rec = cJSON_ParseWithLength(line, len);
        check(cJSON_IsObject(rec));
        const cJSON *msg = cJSON_GetObjectItemCaseSensitive(rec, "msg");
        const cJSON *hook = cJSON_GetObjectItemCaseSensitive(rec, "hook");
        const cJSON *output = cJSON_GetObjectItemCaseSensitive(rec, "output");
        check(cJSON_IsString(msg) && cJSON_IsString(hook) && strcmp(hook->valuestring, "hooks/fuzz") == 0);
        check(!output || (cJSON_IsString(output) && (strcmp(output->valuestring, "stdout") == 0 ||
                                                     strcmp(output->valuestring, "stderr") == 0)));
        /* Only the cap's warning comes without an output field. */
        check(output || strstr(msg->valuestring, "bytes of output; the rest is not logged"));
        cJSON_Delete(rec);
}

/* Every line logged since the last call, then the memfd emptied. */
static void check_log(void)
{
        (void) ao_log_flush();
        off_t len = lseek(log_fd, 0, SEEK_END);
        check(len >= 0);
        if (len == 0)
                return;
        char *text = mmap(NULL, (size_t) len, PROT_READ, MAP_PRIVATE, log_fd, 0);
        check(text != MAP_FAILED);
        for (const char *p = text, *end = text + len; p < end;) {
                const char *nl = memchr(p, '\n', (size_t) (end - p));
                check(nl != NULL); /* every record ends its line */
                check_record(p, (size_t) (nl - p));
                p = nl + 1;
        }
        munmap(text, (size_t) len);
        check(ftruncate(log_fd, 0) == 0 && lseek(log_fd, 0, SEEK_SET) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        static const size_t line_caps[] = {16, 100, 1024, 4096};
        if (size < 2 || size > FUZZ_INPUT_MAX)
                return 0;
        setup_log();

        struct run_env *env = calloc(1, sizeof(*env));
        struct ao_proc_run *run = calloc(1, sizeof(*run));
        check(env && run);
        env->options = (struct ao_proc_options){.line_max = line_caps[(data[0] >> 1) & 3],
                                                .output_max = OUTPUT_MAX,
                                                .join_json_lines = data[0] & 1};
        run->env = env;
        run->log_context.ctx.hook = "hooks/fuzz";
        for (int i = 0; i < 2; i++) /* no pipes: the output is fed in directly */
                proc_output_init(&run->out[i], &env->pool, (enum ao_proc_stream) i, NULL, NULL);

        size_t chunk = 1 + data[1] % 64;
        bool alternate = data[0] & 8;
        const char *out = (const char *) data + 2;
        size_t left = size - 2;
        for (int i = 0; left > 0; i++) {
                size_t n = left < chunk ? left : chunk;
                proc_run_output_feed(run, alternate ? i % 2 : AO_PROC_STDOUT, out, n);
                out += n;
                left -= n;
        }
        for (int i = 0; i < 2; i++)
                proc_run_output_end(run, (enum ao_proc_stream) i);
        check_log();
        free(run);
        free(env);
        return 0;
}
