/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Corpus replay for builds without libFuzzer: every file named on the
 * command line (directories are walked one level) is fed once to the
 * target. Prints TAP, one line per input, so `meson test` runs every
 * corpus under the sanitizers of the build.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int count;

static int replay_file(const char *path)
{
        FILE *f = fopen(path, "rb");
        if (!f) {
                printf("not ok %d - %s: cannot open\n", ++count, path);
                return 1;
        }
        size_t cap = 4096, len = 0;
        uint8_t *buf = malloc(cap);
        size_t n;
        while (buf && (n = fread(buf + len, 1, cap - len, f)) > 0) {
                len += n;
                if (len == cap) {
                        cap *= 2;
                        uint8_t *bigger = realloc(buf, cap);
                        if (!bigger)
                                free(buf);
                        buf = bigger;
                }
        }
        fclose(f);
        if (!buf) {
                printf("not ok %d - %s: out of memory\n", ++count, path);
                return 1;
        }
        (void) LLVMFuzzerTestOneInput(buf, len);
        free(buf);
        printf("ok %d - %s\n", ++count, path);
        fflush(stdout);
        return 0;
}

static int compare_names(const void *a, const void *b)
{
        return strcmp(*(char *const *) a, *(char *const *) b);
}

static int replay_dir(const char *dir)
{
        DIR *d = opendir(dir);
        if (!d) {
                printf("not ok %d - %s: cannot open directory\n", ++count, dir);
                return 1;
        }
        char **names = NULL;
        size_t n = 0;
        struct dirent *e;
        while ((e = readdir(d))) {
                if (e->d_name[0] == '.')
                        continue;
                char **grown = realloc(names, (n + 1) * sizeof(*names));
                if (!grown)
                        break;
                names = grown;
                names[n++] = strdup(e->d_name);
        }
        closedir(d);
        qsort(names, n, sizeof(*names), compare_names); /* stable order, comparable logs */
        int failed = 0;
        for (size_t i = 0; i < n; i++) {
                char path[4096];
                snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
                failed |= replay_file(path);
                free(names[i]);
        }
        free(names);
        return failed;
}

int main(int argc, char **argv)
{
        int failed = 0;
        for (int i = 1; i < argc; i++) {
                struct stat st;
                if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
                        failed |= replay_dir(argv[i]);
                else
                        failed |= replay_file(argv[i]);
        }
        printf("1..%d\n", count);
        return failed;
}
