/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Fuzz the command line and environment parser. The input is a list of
 * NUL-separated words: "NAME=value" words that start with an uppercase letter
 * form the environment, every other word is a command-line argument.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ao/settings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Real command lines are short; the cap keeps each run fast so the fuzzer explores more. */
#define FUZZ_INPUT_MAX 4096

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
        struct ao_error err = {};
        struct ao_cli cli;
        char *buf, **argv, **envp;
        int argc = 1;
        size_t n_env = 0;

        if (size > FUZZ_INPUT_MAX)
                return 0;

        buf = malloc(size + 1);
        /* Every word is at most one entry; plus argv[0] and the two terminators. */
        argv = calloc(size + 3, sizeof(char *));
        envp = calloc(size + 2, sizeof(char *));
        if (!buf || !argv || !envp)
                goto out;
        memcpy(buf, data, size);
        buf[size] = '\0';

        argv[0] = (char *) "addon-operator";
        for (char *w = buf; w <= buf + size; w += strlen(w) + 1) {
                if (w[0] >= 'A' && w[0] <= 'Z' && strchr(w, '='))
                        envp[n_env++] = w;
                else
                        argv[argc++] = w;
        }

        if (ao_cli_parse(argc, argv, envp, &cli, &err) == 0) {
                /* Notices are logged as one line each, like errors: quoted values must come out escaped. */
                for (size_t i = 0; i < cli.n_notices; i++)
                        if (strpbrk(cli.notices[i].text, "\n\r"))
                                abort();
                ao_cli_done(&cli);
        } else if (strpbrk(err.msg, "\n\r"))
                abort();
out:
        free(envp);
        free(argv);
        free(buf);
        return 0;
}
