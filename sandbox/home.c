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

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
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

/* True if path holds a read-write path (masking it would take that away). */
static bool holds_rw(const struct sandbox_policy *p, const char *path)
{
    if (p->workspace && sandbox_path_beneath(p->workspace, path))
        return true;
    if (p->tmpdir && sandbox_path_beneath(p->tmpdir, path))
        return true;
    for (const char *const *s = p->rw_paths; s && *s; s++)
        if (sandbox_path_beneath(*s, path))
            return true;
    return false;
}

struct build {
    const struct sandbox_policy *p;
    struct list hidden, readonly, homes, skipped, made;
    bool create;
    const char *home; /* the home folder whose dot-entries are being walked */
    char *why;        /* the masks' why[] */
    size_t why_len;
    int rc;
};

/* The real path of a candidate into real: false if there is none. A missing one is
 * made where a cell could make it (with create, resolve.c); one reached through a link
 * a cell could turn stops the build. */
static bool resolve(struct build *b, const char *path, enum sandbox_kind kind, char *real)
{
    bool made = false;
    int rc = sandbox_resolve(b->p, (const char *const *)b->homes.v, path,
                             b->create ? kind : SANDBOX_KIND_ANY, real, PATH_MAX, &made);
    if (rc == -ELOOP && b->create) {
        snprintf(
            b->why, b->why_len,
            "%.200s is reached through a symbolic link in the workspace, which the code "
            "could point elsewhere between two workers: name the real folder instead",
            path);
        b->rc = rc;
        return false;
    }
    if (rc == 0 && made)
        b->rc = list_add(&b->made, real);
    if (rc == -ENOENT)
        return false;
    return rc == 0 || realpath(path, real); /* unusual errors: as realpath sees it */
}

/* Adds a candidate: its real path, if it exists, to the list it belongs in. */
static void candidate_kind(struct build *b, const char *path, bool secret,
                           enum sandbox_kind kind)
{
    char real[PATH_MAX];
    if (b->rc || !path || path[0] != '/' || !resolve(b, path, kind, real) || b->rc)
        return;
    if (holds_rw(b->p, real)) {
        b->rc = list_add(&b->skipped, real);
        return;
    }
    if (secret) {
        b->rc = list_add(&b->hidden, real);
        return;
    }
    if (!sandbox_path_in_rw(b->p, real))
        return; /* read-only already, like everything outside the read-write paths */
    for (size_t i = 0; i < b->homes.n; i++)
        if (sandbox_path_beneath(real, b->homes.v[i]) &&
            strcmp(real, b->homes.v[i]) != 0) {
            /* a dot-entry at the top of such a home is read-only with the top */
            const char *rest = real + strlen(b->homes.v[i]) + 1;
            if (rest[0] == '.')
                return;
        }
    b->rc = list_add(&b->readonly, real);
}

static void candidate(struct build *b, const char *path, bool secret)
{
    candidate_kind(b, path, secret, SANDBOX_KIND_ANY);
}

/* A place the environment names for Jupyter, IPython or Python: made if missing. */
static void named(struct build *b, const char *path, bool secret, enum sandbox_kind kind)
{
    candidate_kind(b, path, secret, kind);
}

static void candidate_in(struct build *b, const char *dir, const char *name, bool secret)
{
    char path[PATH_MAX];
    if (dir && snprintf(path, sizeof path, "%s/%s", dir, name) < (int)sizeof path)
        candidate(b, path, secret);
}

/* An entry of a list of folders (JUPYTER_PATH, PATH): a relative one is taken as the
 * workspace's, where Jupyter and shells started there would look (kept read-only if it
 * exists; not made: a relative PATH entry names a different folder in each). */
static void named_in_workspace(struct build *b, const char *dir, bool secret)
{
    char path[PATH_MAX];
    if (dir[0] == '/')
        named(b, dir, secret, SANDBOX_KIND_DIR);
    else if (b->p->workspace && snprintf(path, sizeof path, "%s/%s", b->p->workspace,
                                         dir) < (int)sizeof path)
        named(b, path, secret, SANDBOX_KIND_ANY);
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
                named_in_workspace(b, dir, secret);
        }
        s += n + (s[n] == ':');
    }
}

/* True if the code needs path or something beneath it: a read-write path, or one of
 * the policy's read-only paths (the interpreter's, --venv, --read, PYTHONPATH). */
static bool holds_needed(const struct sandbox_policy *p, const char *path)
{
    if (holds_rw(p, path))
        return true;
    for (const char *const *s = p->ro_paths; s && *s; s++)
        if (sandbox_path_beneath(*s, path))
            return true;
    return false;
}

/* True if path is needed whole: it is, or lies in, a read-write or read-only path of
 * the policy, other than one that holds the home folder being walked. */
static bool needed(const struct build *b, const char *path)
{
    const struct sandbox_policy *p = b->p;
    const char *const tmp[2] = {p->tmpdir, NULL};
    const char *const *lists[3] = {tmp, p->rw_paths, p->ro_paths};
    for (int i = 0; i < 3; i++)
        for (const char *const *s = lists[i]; s && *s; s++)
            if (sandbox_path_beneath(path, *s) &&
                !(b->home && sandbox_path_beneath(b->home, *s)))
                return true;
    return false;
}

#define DOTS_MAX_ENTRIES 4096
#define DOTS_MAX_DEPTH   8

static void hide_dots_in(struct build *b, const char *dir, int depth);

/* One entry met by hide_dots_in: hidden, unless the code needs it; a folder that holds
 * something needed is walked, and only what it does not need is hidden. */
static void hide_dot_entry(struct build *b, const char *path, int depth)
{
    struct stat st;
    char real[PATH_MAX];
    if (needed(b, path) || lstat(path, &st) < 0)
        return;
    if (S_ISLNK(st.st_mode)) {
        /* Where it leads in a read-write path, that is hidden instead (a dot-file kept
         * in a folder of dot-files); elsewhere Landlock and the read-only mounts judge
         * it, and covering it could cover a system folder. */
        if (realpath(path, real) && sandbox_path_in_rw(b->p, real) &&
            !holds_needed(b->p, real) && !needed(b, real))
            b->rc = list_add(&b->hidden, real);
        return;
    }
    if (!holds_needed(b->p, path))
        b->rc = list_add(&b->hidden, path);
    else if (S_ISDIR(st.st_mode) && depth < DOTS_MAX_DEPTH)
        hide_dots_in(b, path, depth + 1);
}

/* The dot-entries at the top of a home folder (depth 0), or every entry of a folder
 * beneath one that holds something the code needs. */
static void hide_dots_in(struct build *b, const char *dir, int depth)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *e;
    int n = 0;
    while (!b->rc && (e = readdir(d))) {
        char path[PATH_MAX];
        if ((depth == 0 && e->d_name[0] != '.') || strcmp(e->d_name, ".") == 0 ||
            strcmp(e->d_name, "..") == 0 ||
            snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= (int)sizeof path)
            continue;
        if (n++ == DOTS_MAX_ENTRIES)
            break; /* what is beyond stays read-only (the home's top is), not hidden */
        hide_dot_entry(b, path, depth);
    }
    closedir(d);
}

/* Names of the files that hold a Jupyter key or token: connection files (jupyter_client's
 * kernel-<id>.json), a server's information and its browser-opening page, secrets. */
static const char *const key_patterns[] = {
    "kernel-*.json",        "jpserver-*.json",
    "nbserver-*.json",      "jpserver-*-open.html",
    "nbserver-*-open.html", "jupyter_cookie_secret",
    "notebook_secret",      NULL,
};

/* What a version-control tool or an editor runs from a project without asking: git's
 * hooks and config (core.fsmonitor, core.pager, a gitdir: file pointing elsewhere),
 * Mercurial's hooks, VS Code's settings (an interpreter path it runs on opening). */
static bool is_tool_folder(const char *name)
{
    return strcmp(name, ".git") == 0 || strcmp(name, ".hg") == 0 ||
           strcmp(name, ".vscode") == 0;
}

#define SCAN_MAX_DEPTH   2     /* the workspace, its folders, and theirs */
#define SCAN_MAX_ENTRIES 65536 /* in all: a bound on the time a worker's start takes */

/* The type of a folder's entry, from readdir where the file system gives it (most do:
 * no stat for each of thousands of files), else from fstatat without following it. */
static int entry_type(int dirfd, const struct dirent *e)
{
    struct stat st;
    if (e->d_type != DT_UNKNOWN)
        return e->d_type;
    if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return DT_UNKNOWN;
    return S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_UNKNOWN;
}

static bool is_key_file(const char *name)
{
    if (!strchr("kjn",
                name[0])) /* what every pattern starts with: most names stop here */
        return false;
    for (const char *const *k = key_patterns; *k; k++)
        if (fnmatch(*k, name, 0) == 0)
            return true;
    return false;
}

/* Every file in the workspace named like one that holds a key, down to SCAN_MAX_DEPTH
 * folders: hidden; every tool folder (is_tool_folder): read-only. Each folder is
 * opened relative to the one above (name in dirfd), never following a link; path is
 * what the list gets. */
static void scan_keys(struct build *b, int dirfd, const char *name, const char *path,
                      int depth, int *seen)
{
    int fd =
        openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *e;
    while (!b->rc && (*seen)++ < SCAN_MAX_ENTRIES && (e = readdir(d))) {
        char sub[PATH_MAX];
        int type = entry_type(fd, e);
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0 ||
            snprintf(sub, sizeof sub, "%s/%s", path, e->d_name) >= (int)sizeof sub)
            continue;
        if (is_tool_folder(e->d_name) && (type == DT_DIR || type == DT_REG))
            candidate(b, sub, false);
        else if (type == DT_DIR && depth < SCAN_MAX_DEPTH)
            scan_keys(b, fd, e->d_name, sub, depth + 1, seen);
        else if (type == DT_REG && is_key_file(e->d_name))
            b->rc = list_add(&b->hidden, sub);
    }
    closedir(d);
}

/* Where Jupyter keeps its runtime files, and what in its data folders is secret. */
static void jupyter_secrets(struct build *b, char *const envp[], const char *const *homes)
{
    const char *data = env_get(envp, "JUPYTER_DATA_DIR");
    const char *xdg_data = env_get(envp, "XDG_DATA_HOME");
    char dir[PATH_MAX];
    /* Connection files: every runtime folder Jupyter uses or used, made if missing
     * (a cell could read what another kernel writes there later). */
    named(b, env_get(envp, "JUPYTER_RUNTIME_DIR"), true, SANDBOX_KIND_DIR);
    if (data && snprintf(dir, sizeof dir, "%s/runtime", data) < (int)sizeof dir)
        named(b, dir, true, SANDBOX_KIND_DIR);
    candidate_in(b, data, "notebook_secret", true);
    if (xdg_data &&
        snprintf(dir, sizeof dir, "%s/jupyter/runtime", xdg_data) < (int)sizeof dir)
        named(b, dir, true, SANDBOX_KIND_DIR);
    if (xdg_data && snprintf(dir, sizeof dir, "%s/jupyter/notebook_secret", xdg_data) <
                        (int)sizeof dir)
        candidate(b, dir, true);
    candidate_in(b, env_get(envp, "XDG_RUNTIME_DIR"), "jupyter", true);
    for (int i = 0; i < 2; i++) {
        if (!homes[i] || homes[i][0] != '/')
            continue;
        candidate_in(b, homes[i], ".local/share/jupyter/runtime", true);
        candidate_in(b, homes[i], ".local/share/jupyter/notebook_secret", true);
        for (const char *const *s = secret_names; *s; s++)
            candidate_in(b, homes[i], *s, true);
    }
}

/* What runs code unconfined later: made read-only (and made, if missing). */
static void setup_paths(struct build *b, char *const envp[], const char *const *homes)
{
    const char *data = env_get(envp, "JUPYTER_DATA_DIR");
    const char *xdg_data = env_get(envp, "XDG_DATA_HOME");
    char dir[PATH_MAX];
    /* Kernelspecs, extensions and configuration: code Jupyter runs unconfined. */
    named(b, data, false, SANDBOX_KIND_DIR);
    if (xdg_data && snprintf(dir, sizeof dir, "%s/jupyter", xdg_data) < (int)sizeof dir)
        named(b, dir, false, SANDBOX_KIND_DIR);
    candidates_in_list(b, env_get(envp, "JUPYTER_PATH"), NULL, false);
    named(b, env_get(envp, "JUPYTER_CONFIG_DIR"), false, SANDBOX_KIND_DIR);
    candidates_in_list(b, env_get(envp, "JUPYTER_CONFIG_PATH"), NULL, false);
    named(b, env_get(envp, "XDG_CONFIG_HOME"), false, SANDBOX_KIND_DIR);
    named(b, env_get(envp, "IPYTHONDIR"), false, SANDBOX_KIND_DIR);
    named(b, env_get(envp, "PYTHONSTARTUP"), false, SANDBOX_KIND_FILE);
    named(b, env_get(envp, "PYTHONUSERBASE"), false, SANDBOX_KIND_DIR);
    /* Modules every Python of the user imports at start-up. */
    candidates_in_list(b, env_get(envp, "PYTHONPATH"), "sitecustomize.py", false);
    candidates_in_list(b, env_get(envp, "PYTHONPATH"), "usercustomize.py", false);
    /* Programs the user's shell runs by name: every folder on PATH, and the ones a
     * login puts there when they exist (Debian's ~/.profile: ~/bin, ~/.local/bin). */
    candidates_in_list(b, env_get(envp, "PATH"), NULL, false);
    for (int i = 0; i < 2; i++) {
        candidate_in(b, homes[i], "bin", false);
        candidate_in(b, homes[i], ".local/bin", false);
        for (const char *const *s = startup_names; homes[i] && *s; s++)
            candidate_in(b, homes[i], *s, false);
    }
}

int sandbox_masks_build(struct sandbox_masks *m, const struct sandbox_policy *p,
                        char *const envp[], bool create)
{
    memset(m, 0, sizeof *m);
    struct build b = {.p = p, .create = create, .why = m->why, .why_len = sizeof m->why};
    const char *homes[2] = {env_get(envp, "HOME"), NULL};
    struct passwd *pw = getpwuid(getuid());
    if (pw && pw->pw_dir)
        homes[1] = pw->pw_dir;
    char real[PATH_MAX];
    for (int i = 0; i < 2; i++)
        if (homes[i] && homes[i][0] == '/' && realpath(homes[i], real) &&
            strcmp(real, "/") != 0 && sandbox_path_in_rw(p, real) && !b.rc)
            b.rc = list_add(&b.homes, real);
    /* A home folder in the workspace: every dot-entry at its top is hidden, but for
     * what the code needs (POLICY.md); its top is read-only (namespaces.c). */
    for (size_t i = 0; i < b.homes.n && !b.rc; i++) {
        b.home = b.homes.v[i];
        hide_dots_in(&b, b.home, 0);
    }
    b.home = NULL;
    jupyter_secrets(&b, envp, homes);
    int seen = 0;
    if (p->workspace && !b.rc)
        scan_keys(&b, AT_FDCWD, p->workspace, p->workspace, 0, &seen);
    m->scan_cut = seen > SCAN_MAX_ENTRIES;
    setup_paths(&b, envp, homes);
    /* What the policy gives to read only (a virtual environment, --read folders,
     * PYTHONPATH) stays read-only where it lies in a read-write path. */
    for (const char *const *s = p->ro_paths; s && *s; s++)
        if (realpath(*s, real) && sandbox_path_in_rw(p, real))
            candidate(&b, real, false);

    m->hidden = b.hidden.v;
    m->readonly = b.readonly.v;
    m->homes = b.homes.v;
    m->skipped = b.skipped.v;
    m->made = b.made.v;
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
    list_free(m->made);
    m->hidden = m->readonly = m->homes = m->skipped = m->made = NULL;
}
