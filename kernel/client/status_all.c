/* status_all: every sandpit kernel of this user, from the activity files
 * that the kernels keep in the Jupyter runtime folder (kernel/supervisor/
 * idle.h: pid, workspace, busy, since). Nothing is sent to any kernel, so
 * that looking does not count as a request against --idle-timeout. A file
 * whose process is gone, or is not a sandpit kernel (its pid reused), is
 * one a killed kernel left: it is not listed. The folder is read with tfile,
 * as every path of the trusted side. */
#include "kernel/client/status_all.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "kernel/client/instance.h"
#include "kernel/util/flags.h"
#include "sandbox/tfile.h"

/* Whether pid runs `sandpit kernel` (argv[1] is "kernel"). */
static int is_kernel(long pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%ld/cmdline", pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    size_t first = strlen(buf);
    const char *base = strrchr(buf, '/');
    return (size_t)n > first + 1 && strcmp(buf + first + 1, "kernel") == 0 &&
           strstr(base ? base + 1 : buf, "sandpit") != NULL;
}

/* The kernel of one activity file (in dirfd, the runtime folder), or NULL. */
static json_t *read_one(int dirfd, const char *dir, const char *name, time_t now)
{
    char *text = NULL;
    size_t len = 0;
    if (tfile_read(dirfd, name, 4096, &text, &len))
        return NULL;
    json_t *a = json_loadb(text, len, 0, NULL);
    free(text);
    json_t *pid = json_object_get(a, "pid"), *since = json_object_get(a, "since");
    json_t *ws = json_object_get(a, "workspace");
    if (!json_is_integer(pid) || !json_is_integer(since) || !json_is_string(ws) ||
        !is_kernel((long)json_integer_value(pid))) {
        json_decref(a);
        return NULL;
    }
    bool busy = json_is_true(json_object_get(a, "busy"));
    long long secs = (long long)(now - (time_t)json_integer_value(since));
    char conn[PATH_MAX + 256];
    snprintf(conn, sizeof conn, "%s/%.*s.json", dir, (int)(strlen(name) - 9), name);
    json_t *k = json_pack("{s:O, s:O, s:b, s:b, s:s, s:I}", "pid", pid, "workspace", ws,
                          "live", 1, "busy", busy, "connection_file", conn,
                          busy ? "busy_s" : "idle_s", (json_int_t)(secs < 0 ? 0 : secs));
    json_decref(a);
    return k;
}

static void print_text(const json_t *list)
{
    if (!json_array_size(list)) {
        printf("no sandpit kernel is running\n");
        return;
    }
    printf("%-8s %-6s %-10s %s\n", "PID", "STATE", "FOR", "WORKSPACE");
    size_t i;
    json_t *k;
    json_array_foreach(list, i, k) {
        bool busy = json_is_true(json_object_get(k, "busy"));
        char span[32];
        snprintf(span, sizeof span, "%llds",
                 (long long)json_integer_value(
                     json_object_get(k, busy ? "busy_s" : "idle_s")));
        printf("%-8lld %-6s %-10s %s\n",
               (long long)json_integer_value(json_object_get(k, "pid")),
               busy ? "busy" : "idle", span,
               json_string_value(json_object_get(k, "workspace")));
    }
}

struct all_args {
    bool all, json;
};

static const struct flag all_flags[] = {
    {.name = "all", .kind = FLAG_SWITCH, .offset = offsetof(struct all_args, all)},
    {.name = "json", .kind = FLAG_SWITCH, .offset = offsetof(struct all_args, json)},
};

int status_all_main(int argc, char **argv)
{
    struct all_args a = {false, false};
    const struct flags fl = FLAGS_OF("sandpit status", all_flags, false);
    char err[256];
    if (flags_parse(&fl, &a, &argc, argv, err, sizeof err)) {
        fprintf(stderr, "sandpit status: with --all, %s\n", err);
        return 2;
    }
    bool json = a.json;
    char dir[PATH_MAX];
    int dirfd =
        instance_runtime_dir(dir, sizeof dir) == 0 ? tfile_open_root(dir) : -ENOENT;
    int listfd = dirfd >= 0 ? tfile_open_dir(dirfd, "") : dirfd;
    DIR *d = listfd >= 0 ? fdopendir(listfd) : NULL;
    json_t *list = json_array();
    if (!d && listfd != -ENOENT) {
        fprintf(stderr, "sandpit status: cannot read the runtime folder %s: %s\n", dir,
                tfile_strerror(listfd < 0 ? listfd : -errno));
        if (listfd >= 0)
            close(listfd);
        if (dirfd >= 0)
            close(dirfd);
        json_decref(list);
        return 2;
    }
    time_t now = time(NULL);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if (n > 9 && strcmp(e->d_name + n - 9, ".activity") == 0)
            json_array_append_new(list, read_one(dirfd, dir, e->d_name, now));
    }
    if (d)
        closedir(d);
    if (dirfd >= 0)
        close(dirfd);
    if (json) {
        json_t *out = json_pack("{s:o}", "kernels", list);
        char *text = out ? json_dumps(out, JSON_INDENT(2)) : NULL;
        printf("%s\n", text ? text : "{\"kernels\": []}");
        free(text);
        json_decref(out);
    } else {
        print_text(list);
        json_decref(list);
    }
    return 0;
}
