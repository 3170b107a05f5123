/* SPDX-License-Identifier: Apache-2.0 */
/*
 * tool post-render LABELS: helm's --post-renderer. The manifest helm rendered
 * comes on stdin and goes to stdout with LABELS ("k=v,k2=v2") in every
 * object's metadata.labels (ao_helm_post_render()). helm starts it, so it
 * runs in helm's sandbox; it reads stdin and writes stdout, nothing else.
 * Not listed in --help: the operator passes it to helm (docs/HELM.md).
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ao/helm-post-render.h"
#include "internal.h"

/* stdin, at most AO_HELM_POST_RENDER_MAX_INPUT bytes. */
static int read_manifest(char **ret, size_t *ret_len, struct ao_error *reterr)
{
        int r = tool_read("-", AO_HELM_POST_RENDER_MAX_INPUT, ret, ret_len, reterr);
        if (r == -EFBIG)
                return ao_error_set(reterr, r, "rendered manifest: larger than %u MiB",
                                    AO_HELM_POST_RENDER_MAX_INPUT >> 20);
        if (r < 0)
                return ao_error_set(reterr, r, "stdin: %s", strerror(-r));
        return 0;
}

static int post_render(const char *labels_text)
{
        struct ao_error err = {0};
        struct ao_helm_labels labels = {0};
        char *text = NULL, *out = NULL;
        size_t len = 0, out_len = 0;
        int r = ao_helm_labels_parse(labels_text, &labels, &err);
        if (r >= 0)
                r = read_manifest(&text, &len, &err);
        if (r >= 0)
                r = ao_helm_post_render(text, len, &labels, &out, &out_len, &err);
        bool written = r >= 0 && fwrite(out, 1, out_len, stdout) == out_len && fflush(stdout) == 0;
        if (r < 0)
                fprintf(stderr, "post-render: %s\n", err.msg);
        else if (!written)
                fprintf(stderr, "post-render: cannot write stdout\n");
        free(out);
        free(text);
        ao_helm_labels_clear(&labels);
        return r < 0 || !written ? 1 : 0;
}

int tool_post_render(int argc, char *const *args)
{
        if (argc != 1)
                return tool_usage("post-render");
        int code = post_render(args[0]);
        /*
         * Exit without the atexit handlers: in a sanitizer build LeakSanitizer's check at exit
         * ptraces the process, which helm's sandbox refuses, and that would fail every render.
         * Everything is freed above (the unit tests check the code for leaks).
         */
        _exit(code);
}
