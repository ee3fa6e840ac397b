/* connfile: ports by binding, a key from the kernel's random source.
 *
 * Ports are chosen as jupyter_client chooses them: bind to port 0 on the
 * loopback address and read which port the system gave. All five sockets are
 * held open until the fifth is bound, so the five differ; they are closed
 * before the kernel binds them, which leaves a short window in which another
 * program could take one (the kernel then fails naming the port). The file
 * is written to a temporary name with mode 0600 and renamed, so no reader
 * ever sees half a key and nobody else can read it.
 *
 * TCP has a cost beyond the key: any local process can connect, and iopub,
 * where every cell's code and output is published, takes no key at all. The
 * kernels sandpit starts itself listen on ipc sockets instead, in a folder of
 * mode 0700 beside their connection file, in the Jupyter runtime folder that
 * every worker has hidden. */
#include "kernel/client/connfile.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "kernel/util/fsutil.h"
#include "protocol/connection.h"
#include "protocol/errbuf.h"
#include "sandbox/tfile.h"

static int free_ports(int ports[CONNECTION_NCHANNELS])
{
    int fds[CONNECTION_NCHANNELS], rc = 0, n = 0;
    for (; n < CONNECTION_NCHANNELS; n++) {
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        socklen_t alen = sizeof a;
        fds[n] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fds[n] < 0 || bind(fds[n], (struct sockaddr *)&a, sizeof a) != 0 ||
            getsockname(fds[n], (struct sockaddr *)&a, &alen) != 0) {
            rc = -errno;
            if (fds[n] >= 0)
                close(fds[n]);
            break;
        }
        ports[n] = ntohs(a.sin_port);
    }
    for (int i = 0; i < n; i++)
        close(fds[i]);
    return rc;
}

/* Writes the connection file at path with a new key: mode 0600, whole or not
 * at all (fsutil_write_file), so that no reader sees half a key and nobody
 * else can read it. */
static int write_connection_file(const char *path, const char *transport, const char *ip,
                                 const int ports[CONNECTION_NCHANNELS], char *err,
                                 size_t errlen)
{
    unsigned char r[16];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r)
        return errbuf_set(-errno, err, errlen, "cannot make a key: %s", strerror(errno));
    char key[40];
    r[6] = (r[6] & 0x0f) | 0x40; /* a UUID 4, as jupyter_client's keys are */
    r[8] = (r[8] & 0x3f) | 0x80;
    snprintf(key, sizeof key,
             "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x", r[0],
             r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], r[10], r[11], r[12],
             r[13], r[14], r[15]);
    json_t *doc = json_pack(
        "{s:i, s:i, s:i, s:i, s:i, s:s, s:s, s:s, s:s, s:s}", "shell_port",
        ports[CONNECTION_SHELL], "iopub_port", ports[CONNECTION_IOPUB], "stdin_port",
        ports[CONNECTION_STDIN], "control_port", ports[CONNECTION_CONTROL], "hb_port",
        ports[CONNECTION_HB], "ip", ip, "key", key, "transport", transport,
        "signature_scheme", "hmac-sha256", "kernel_name", "sandpit");
    char *text = doc ? json_dumps(doc, JSON_INDENT(1) | JSON_PRESERVE_ORDER) : NULL;
    json_decref(doc);
    memset(key, 0, sizeof key);
    memset(r, 0, sizeof r);
    if (!text)
        return -ENOMEM;
    size_t len = strlen(text);
    int rc = fsutil_write_file(path, text, len, 0600);
    if (rc)
        errbuf_set(rc, err, errlen, "cannot write the connection file %s: %s", path,
                   tfile_strerror(rc));
    memset(text, 0, len);
    free(text);
    return rc;
}

int connfile_write(const char *path, char *err, size_t errlen)
{
    int ports[CONNECTION_NCHANNELS];
    int rc = free_ports(ports);
    if (rc)
        return errbuf_set(rc, err, errlen, "cannot find free ports on 127.0.0.1: %s",
                          strerror(-rc));
    return connfile_write_ports(path, "127.0.0.1", ports, err, errlen);
}

int connfile_write_ports(const char *path, const char *ip,
                         const int ports[CONNECTION_NCHANNELS], char *err, size_t errlen)
{
    return write_connection_file(path, "tcp", ip, ports, err, errlen);
}

int connfile_ipc_dir(const char *path, char *out, size_t len)
{
    size_t n = strlen(path);
    if (n > 5 && strcmp(path + n - 5, ".json") == 0)
        n -= 5;
    int k = snprintf(out, len, "%.*s.ipc", (int)n, path);
    return k < 0 || (size_t)k >= len ? -ENAMETOOLONG : 0;
}

/* The folder of the sockets: made with mode 0700, or, left by an earlier
 * kernel, taken only if it is a folder of this user's (not a link), and made
 * 0700 again. */
static int make_ipc_dir(const char *dir)
{
    int fd = tfile_private_dir(dir, true);
    if (fd < 0)
        return fd;
    close(fd);
    return 0;
}

int connfile_write_ipc(const char *path, char *err, size_t errlen)
{
    char dir[PATH_MAX], ip[PATH_MAX];
    struct sockaddr_un sun;
    int rc = connfile_ipc_dir(path, dir, sizeof dir);
    /* ZeroMQ's socket files are "<ip>-<port>", as jupyter_client names them. */
    if (rc || snprintf(ip, sizeof ip, "%s/k", dir) >= (int)sizeof ip ||
        strlen(ip) + sizeof "-5" > sizeof sun.sun_path) {
        rc = connfile_write(path, err, errlen);
        return rc ? rc : 1;
    }
    if ((rc = make_ipc_dir(dir)))
        return errbuf_set(rc, err, errlen, "cannot make the folder %s: %s", dir,
                          strerror(-rc));
    int ports[CONNECTION_NCHANNELS];
    for (int ch = 0; ch < CONNECTION_NCHANNELS; ch++)
        ports[ch] = ch + 1;
    return write_connection_file(path, "ipc", ip, ports, err, errlen);
}

void connfile_remove(const char *path)
{
    unlink(path);
    char dir[PATH_MAX];
    if (connfile_ipc_dir(path, dir, sizeof dir))
        return;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return;
    for (int ch = 0; ch < CONNECTION_NCHANNELS; ch++) {
        char name[16];
        snprintf(name, sizeof name, "k-%d", ch + 1);
        unlinkat(fd, name, 0);
    }
    close(fd);
    rmdir(dir);
}
