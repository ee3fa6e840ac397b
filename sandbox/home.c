/* home: what of the user's own setup a cell must never change, or never read.
 *
 * Jupyter starts a kernel in the notebook's folder, often the home folder, and the
 * workspace is read-write: without more, a cell could read another kernel's
 * connection file (and run code there), write a kernelspec whose argv is /bin/sh,
 * or append to ~/.bashrc, and the next kernel or login would run unconfined. Landlock
 * can only allow, never deny a part of what it allows, so the mount namespace does it
 * (namespaces.c): secret folders are covered by an empty one, the rest is bound
 * read-only, and the top of a home folder inside the workspace becomes read-only but
 * for its entries that are not dot-files, so no new ~/.bash_profile or ~/.local can be
 * made either.
 *
 * The places come from the same environment variables Jupyter, IPython and Python
 * read (the supervisor passes them to the worker), with their defaults.
 */
#include "sandbox/home.h"

#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Under a home folder: folders and files whose content is a secret. */
static const char *const secret_names[] = {
    ".ssh", ".gnupg",  ".netrc", ".pgpass",         ".git-credentials",
    ".aws", ".docker", ".kube",  ".password-store", NULL,
};

/* Under a home folder: what runs code at the next login, shell, Python or Jupyter
 * (the top of a home inside the workspace is read-only anyway; these are listed for
 * homes that are not, where they could only be reached through a workspace inside
 * them: nothing to do there, but a JUPYTER_* variable may point into the workspace). */
static const char *const startup_names[] = {
    ".bashrc",          ".bash_profile", ".bash_login", ".bash_logout", ".profile",
    ".zshrc",           ".zshenv",       ".zprofile",   ".zlogin",      ".zlogout",
    ".cshrc",           ".tcshrc",       ".login",      ".logout",      ".kshrc",
    ".mkshrc",          ".inputrc",      ".xprofile",   ".xinitrc",     ".xsession",
    ".pam_environment", ".config",       ".local",      ".jupyter",     ".ipython",
    ".pythonrc",        ".pythonrc.py",  NULL,
};

static const char *env_get(char *const envp[], const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; envp && envp[i]; i++)
        if (strncmp(envp[i], name, n) == 0 && envp[i][n] == '=')
            return envp[i][n + 1] ? envp[i] + n + 1 : NULL;
    return NULL;
}

/* True if path is dir or lies beneath it. */
static bool beneath(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    if (n == 1 && dir[0] == '/')
        return true;
    return strncmp(path, dir, n) == 0 && (path[n] == 0 || path[n] == '/');
}

/* A NULL-terminated list of new strings. */
struct list {
    char **v;
    size_t n;
};

static int list_add(struct list *l, const char *s)
{
    for (size_t i = 0; i < l->n; i++)
        if (strcmp(l->v[i], s) == 0)
            return 0;
    char **nv = realloc(l->v, (l->n + 2) * sizeof *nv);
    if (!nv)
        return -ENOMEM;
    l->v = nv;
    if (!(nv[l->n] = strdup(s)))
        return -ENOMEM;
    nv[++l->n] = NULL;
    return 0;
}

static void list_free(char **v)
{
    for (size_t i = 0; v && v[i]; i++)
        free(v[i]);
    free(v);
}

/* The read-write paths of the policy (workspace, tmpdir, rw_paths). */
static bool in_rw(const struct sandbox_policy *p, const char *path)
{
    if (p->workspace && beneath(path, p->workspace))
        return true;
    if (p->tmpdir && beneath(path, p->tmpdir))
        return true;
    for (const char *const *s = p->rw_paths; s && *s; s++)
        if (beneath(path, *s))
            return true;
    return false;
}

/* True if path holds a read-write path (masking it would take that away). */
static bool holds_rw(const struct sandbox_policy *p, const char *path)
{
    if (p->workspace && beneath(p->workspace, path))
        return true;
    if (p->tmpdir && beneath(p->tmpdir, path))
        return true;
    for (const char *const *s = p->rw_paths; s && *s; s++)
        if (beneath(*s, path))
            return true;
    return false;
}

struct build {
    const struct sandbox_policy *p;
    struct list hidden, readonly, homes, skipped;
    int rc;
};

/* Adds a candidate: its real path, if it exists, to the list it belongs in. */
static void candidate(struct build *b, const char *path, bool secret)
{
    char real[PATH_MAX];
    if (b->rc || !path || path[0] != '/' || !realpath(path, real))
        return;
    if (holds_rw(b->p, real)) {
        b->rc = list_add(&b->skipped, real);
        return;
    }
    if (secret) {
        b->rc = list_add(&b->hidden, real);
        return;
    }
    if (!in_rw(b->p, real))
        return; /* read-only already, like everything outside the read-write paths */
    for (size_t i = 0; i < b->homes.n; i++)
        if (beneath(real, b->homes.v[i]) && strcmp(real, b->homes.v[i]) != 0) {
            /* a dot-entry at the top of such a home is read-only with the top */
            const char *rest = real + strlen(b->homes.v[i]) + 1;
            if (rest[0] == '.')
                return;
        }
    b->rc = list_add(&b->readonly, real);
}

static void candidate_in(struct build *b, const char *dir, const char *name, bool secret)
{
    char path[PATH_MAX];
    if (dir && snprintf(path, sizeof path, "%s/%s", dir, name) < (int)sizeof path)
        candidate(b, path, secret);
}

/* Each entry of a colon-separated list, with name appended (NULL: the entry). */
static void candidates_in_list(struct build *b, const char *list, const char *name,
                               bool secret)
{
    for (const char *s = list; s && *s;) {
        size_t n = strcspn(s, ":");
        char dir[PATH_MAX];
        if (n && n < sizeof dir) {
            memcpy(dir, s, n);
            dir[n] = 0;
            if (name)
                candidate_in(b, dir, name, secret);
            else
                candidate(b, dir, secret);
        }
        s += n + (s[n] == ':');
    }
}

int sandbox_masks_build(struct sandbox_masks *m, const struct sandbox_policy *p,
                        char *const envp[])
{
    memset(m, 0, sizeof *m);
    struct build b = {.p = p};
    const char *homes[2] = {env_get(envp, "HOME"), NULL};
    struct passwd *pw = getpwuid(getuid());
    if (pw && pw->pw_dir)
        homes[1] = pw->pw_dir;
    char real[PATH_MAX];
    for (int i = 0; i < 2; i++)
        if (homes[i] && homes[i][0] == '/' && realpath(homes[i], real) &&
            strcmp(real, "/") != 0 && in_rw(p, real) && !b.rc)
            b.rc = list_add(&b.homes, real);

    const char *data = env_get(envp, "JUPYTER_DATA_DIR");
    const char *xdg_data = env_get(envp, "XDG_DATA_HOME");
    const char *xdg_config = env_get(envp, "XDG_CONFIG_HOME");
    const char *xdg_runtime = env_get(envp, "XDG_RUNTIME_DIR");
    /* Connection files: every runtime folder Jupyter uses or used. */
    candidate(&b, env_get(envp, "JUPYTER_RUNTIME_DIR"), true);
    candidate_in(&b, data, "runtime", true);
    if (xdg_data) {
        char dir[PATH_MAX];
        snprintf(dir, sizeof dir, "%s/jupyter/runtime", xdg_data);
        candidate(&b, dir, true);
    }
    candidate_in(&b, xdg_runtime, "jupyter", true);
    for (int i = 0; i < 2; i++) {
        if (!homes[i] || homes[i][0] != '/')
            continue;
        candidate_in(&b, homes[i], ".local/share/jupyter/runtime", true);
        for (const char *const *s = secret_names; *s; s++)
            candidate_in(&b, homes[i], *s, true);
    }
    /* Kernelspecs, extensions and configuration: code Jupyter runs unconfined. */
    candidate(&b, data, false);
    candidate_in(&b, xdg_data, "jupyter", false);
    candidates_in_list(&b, env_get(envp, "JUPYTER_PATH"), NULL, false);
    candidate(&b, env_get(envp, "JUPYTER_CONFIG_DIR"), false);
    candidates_in_list(&b, env_get(envp, "JUPYTER_CONFIG_PATH"), NULL, false);
    candidate(&b, xdg_config, false);
    candidate(&b, env_get(envp, "IPYTHONDIR"), false);
    candidate(&b, env_get(envp, "PYTHONSTARTUP"), false);
    candidate(&b, env_get(envp, "PYTHONUSERBASE"), false);
    /* Modules every Python of the user imports at start-up. */
    candidates_in_list(&b, env_get(envp, "PYTHONPATH"), "sitecustomize.py", false);
    candidates_in_list(&b, env_get(envp, "PYTHONPATH"), "usercustomize.py", false);
    for (int i = 0; i < 2; i++)
        for (const char *const *s = startup_names; homes[i] && *s; s++)
            candidate_in(&b, homes[i], *s, false);
    /* What the policy gives to read only (a virtual environment, --read folders,
     * PYTHONPATH) stays read-only where it lies in a read-write path. */
    for (const char *const *s = p->ro_paths; s && *s; s++)
        if (realpath(*s, real) && in_rw(p, real))
            candidate(&b, real, false);

    m->hidden = b.hidden.v;
    m->readonly = b.readonly.v;
    m->homes = b.homes.v;
    m->skipped = b.skipped.v;
    if (b.rc) {
        sandbox_masks_release(m);
        return b.rc;
    }
    return 0;
}

void sandbox_masks_release(struct sandbox_masks *m)
{
    list_free(m->hidden);
    list_free(m->readonly);
    list_free(m->homes);
    list_free(m->skipped);
    memset(m, 0, sizeof *m);
}
