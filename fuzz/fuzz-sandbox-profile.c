/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the sandbox profile parser, seccomp compilation included: every
 * input that parses is also compiled to BPF by libseccomp, so odd
 * combinations of rules reach the compiler too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ao/sandbox.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Real profiles are a few KiB; the cap keeps each run fast so the fuzzer explores more. */
#define FUZZ_INPUT_MAX (16 * 1024)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct ao_error err = {};
        struct ao_sandbox_profile *p = NULL;

        if (size > FUZZ_INPUT_MAX)
                return 0;
        if (ao_sandbox_profile_parse("fuzz", (const char *) data, size, NULL, &p, &err) < 0) {
                /* Messages quote user input escaped: one line each, whatever the input holds. */
                if (err.code >= 0 || strpbrk(err.msg, "\n\r"))
                        abort();
                return 0;
        }
        /* A profile with a filter has a program the kernel would take. */
        if (p->has_filter != (p->bpf != NULL) || (p->has_filter && (p->bpf_len == 0 || p->bpf_len > 4096)))
                abort();
        ao_sandbox_profile_free(p);
        return 0;
}
