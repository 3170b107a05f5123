/* SPDX-License-Identifier: Apache-2.0 */
/* Reading the tools' inputs and writing their JSON output. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ao/alloc.h"
#include "ao/yaml.h"
#include "internal.h"

int tool_read(const char *path, size_t max, char **ret, size_t *ret_len, struct ao_error *reterr)
{
        bool is_stdin = strcmp(path, "-") == 0;
        int fd = is_stdin ? STDIN_FILENO : open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return ao_error_set(reterr, ao_negative_errno(), "%s: %s", path, strerror(errno));
        size_t cap = 4096, len = 0;
        char *buf = ao_xmalloc(cap);
        for (;;) {
                if (len == cap) {
                        if (cap >= max) {
                                free(buf);
                                if (!is_stdin)
                                        close(fd);
                                return ao_error_set(reterr, -EFBIG, "%s: larger than %zu bytes", path, max);
                        }
                        cap = AO_MIN(cap * 2, max);
                        buf = ao_xrealloc(buf, cap);
                }
                ssize_t n = read(fd, buf + len, cap - len);
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0) {
                        int k = ao_negative_errno();
                        free(buf);
                        if (!is_stdin)
                                close(fd);
                        return ao_error_set(reterr, k, "%s: %s", path, strerror(-k));
                }
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        if (!is_stdin)
                close(fd);
        *ret = buf;
        *ret_len = len;
        return 0;
}

int tool_load(const char *path, struct cJSON **ret, struct ao_error *reterr)
{
        char *text;
        size_t len;
        int k = tool_read(path, AO_YAML_MAX_INPUT, &text, &len, reterr);
        if (k < 0)
                return k;
        k = ao_yaml_load(text, len, strcmp(path, "-") == 0 ? "<stdin>" : path, ret, reterr);
        free(text);
        return k;
}

int tool_print_json(const struct cJSON *json)
{
        char *text = ao_json_canonical(json);
        int ok = printf("%s\n", text) >= 0 && fflush(stdout) == 0;
        free(text);
        return ok ? 0 : 1;
}
