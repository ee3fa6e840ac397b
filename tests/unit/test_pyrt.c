/* Unit tests for the worker's embedded runtime as the binary carries it: the
 * bytecode that kernel/embed.py compiled at build time is used only by the
 * Python it was compiled for (its magic number), and the build's own does fit
 * the interpreter the binary embeds. Each test initialises CPython in a process
 * of its own. */
#include <Python.h>

#include <string.h>

#include "kernel/embedded.h"
#include "kernel/worker/pyimport.h"
#include "kernel/worker/pyrt.h"
#include "testing.h"

static void python_up(void)
{
    Py_InitializeEx(0);
    REQUIRE(Py_IsInitialized());
}

static void test_bytecode_only_for_its_own_python(void)
{
    python_up();
    unsigned long magic = (unsigned long)PyImport_GetMagicNumber();
    unsigned char pyc[8] = {0};
    for (int i = 0; i < 4; i++)
        pyc[i] = (unsigned char)(magic >> (8 * i));
    CHECK(pyimport_bytecode_fits(pyc, sizeof pyc));
    for (int i = 0; i < 4; i++) { /* another version of Python compiled it */
        unsigned char other[8];
        memcpy(other, pyc, sizeof other);
        other[i] ^= 0x01;
        CHECK(!pyimport_bytecode_fits(other, sizeof other));
    }
    CHECK(!pyimport_bytecode_fits(pyc, 3)); /* too short to say */
    CHECK(!pyimport_bytecode_fits(pyc, 0));
}

static void test_the_build_compiled_every_module_for_this_python(void)
{
    python_up();
    size_t modules = 0;
    for (const struct embedded_file *f = embedded_runtime; f->path; f++) {
        size_t n = strlen(f->path);
        if (strncmp(f->path, "kernel/python/", 14) != 0 || strcmp(f->path + n - 3, ".py"))
            continue;
        char pyc_path[512];
        snprintf(pyc_path, sizeof pyc_path, "%sc", f->path);
        const struct embedded_file *pyc = embedded_runtime_find(pyc_path);
        REQUIRE(pyc != NULL);
        CHECK(pyimport_bytecode_fits(pyc->data, pyc->len));
        modules++;
    }
    CHECK(modules > 10);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_bytecode_only_for_its_own_python),
    TESTING_CASE(test_the_build_compiled_every_module_for_this_python),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
