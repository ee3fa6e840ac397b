/* userdir: the workspace per user of the gateway, and the log's context
 * (see userdir.h). */
#include "kernel/util/userdir.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/cmd/install.h"
#include "kernel/util/log.h"
#include "kernel/options.h"
#include "protocol/errbuf.h"
#include "sandbox/tfile.h"

#define PLACEHOLDER_LEN (sizeof USERDIR_PLACEHOLDER - 1)

bool userdir_valid(const char *name)
{
    /* A kernelspec's characters and length (USERDIR_MAX is the same 64),
     * and no leading dot: no ".", "..", nor a hidden folder. */
    return name && name[0] != '.' && install_valid_name(name);
}

/* name as it may be quoted in a sentence: at most 64 bytes, with what is not
 * printable ASCII as '?'. */
static void quotable(const char *name, char *buf, size_t len)
{
    size_t i = 0;
    for (; name[i] && i + 1 < len && i < USERDIR_MAX; i++)
        buf[i] = (name[i] > 0x20 && name[i] < 0x7f) ? name[i] : '?';
    buf[i] = 0;
}

/* Where the placeholder is in ws: a whole component, once. NULL (err set)
 * otherwise. */
static const char *find_placeholder(const char *ws, char *err, size_t errlen)
{
    const char *p = strstr(ws, USERDIR_PLACEHOLDER);
    const char *end = p + PLACEHOLDER_LEN;
    if ((p != ws && p[-1] != '/') || (*end && *end != '/') ||
        strstr(end, USERDIR_PLACEHOLDER)) {
        errbuf_set(-EINVAL, err, errlen,
                   "--workspace %s: " USERDIR_PLACEHOLDER
                   " must be a whole folder of the path, once",
                   ws);
        return NULL;
    }
    return p;
}

/* Makes rel (the user's folders) beneath parent; 0 or -errno with err set. */
static int make_user_folder(const char *parent, const char *rel, char *err, size_t errlen)
{
    int dfd = tfile_open_root(parent);
    if (dfd < 0)
        return errbuf_set(dfd, err, errlen,
                          "the workspaces' folder %s cannot be opened: %s (it must "
                          "exist on this host)",
                          parent, tfile_strerror(dfd));
    int fd = tfile_mkdir(dfd, rel, 0700);
    close(dfd);
    if (fd < 0)
        return errbuf_set(fd, err, errlen, "cannot make the workspace %s in %s: %s", rel,
                          parent, tfile_strerror(fd));
    struct stat st;
    int rc = fstat(fd, &st) != 0 ? -errno : 0;
    close(fd);
    if (rc)
        return errbuf_set(rc, err, errlen, "cannot read the workspace %s in %s: %s", rel,
                          parent, strerror(-rc));
    if (st.st_uid != geteuid())
        return errbuf_set(-EPERM, err, errlen,
                          "the workspace %s in %s belongs to another user (uid %u)", rel,
                          parent, (unsigned)st.st_uid);
    return 0;
}

int userdir_workspace(const char *ws, const char *username, char **out, char *err,
                      size_t errlen)
{
    *out = NULL;
    if (!ws || !strstr(ws, USERDIR_PLACEHOLDER))
        return 0;
    const char *p = find_placeholder(ws, err, errlen);
    if (!p)
        return -EINVAL;
    if (!username || !*username)
        return errbuf_set(-EINVAL, err, errlen,
                          "--workspace %s names the gateway's user, but KERNEL_USERNAME "
                          "is not set",
                          ws);
    if (!userdir_valid(username)) {
        char shown[USERDIR_MAX + 1];
        quotable(username, shown, sizeof shown);
        return errbuf_set(-EINVAL, err, errlen,
                          "the user name \"%s\" (KERNEL_USERNAME) cannot name a "
                          "workspace: it may hold only letters, digits, '.', '_' and "
                          "'-', not start with '.', and have at most %d",
                          shown, USERDIR_MAX);
    }
    size_t head = (size_t)(p - ws);
    /* The folder before the placeholder: "/" for "/{username}", "." for a
     * relative "{username}/...". */
    size_t plen = head > 1 ? head - 1 : head;
    char *parent = plen ? strndup(ws, plen) : strdup(".");
    size_t rlen = strlen(username) + strlen(p + PLACEHOLDER_LEN) + 1;
    char *rel = malloc(rlen);
    if (!parent || !rel) {
        free(parent);
        free(rel);
        return -ENOMEM;
    }
    snprintf(rel, rlen, "%s%s", username, p + PLACEHOLDER_LEN);
    int rc = make_user_folder(parent, rel, err, errlen);
    size_t olen = strlen(parent) + rlen + 1;
    if (!rc && !(*out = malloc(olen)))
        rc = -ENOMEM;
    if (!rc)
        snprintf(*out, olen, "%s%s%s", parent,
                 parent[strlen(parent) - 1] == '/' ? "" : "/", rel);
    free(parent);
    free(rel);
    return rc;
}

void userdir_log_context(const char *kernel_id, const char *username, char *buf,
                         size_t len)
{
    if (userdir_valid(username))
        snprintf(buf, len, "kernel_id=%s user=%s", kernel_id, username);
    else
        snprintf(buf, len, "kernel_id=%s", kernel_id);
}

void userdir_log_start(const char *kernel_id)
{
    char context[160];
    userdir_log_context(kernel_id, getenv("KERNEL_USERNAME"), context, sizeof context);
    log_set_context(context);
}

int userdir_apply(struct options *o, char *err, size_t errlen)
{
    char *ws = NULL;
    int rc = userdir_workspace(o->workspace, getenv("KERNEL_USERNAME"), &ws, err, errlen);
    if (rc || !ws)
        return rc;
    free(o->workspace);
    o->workspace = ws;
    return 0;
}
