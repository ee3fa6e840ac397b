/* e2b_env: the two silent cells around an E2B cell with env_vars: what is
 * refused (names, types, sizes, counts), and what Python makes of the code
 * made (run by the machine's python3: the variables set, values with
 * quotes, backslashes and non-ASCII kept exactly, then restored). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/serve/e2b_env.h"
#include "testing.h"

static int code_of(const char *env_text, char **set, char **restore, char *err,
                   size_t errlen)
{
    json_error_t e;
    json_t *env = json_loads(env_text, JSON_DECODE_ANY, &e);
    REQUIRE(env != NULL);
    int rc = e2b_env_code(env, set, restore, err, errlen);
    json_decref(env);
    return rc;
}

static void test_nothing_to_set(void)
{
    char *set = (char *)"x", *restore = (char *)"x", err[256];
    CHECK_INT(e2b_env_code(NULL, &set, &restore, err, sizeof err), 0);
    CHECK(set == NULL && restore == NULL);
    CHECK_INT(code_of("null", &set, &restore, err, sizeof err), 0);
    CHECK(set == NULL && restore == NULL);
    CHECK_INT(code_of("{}", &set, &restore, err, sizeof err), 0);
    CHECK(set == NULL && restore == NULL);
}

static void test_what_is_refused(void)
{
    static const char *const bad[] = {
        "[]",
        "\"A=1\"",
        "{\"A\": 1}",
        "{\"A\": null}",
        "{\"\": \"x\"}",
        "{\"1A\": \"x\"}",
        "{\"A=B\": \"x\"}",
        "{\"A B\": \"x\"}",
        "{\"\\u00e9\": \"x\"}",
    };
    char *set, *restore, err[256];
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        CHECK_INT(code_of(bad[i], &set, &restore, err, sizeof err), -EINVAL);
        CHECK(set == NULL && restore == NULL);
        CHECK(strstr(err, "env_vars") != NULL);
    }
    json_t *many = json_object();
    for (int i = 0; i <= E2B_ENV_MAX; i++) {
        char name[16];
        snprintf(name, sizeof name, "V%d", i);
        json_object_set_new(many, name, json_string("x"));
    }
    CHECK_INT(e2b_env_code(many, &set, &restore, err, sizeof err), -EINVAL);
    json_decref(many);
    char *long_value = malloc(E2B_ENV_VALUE_MAX + 2);
    REQUIRE(long_value != NULL);
    memset(long_value, 'a', E2B_ENV_VALUE_MAX + 1);
    long_value[E2B_ENV_VALUE_MAX + 1] = 0;
    json_t *big = json_pack("{s:s}", "A", long_value);
    CHECK_INT(e2b_env_code(big, &set, &restore, err, sizeof err), -EINVAL);
    json_decref(big);
    free(long_value);
}

/* Runs set, a check, then restore in python3: its output. */
static char *python_run(const char *set, const char *restore, const char *path)
{
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fprintf(f,
            "import os\nos.environ['E2B_KEEP'] = 'old'\nos.environ.pop('E2B_NEW', "
            "None)\n%s"
            "print(repr(os.environ['E2B_NEW']), repr(os.environ['E2B_KEEP']))\n%s"
            "print(os.environ.get('E2B_NEW', 'gone'), os.environ['E2B_KEEP'], "
            "[n for n in globals() if 'sandpit' in n])\n",
            set, restore);
    fclose(f);
    char cmd[512];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 %s", path);
    FILE *p = popen(cmd, "r");
    REQUIRE(p != NULL);
    char *out = calloc(1, 4096);
    REQUIRE(out != NULL);
    size_t n = fread(out, 1, 4095, p);
    out[n] = 0;
    pclose(p);
    return out;
}

static void test_python_sets_and_restores_them(void)
{
    char *set, *restore, err[256];
    CHECK_INT(code_of("{\"E2B_NEW\": \"caf\\u00e9 \\\"q\\\" \\\\ '\\n\\ud83d\\ude00\", "
                      "\"E2B_KEEP\": \"new\"}",
                      &set, &restore, err, sizeof err),
              0);
    REQUIRE(set != NULL && restore != NULL);
    char path[] = "/tmp/test_e2b_env_XXXXXX";
    int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    char *out = python_run(set, restore, path);
    unlink(path);
    close(fd);
    CHECK_STR(out, "'café \"q\" \\\\ \\'\\n😀' 'new'\ngone old []\n");
    free(out);
    free(set);
    free(restore);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_nothing_to_set),
    TESTING_CASE(test_what_is_refused),
    TESTING_CASE(test_python_sets_and_restores_them),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
