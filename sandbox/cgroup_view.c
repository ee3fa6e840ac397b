/* cgroup_view: where a process's groups live (cgroup_view.h).
 *
 * The hard part is finding "the kernel's own group" on every kind of machine:
 * with cgroup v1 (memory and pids each mounted on their own), the group in each
 * hierarchy comes from /proc/self/cgroup, and where that hierarchy is mounted
 * from /proc/self/mountinfo, whose root field says which part of it a container
 * sees; cgroup v2 has one hierarchy. */
#include "sandbox/cgroup_view.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sandbox/internal.h"
#include "sandbox/kfile.h"

const char *const cgroup_ctl_names[SANDBOX_CGROUP_NCTL] = {"memory", "pids", "cpu"};

bool cgroup_has_word(const char *list, const char *word)
{
    size_t n = strlen(word);
    for (const char *p = list; (p = strstr(p, word)); p += n)
        if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || !p[n]))
            return true;
    return false;
}

/* True if the comma-separated list (of length len) has word. */
static bool has_item(const char *list, size_t len, const char *word)
{
    size_t n = strlen(word);
    for (size_t i = 0; i < len;) {
        size_t k = i;
        while (k < len && list[k] != ',')
            k++;
        if (k - i == n && memcmp(list + i, word, n) == 0)
            return true;
        i = k + 1;
    }
    return false;
}

int sandbox__cgroup_locate(const char *self, const char *mountinfo, int version,
                           const char *controller, char *dir, size_t len)
{
    /* /proc/self/cgroup: "ID:CONTROLLERS:PATH", v2 as "0::PATH". */
    const char *path = NULL;
    size_t path_len = 0;
    for (const char *line = self; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        const char *c1 = memchr(line, ':', n);
        const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - line)) : NULL;
        if (c2) {
            bool match = version == 2
                             ? c1 - line == 1 && line[0] == '0' && c2 == c1 + 1
                             : has_item(c1 + 1, (size_t)(c2 - c1 - 1), controller);
            if (match) {
                path = c2 + 1;
                path_len = n - (size_t)(c2 + 1 - line);
                break;
            }
        }
        line = end ? end + 1 : NULL;
    }
    if (!path || path_len == 0 || path[0] != '/')
        return -ENOENT;

    /* /proc/self/mountinfo: "ID PARENT DEV ROOT MOUNTPOINT OPTIONS [OPTIONAL...] -
     * FSTYPE SOURCE SUPEROPTIONS". */
    for (const char *line = mountinfo; line && *line;) {
        const char *end = strchr(line, '\n');
        size_t n = end ? (size_t)(end - line) : strlen(line);
        char buf[1024];
        const char *next = end ? end + 1 : NULL;
        if (n >= sizeof buf) {
            line = next;
            continue;
        }
        memcpy(buf, line, n);
        buf[n] = 0;
        line = next;
        char *fields[6] = {0}, *save = NULL, *tok = strtok_r(buf, " ", &save);
        for (int i = 0; i < 6 && tok; i++, tok = strtok_r(NULL, " ", &save))
            fields[i] = tok;
        while (tok && strcmp(tok, "-") != 0)
            tok = strtok_r(NULL, " ", &save);
        char *fstype = tok ? strtok_r(NULL, " ", &save) : NULL;
        char *source = fstype ? strtok_r(NULL, " ", &save) : NULL;
        char *super = source ? strtok_r(NULL, " ", &save) : NULL;
        if (!fields[4] || !fstype)
            continue;
        if (version == 2 ? strcmp(fstype, "cgroup2") != 0
                         : strcmp(fstype, "cgroup") != 0 || !super ||
                               !has_item(super, strlen(super), controller))
            continue;
        const char *root = fields[3], *mnt = fields[4];
        size_t rlen = strcmp(root, "/") == 0 ? 0 : strlen(root);
        if (rlen && (path_len < rlen || memcmp(path, root, rlen) != 0 ||
                     (path_len > rlen && path[rlen] != '/')))
            continue; /* this mount shows another part of the hierarchy */
        const char *rest = path + rlen;
        size_t rest_len = path_len - rlen;
        if (rest_len == 1 && rest[0] == '/')
            rest_len = 0;
        int k = snprintf(dir, len, "%s%.*s", mnt, (int)rest_len, rest);
        return k > 0 && (size_t)k < len ? 0 : -ENAMETOOLONG;
    }
    return -ENOENT;
}

struct cgroup_view cgroup_view_read(char *texts[2])
{
    texts[0] = kfile_read_text("/proc/self/cgroup");
    texts[1] = kfile_read_text("/proc/self/mountinfo");
    return (struct cgroup_view){texts[0] ? texts[0] : "", texts[1] ? texts[1] : ""};
}

int cgroup_view_locate(const struct cgroup_view *v, int version, const char *controller,
                       char *dir, size_t len)
{
    return sandbox__cgroup_locate(v->self, v->mountinfo, version, controller, dir, len);
}

int cgroup_view_memory_version(const struct cgroup_view *v, char *dir, size_t len)
{
    if (cgroup_view_locate(v, 1, "memory", dir, len) == 0)
        return 1;
    if (cgroup_view_locate(v, 2, NULL, dir, len) == 0) {
        char controllers[256] = "";
        if (kfile_read_line_at(dir, "cgroup.controllers", controllers,
                               sizeof controllers) == 0 &&
            cgroup_has_word(controllers, "memory"))
            return 2;
    }
    return 0;
}
