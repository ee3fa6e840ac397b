/* e2b_env: env_vars around a cell (e2b_env.h).
 *
 * The variables go to Python as one JSON text inside a Python string
 * literal: the JSON is dumped in ASCII, so the literal needs no escape but
 * for quotes and backslashes, which JSON's own string syntax escapes as
 * Python's does. The saved values live in one name of __main__'s, which
 * the restoring cell takes away again. */
#include "kernel/serve/e2b_env.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/errbuf.h"

static const char set_fmt[] =
    "def __sandpit_env(m):\n"
    "    import os\n"
    "    saved = {k: os.environ.get(k) for k in m}\n"
    "    os.environ.update(m)\n"
    "    return saved\n"
    "__sandpit_env_saved = __sandpit_env(__import__('json').loads(%s))\n"
    "del __sandpit_env\n";

static const char restore_code[] =
    "def __sandpit_env(s):\n"
    "    import os\n"
    "    for k, v in s.items():\n"
    "        if v is None:\n"
    "            os.environ.pop(k, None)\n"
    "        else:\n"
    "            os.environ[k] = v\n"
    "__sandpit_env(globals().pop('__sandpit_env_saved', {}))\n"
    "del __sandpit_env\n";

static bool name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n < 1 || n > E2B_ENV_NAME_MAX || (name[0] >= '0' && name[0] <= '9'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= 'a' && name[i] <= 'z') ||
              (name[i] >= '0' && name[i] <= '9') || name[i] == '_'))
            return false;
    return true;
}

/* 0 when env is a bounded object of strings, else -EINVAL with err. */
static int check(const json_t *env, char *err, size_t errlen)
{
    if (!json_is_object(env))
        return errbuf_set(-EINVAL, err, errlen, "env_vars must be an object of strings");
    if (json_object_size(env) > E2B_ENV_MAX)
        return errbuf_set(-EINVAL, err, errlen, "env_vars: at most %d variables",
                          E2B_ENV_MAX);
    const char *key;
    json_t *val;
    json_object_foreach((json_t *)env, key, val) {
        if (!name_ok(key))
            return errbuf_set(-EINVAL, err, errlen,
                              "env_vars: a name is 1 to %d letters, digits or '_', not "
                              "starting with a digit",
                              E2B_ENV_NAME_MAX);
        if (!json_is_string(val) || json_string_length(val) > E2B_ENV_VALUE_MAX ||
            strlen(json_string_value(val)) != json_string_length(val))
            return errbuf_set(-EINVAL, err, errlen,
                              "env_vars: %s must be a string of at most %d bytes, "
                              "without NUL",
                              key, E2B_ENV_VALUE_MAX);
    }
    return 0;
}

int e2b_env_code(const json_t *env, char **set, char **restore, char *err, size_t errlen)
{
    *set = *restore = NULL;
    if (!env || json_is_null(env))
        return 0;
    int rc = check(env, err, errlen);
    if (rc || json_object_size(env) == 0)
        return rc;
    char *inner = json_dumps(env, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_SORT_KEYS);
    json_t *str = inner ? json_string(inner) : NULL;
    char *literal =
        str ? json_dumps(str, JSON_COMPACT | JSON_ENSURE_ASCII | JSON_ENCODE_ANY) : NULL;
    rc = -ENOMEM;
    if (literal && asprintf(set, set_fmt, literal) >= 0) {
        if ((*restore = strdup(restore_code))) {
            rc = 0;
        } else {
            free(*set);
            *set = NULL;
        }
    } else {
        *set = NULL;
    }
    free(literal);
    json_decref(str);
    free(inner);
    return rc == -ENOMEM ? errbuf_set(rc, err, errlen, "out of memory") : rc;
}
