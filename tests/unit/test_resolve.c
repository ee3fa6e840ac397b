/* sandbox_resolve (sandbox/resolve.c) and sandbox_masks_build's dot-entries: where a
 * protected path really is, and that a missing one is made where a cell could make
 * it, never through a link a cell could turn. Each case lays out a folder in /tmp as
 * a workspace and a folder beside it as "outside". */
#include "sandbox/home.h"
#include "testing.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct layout {
    char root[64], ws[128], out[128];
    struct sandbox_policy p;
};

static void layout_make(struct layout *l)
{
    snprintf(l->root, sizeof l->root, "/tmp/sandpit-resolve-XXXXXX");
    REQUIRE(mkdtemp(l->root) != NULL);
    testing_remove_after(l->root);
    char real[PATH_MAX];
    REQUIRE(realpath(l->root, real) != NULL);
    snprintf(l->ws, sizeof l->ws, "%.100s/ws", real);
    snprintf(l->out, sizeof l->out, "%.100s/out", real);
    REQUIRE(mkdir(l->ws, 0700) == 0 && mkdir(l->out, 0700) == 0);
    sandbox_policy_init(&l->p);
    l->p.workspace = l->ws;
}

static int resolve(struct layout *l, const char *rel, enum sandbox_kind kind, char *out,
                   bool *made)
{
    char path[PATH_MAX], real[PATH_MAX];
    REQUIRE(realpath(l->root, real) != NULL);
    snprintf(path, sizeof path, "%.200s/%.200s", real, rel);
    return sandbox_resolve(&l->p, NULL, path, kind, out, PATH_MAX, made);
}

static void test_a_missing_folder_in_the_workspace_is_made(void)
{
    struct layout l;
    layout_make(&l);
    char got[PATH_MAX], want[256];
    bool made = false;
    CHECK_INT(resolve(&l, "ws/a/b/lib", SANDBOX_KIND_ANY, got, &made), -ENOENT);
    CHECK_INT(resolve(&l, "ws/a/b/lib", SANDBOX_KIND_DIR, got, &made), 0);
    snprintf(want, sizeof want, "%s/a/b/lib", l.ws);
    CHECK_STR(got, want);
    CHECK(made);
    struct stat st;
    CHECK(stat(want, &st) == 0 && S_ISDIR(st.st_mode) && (st.st_mode & 0777) == 0700);
    CHECK_INT(resolve(&l, "ws/a/b/lib", SANDBOX_KIND_DIR, got, &made), 0);
    CHECK(!made); /* there now */
}

static void test_a_missing_file_is_made_empty(void)
{
    struct layout l;
    layout_make(&l);
    char got[PATH_MAX], want[256];
    bool made = false;
    CHECK_INT(resolve(&l, "ws/startup/rc.py", SANDBOX_KIND_FILE, got, &made), 0);
    snprintf(want, sizeof want, "%s/startup/rc.py", l.ws);
    CHECK_STR(got, want);
    struct stat st;
    CHECK(stat(want, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0);
}

static void test_nothing_is_made_outside_the_workspace(void)
{
    struct layout l;
    layout_make(&l);
    char got[PATH_MAX], path[256];
    bool made = false;
    CHECK_INT(resolve(&l, "out/lib", SANDBOX_KIND_DIR, got, &made), -ENOENT);
    snprintf(path, sizeof path, "%s/lib", l.out);
    CHECK(access(path, F_OK) != 0 && !made);
}

static void test_a_link_a_cell_could_turn_is_refused(void)
{
    struct layout l;
    layout_make(&l);
    char got[PATH_MAX], link[256], target[256];
    bool made = false;
    snprintf(link, sizeof link, "%s/lib", l.ws);
    snprintf(target, sizeof target, "%s/x", l.out);
    REQUIRE(symlink(target, link) == 0);
    /* in the workspace, to a folder outside: it would be made there otherwise */
    CHECK_INT(resolve(&l, "ws/lib/sub", SANDBOX_KIND_DIR, got, &made), -ELOOP);
    CHECK(access(target, F_OK) != 0);
    CHECK_INT(resolve(&l, "ws/lib", SANDBOX_KIND_ANY, got, &made), -ELOOP);
}

static void test_a_link_outside_is_followed(void)
{
    struct layout l;
    layout_make(&l);
    char got[PATH_MAX], link[256], want[256];
    bool made = false;
    /* out/ws-link -> ../ws: the user's own link, where no cell writes */
    snprintf(link, sizeof link, "%s/ws-link", l.out);
    REQUIRE(symlink("../ws", link) == 0);
    CHECK_INT(resolve(&l, "out/ws-link/lib", SANDBOX_KIND_DIR, got, &made), 0);
    snprintf(want, sizeof want, "%s/lib", l.ws);
    CHECK_STR(got, want);
    CHECK(made);
    CHECK_INT(resolve(&l, "ws/../out/ws-link/./lib", SANDBOX_KIND_ANY, got, &made), 0);
    CHECK_STR(got, want);
}

static void test_a_fifo_is_not_opened(void)
{
    struct layout l;
    layout_make(&l);
    char got[PATH_MAX], fifo[256];
    bool made = false;
    snprintf(fifo, sizeof fifo, "%s/rc.py", l.ws);
    REQUIRE(mkfifo(fifo, 0600) == 0);
    CHECK_INT(resolve(&l, "ws/rc.py", SANDBOX_KIND_FILE, got, &made), 0);
    CHECK_STR(got, fifo);
    CHECK(!made);
}

static bool listed(char **v, const char *s)
{
    for (size_t i = 0; v && v[i]; i++)
        if (strcmp(v[i], s) == 0)
            return true;
    return false;
}

static void test_a_home_workspace_hides_its_dot_entries(void)
{
    struct layout l;
    layout_make(&l);
    const char *dirs[] = {".config/gh",
                          ".local/lib/py/site-packages",
                          ".local/share/jupyter",
                          "notebooks",
                          ".cache/pip",
                          ".cache/sandpit/tmp-1",
                          NULL};
    const char *files[] = {".pypirc", ".bash_history", "notebooks/kernel-9.json",
                           "data.csv", NULL};
    char path[256], ro[256];
    for (const char *const *d = dirs; *d; d++) {
        char cmd[512];
        snprintf(cmd, sizeof cmd, "mkdir -p '%s/%.100s'", l.ws, *d);
        REQUIRE(system(cmd) == 0);
    }
    for (const char *const *f = files; *f; f++) {
        snprintf(path, sizeof path, "%s/%.100s", l.ws, *f);
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
        REQUIRE(fd >= 0);
        close(fd);
    }
    /* a PYTHONPATH entry under ~/.local: needed, so ~/.local is walked, not hidden */
    snprintf(ro, sizeof ro, "%s/.local/lib/py/site-packages", l.ws);
    const char *ro_paths[] = {ro, NULL};
    l.p.ro_paths = ro_paths;
    /* a temporary folder under ~/.cache: read-write, so ~/.cache is walked too */
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s/.cache/sandpit/tmp-1", l.ws);
    l.p.tmpdir = tmp;
    char home[256];
    snprintf(home, sizeof home, "HOME=%s", l.ws);
    char *envp[] = {home, NULL};
    struct sandbox_masks m;
    REQUIRE(sandbox_masks_build(&m, &l.p, envp, true) == 0);
    const char *hidden[] = {".config",
                            ".pypirc",
                            ".bash_history",
                            ".local/share",
                            ".cache/pip",
                            "notebooks/kernel-9.json",
                            NULL};
    for (const char *const *h = hidden; *h; h++) {
        snprintf(path, sizeof path, "%s/%.100s", l.ws, *h);
        CHECK(listed(m.hidden, path));
    }
    const char *kept[] = {".local",    ".local/lib",     ".local/lib/py/site-packages",
                          ".cache",    ".cache/sandpit", ".cache/sandpit/tmp-1",
                          "notebooks", "data.csv",       NULL};
    for (const char *const *k = kept; *k; k++) {
        snprintf(path, sizeof path, "%s/%.100s", l.ws, *k);
        CHECK(!listed(m.hidden, path));
    }
    CHECK(listed(m.homes, l.ws));
    sandbox_masks_release(&m);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_a_missing_folder_in_the_workspace_is_made),
    TESTING_CASE(test_a_missing_file_is_made_empty),
    TESTING_CASE(test_nothing_is_made_outside_the_workspace),
    TESTING_CASE(test_a_link_a_cell_could_turn_is_refused),
    TESTING_CASE(test_a_link_outside_is_followed),
    TESTING_CASE(test_a_fifo_is_not_opened),
    TESTING_CASE(test_a_home_workspace_hides_its_dot_entries),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
