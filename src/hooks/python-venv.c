/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Python hooks and a module's hooks/venv (see hooks.h), as the Go operator runs them: a module
 * hook whose file name ends in ".py" runs as `<module>/hooks/venv/bin/python3 <hook>` with
 * PYTHONHOME set to the venv, when that interpreter is there (any file with an execute bit, a
 * symbolic link followed); otherwise it runs as any hook, through its own #! line.
 */
#include <string.h>
#include <sys/stat.h>

#include "ao/alloc.h"
#include "ao/hooks.h"

bool ao_hook_is_python(const char *path)
{
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        const char *dot = strrchr(base, '.');
        return dot && strcmp(dot, ".py") == 0;
}

char *ao_hooks_python_venv(const char *module_dir)
{
        _cleanup_free_ char *venv = ao_xasprintf("%s/" AO_HOOKS_PYTHON_VENV, module_dir);
        _cleanup_free_ char *interpreter = ao_xasprintf("%s/bin/python3", venv);
        struct stat st;
        if (stat(interpreter, &st) < 0 || S_ISDIR(st.st_mode) ||
            !(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)))
                return NULL;
        return TAKE_PTR(venv);
}
