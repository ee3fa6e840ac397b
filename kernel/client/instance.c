/* instance: name, write and read the files of a workspace's kernel.
 *
 * Two things make this harder than it looks. A pid alone does not identify a
 * process for long (pids are reused), so the state file keeps the start time
 * the kernel had when it was launched, and a kernel counts as alive only
 * when both match. And two commands may act on one workspace at once (two
 * agents starting it), so start, stop and restart hold a lock on a file of
 * the workspace's own while they change its files. */
#include "kernel/client/instance.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/client/connfile.h"
#include "kernel/util/fsutil.h"
#include "protocol/errbuf.h"

/* out = a followed by b; -ENAMETOOLONG when it does not fit. */
static int join(char *out, size_t len, const char *a, const char *b)
{
    int n = snprintf(out, len, "%s%s", a, b);
    return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

static bool set(const char *name)
{
    const char *v = getenv(name);
    return v && *v;
}

int instance_runtime_dir(char *out, size_t len)
{
    if (set("JUPYTER_RUNTIME_DIR"))
        return join(out, len, getenv("JUPYTER_RUNTIME_DIR"), "");
    const char *pd = getenv("JUPYTER_PLATFORM_DIRS");
    if (pd && *pd && strcmp(pd, "0") != 0 && strcasecmp(pd, "false") != 0 &&
        strcasecmp(pd, "no") != 0 && set("XDG_RUNTIME_DIR"))
        return join(out, len, getenv("XDG_RUNTIME_DIR"), "/jupyter");
    if (set("JUPYTER_DATA_DIR"))
        return join(out, len, getenv("JUPYTER_DATA_DIR"), "/runtime");
    if (set("XDG_DATA_HOME"))
        return join(out, len, getenv("XDG_DATA_HOME"), "/jupyter/runtime");
    if (!set("HOME"))
        return -ENOENT;
    return join(out, len, getenv("HOME"), "/.local/share/jupyter/runtime");
}

int instance_locate(struct instance *in, const char *workspace, char *err, size_t errlen)
{
    memset(in, 0, sizeof *in);
    char cwd[PATH_MAX];
    if (!workspace && !(workspace = getcwd(cwd, sizeof cwd)))
        return errbuf_set(-errno, err, errlen, "cannot tell the current folder: %s",
                          strerror(errno));
    if (!realpath(workspace, in->workspace))
        return errbuf_set(-errno, err, errlen, "the workspace %s cannot be used: %s",
                          workspace, strerror(errno));
    struct stat st;
    if (stat(in->workspace, &st) != 0 || !S_ISDIR(st.st_mode))
        return errbuf_set(-ENOTDIR, err, errlen, "the workspace %s is not a folder",
                          in->workspace);
    int rc = instance_runtime_dir(in->dir, sizeof in->dir);
    if (rc)
        return errbuf_set(rc, err, errlen,
                          "cannot work out the Jupyter runtime folder (%s): set "
                          "JUPYTER_RUNTIME_DIR or HOME",
                          strerror(-rc));
    unsigned char digest[EVP_MAX_MD_SIZE];
    unsigned int dlen = 0;
    if (!EVP_Digest(in->workspace, strlen(in->workspace), digest, &dlen, EVP_sha256(),
                    NULL))
        return errbuf_set(-EIO, err, errlen, "cannot hash the workspace's path");
    char hash[17];
    for (int i = 0; i < 8; i++)
        snprintf(hash + 2 * i, 3, "%02x", digest[i]);
    char base[PATH_MAX];
    char name[40];
    snprintf(name, sizeof name, "/sandpit-%s", hash);
    if (join(base, sizeof base, in->dir, name) ||
        join(in->connection_file, sizeof in->connection_file, base, ".json") ||
        join(in->state_file, sizeof in->state_file, base, ".state.json") ||
        join(in->log_file, sizeof in->log_file, base, ".log") ||
        join(in->lock_file, sizeof in->lock_file, base, ".lock"))
        return errbuf_set(-ENAMETOOLONG, err, errlen,
                          "the Jupyter runtime folder's path is too long");
    return 0;
}

int instance_make_dir(const struct instance *in)
{
    return fsutil_mkdir_p(in->dir, 0700);
}

int instance_lock(const struct instance *in)
{
    /* stop removes the lock file while it holds it: a lock taken on a file
     * that is no longer the one at the path is let go and taken again. */
    for (int tries = 0; tries < 100; tries++) {
        int fd = open(in->lock_file, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
        if (fd < 0)
            return -errno;
        while (flock(fd, LOCK_EX) != 0)
            if (errno != EINTR) {
                int e = errno;
                close(fd);
                return -e;
            }
        struct stat held, named;
        if (fstat(fd, &held) == 0 && stat(in->lock_file, &named) == 0 &&
            held.st_dev == named.st_dev && held.st_ino == named.st_ino)
            return fd;
        close(fd);
    }
    return -EAGAIN;
}

void instance_remove_lock(const struct instance *in)
{
    unlink(in->lock_file);
}

void instance_remove_all(const struct instance *in)
{
    instance_remove(in, true);
    instance_remove_lock(in);
}

unsigned long long instance_start_time(pid_t pid)
{
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    /* The command name (field 2) may hold spaces and parentheses: count the
     * fields after its last ')'. */
    char *p = strrchr(buf, ')');
    if (!p)
        return 0;
    p++;
    for (int field = 3; field < 22 && p; field++) /* p: the space before field 3 */
        p = strchr(p + 1, ' ');
    return p ? strtoull(p + 1, NULL, 10) : 0;
}

bool instance_alive(pid_t pid, unsigned long long start_time)
{
    if (pid <= 0 || (kill(pid, 0) != 0 && errno == ESRCH))
        return false;
    unsigned long long now = instance_start_time(pid);
    if (now == 0 || now != start_time)
        return false;
    /* A zombie (exited, not yet reaped by its parent) is not alive. */
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return false;
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

int instance_write_state(const struct instance *in, pid_t pid, char *const *argv)
{
    json_t *args = json_array();
    for (size_t i = 0; argv && argv[i]; i++)
        json_array_append_new(args, json_string(argv[i]));
    json_t *st = json_pack("{s:i, s:I, s:s, s:s, s:s, s:o}", "pid", (int)pid,
                           "start_time", (json_int_t)instance_start_time(pid),
                           "workspace", in->workspace, "connection_file",
                           in->connection_file, "log", in->log_file, "argv", args);
    char *text = st ? json_dumps(st, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(st);
    if (!text)
        return -ENOMEM;
    int rc = fsutil_write_file(in->state_file, text, strlen(text), 0600);
    free(text);
    return rc;
}

void instance_state_release(struct instance_state *st)
{
    for (size_t i = 0; st->argv && st->argv[i]; i++)
        free(st->argv[i]);
    free(st->argv);
    memset(st, 0, sizeof *st);
}

int instance_read_state(const struct instance *in, struct instance_state *st)
{
    memset(st, 0, sizeof *st);
    json_error_t jerr;
    json_t *root = json_load_file(in->state_file, 0, &jerr);
    if (!root)
        return access(in->state_file, F_OK) != 0 ? -ENOENT : -EINVAL;
    int rc = -EINVAL;
    json_t *pid = json_object_get(root, "pid"), *t = json_object_get(root, "start_time");
    json_t *args = json_object_get(root, "argv");
    if (!json_is_integer(pid) || json_integer_value(pid) <= 0 || !json_is_integer(t) ||
        !json_is_array(args) || json_array_size(args) > 4096)
        goto out;
    st->pid = (pid_t)json_integer_value(pid);
    st->start_time = (unsigned long long)json_integer_value(t);
    size_t n = json_array_size(args);
    if (!(st->argv = calloc(n + 1, sizeof *st->argv))) {
        rc = -ENOMEM;
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        const char *a = json_string_value(json_array_get(args, i));
        if (!a || !(st->argv[i] = strdup(a)))
            goto out;
    }
    rc = 0;
out:
    json_decref(root);
    if (rc)
        instance_state_release(st);
    return rc;
}

void instance_remove(const struct instance *in, bool with_log)
{
    connfile_remove(in->connection_file);
    unlink(in->state_file);
    if (with_log)
        unlink(in->log_file);
}

static bool running_for(const struct instance *in, struct instance_state *st)
{
    if (instance_read_state(in, st) == 0 && instance_alive(st->pid, st->start_time))
        return true;
    instance_state_release(st);
    return false;
}

int instance_find_running(struct instance *in, const char *workspace,
                          struct instance_state *st, char *err, size_t errlen)
{
    memset(st, 0, sizeof *st);
    int rc = instance_locate(in, workspace, err, errlen);
    if (rc)
        return rc;
    if (running_for(in, st))
        return 0;
    if (workspace)
        return 2;
    char up[PATH_MAX];
    snprintf(up, sizeof up, "%s", in->workspace);
    for (int depth = 0; depth < PATH_MAX / 2; depth++) {
        char *slash = strrchr(up, '/');
        if (!slash || slash[1] == 0)
            break; /* past the root */
        slash[slash == up ? 1 : 0] = 0;
        struct instance parent;
        char perr[256];
        if (instance_locate(&parent, up, perr, sizeof perr) == 0 &&
            running_for(&parent, st)) {
            *in = parent;
            return 1;
        }
    }
    return 2;
}
