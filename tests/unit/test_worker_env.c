/* Unit tests of worker_env: the one function that builds a worker's environment
 * (what of the kernel's it may see, LD_PRELOAD naming the worker's library
 * alone where the worker is one), and the cgroup note each start adds. */
#include <stdlib.h>
#include <string.h>

#include "kernel/supervisor/worker_env.h"
#include "testing.h"

static size_t count_prefix(char **env, const char *prefix)
{
    size_t n = 0;
    for (size_t i = 0; env[i]; i++)
        n += strncmp(env[i], prefix, strlen(prefix)) == 0;
    return n;
}

static const char *find(char **env, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; env[i]; i++)
        if (strncmp(env[i], name, len) == 0 && env[i][len] == '=')
            return env[i] + len + 1;
    return NULL;
}

static void set_kernel_environment(void)
{
    setenv("PATH", "/usr/bin:/bin", 1);
    setenv("GITHUB_TOKEN", "secret", 1);
    setenv("AWS_SECRET_ACCESS_KEY", "secret", 1);
    setenv("SANDPIT_FIGURE_FORMAT", "svg", 1);
    setenv("LD_PRELOAD", "/tmp/the-kernels-own.so", 1);
}

/* With the sandbox on, only harmless variables and those named. */
static void test_the_sandbox_keeps_only_harmless_and_named_variables(void)
{
    set_kernel_environment();
    char **env = worker_env_new(true, "GITHUB_TOKEN", "/opt/sandpit-worker.so");
    REQUIRE(env != NULL);
    CHECK_STR(find(env, "PATH"), "/usr/bin:/bin");
    CHECK_STR(find(env, "GITHUB_TOKEN"), "secret");
    CHECK(find(env, "AWS_SECRET_ACCESS_KEY") == NULL);
    CHECK_STR(find(env, "SANDPIT_FIGURE_FORMAT"), "svg");
    worker_env_free(env);
}

/* Without the sandbox, the kernel's whole environment. */
static void test_without_the_sandbox_every_variable(void)
{
    set_kernel_environment();
    char **env = worker_env_new(false, NULL, "/opt/sandpit-worker.so");
    REQUIRE(env != NULL);
    CHECK_STR(find(env, "AWS_SECRET_ACCESS_KEY"), "secret");
    worker_env_free(env);
}

/* What the supervisor puts before the library (worker_env.c): the sanitizer's
 * runtime in a sanitised build, nothing otherwise. */
#ifndef SANDPIT_WORKER_PRELOAD_FIRST
#define SANDPIT_WORKER_PRELOAD_FIRST ""
#endif

/* The same call gives LD_PRELOAD naming the library alone, where the worker is
 * one; the kernel's own LD_PRELOAD never reaches the worker. */
static void test_ld_preload_names_the_workers_library_alone(void)
{
    for (int sandbox = 0; sandbox < 2; sandbox++) {
        set_kernel_environment();
        char **env = worker_env_new(sandbox, NULL, "/opt/sandpit-worker.so");
        REQUIRE(env != NULL);
#ifdef SANDPIT_WORKER_PYTHON
        CHECK_INT(count_prefix(env, "LD_PRELOAD="), 1);
        CHECK_STR(find(env, "LD_PRELOAD"),
                  SANDPIT_WORKER_PRELOAD_FIRST "/opt/sandpit-worker.so");
#else
        /* the worker is a program: nothing preloaded, and with the sandbox on
         * the kernel's preload is not among the harmless variables */
        if (sandbox)
            CHECK_INT(count_prefix(env, "LD_PRELOAD="), 0);
#endif
        worker_env_free(env);
    }
}

static void test_each_start_adds_its_cgroups_note(void)
{
    set_kernel_environment();
    char **env = worker_env_new(true, NULL, "/opt/sandpit-worker.so");
    REQUIRE(env != NULL);
    char **with = worker_env_with_cgroup(env, "none");
    REQUIRE(with != NULL);
    CHECK_STR(find(with, "SANDPIT_CGROUP"), "none");
    CHECK_STR(find(with, "PATH"), "/usr/bin:/bin");
    CHECK(find(env, "SANDPIT_CGROUP") == NULL);
    worker_env_free_with(with);
    worker_env_free(env);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_the_sandbox_keeps_only_harmless_and_named_variables),
    TESTING_CASE(test_without_the_sandbox_every_variable),
    TESTING_CASE(test_ld_preload_names_the_workers_library_alone),
    TESTING_CASE(test_each_start_adds_its_cgroups_note),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
