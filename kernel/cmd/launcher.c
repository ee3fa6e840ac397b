/* launcher: the launch handshake with Jupyter Enterprise Gateway.
 *
 * What the gateway expects was read from its own code: its kernelspecs pass
 * --RemoteProcessProxy.kernel-id, -response-address, -public-key and
 * -port-range; its Python launcher picks the ports by binding, writes a
 * connection file on 0.0.0.0, adds pid, pgid, comm_port and kernel_id, seals
 * it and sends it over one TCP connection, which it then closes: the
 * gateway's response manager reads until the end of the stream, and replaces
 * the "ip" with the address of the host or pod it started the kernel on.
 *
 * Where this differs from the Python launcher, it is safer: the report goes
 * out only after the supervisor has bound the five ports (the launcher sends
 * it first and lets the kernel bind later), so a port taken in between stops
 * the kernel before the gateway is told to connect to it. */
#include "kernel/cmd/launcher.h"

#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "kernel/client/connfile.h"
#include "kernel/util/log.h"
#include "kernel/util/monotime.h"
#include "kernel/supervisor/tmpdir.h"
#include "protocol/errbuf.h"
#include "protocol/seal.h"

#define PREFIX       "--RemoteProcessProxy."
#define MAX_ID_LEN   128
#define COMM_BACKLOG 16
#define NPORTS       (CONNECTION_NCHANNELS + 1) /* the channels and the comm port */

enum gw_opt {
    GW_KERNEL_ID,
    GW_RESPONSE,
    GW_PUBLIC_KEY,
    GW_PORT_RANGE,
    GW_SPARK,
    GW_NOPTS
};

static const char *const gw_names[GW_NOPTS] = {
    [GW_KERNEL_ID] = "kernel-id",
    [GW_RESPONSE] = "response-address",
    [GW_PUBLIC_KEY] = "public-key",
    [GW_PORT_RANGE] = "port-range",
    [GW_SPARK] = "spark-context-initialization-mode",
};

void launcher_init(struct launcher *g)
{
    memset(g, 0, sizeof *g);
    g->comm_fd = -1;
}

void launcher_release(struct launcher *g)
{
    if (g->comm_fd >= 0)
        close(g->comm_fd);
    if (g->connection_file)
        unlink(g->connection_file);
    if (g->private_dir)
        rmdir(g->private_dir);
    free(g->connection_file);
    free(g->private_dir);
    free(g->kernel_id);
    free(g->response_address);
    free(g->public_key);
    free(g->port_range);
    seal_key_free(g->key);
    launcher_init(g);
}

/* Which of the gateway's options a is (its value, when given with '=', in *value);
 * -1 when it is none of them. */
static int gw_option(const char *a, const char **value)
{
    const char *name = NULL;
    if (strncmp(a, PREFIX, strlen(PREFIX)) == 0)
        name = a + strlen(PREFIX);
    else if (strncmp(a, "--", 2) == 0)
        name = a + 2;
    if (!name)
        return -1;
    const char *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    for (int k = 0; k < GW_NOPTS; k++)
        if (strlen(gw_names[k]) == len && strncmp(gw_names[k], name, len) == 0) {
            *value = eq ? eq + 1 : NULL;
            return k;
        }
    return -1;
}

static int set_string(char **field, const char *v)
{
    free(*field);
    *field = strdup(v);
    return *field ? 0 : -ENOMEM;
}

int launcher_take_options(struct launcher *g, int *argc, char **argv, char *err,
                          size_t errlen)
{
    int kept = 1;
    for (int i = 1; i < *argc; i++) {
        const char *v = NULL;
        int k = gw_option(argv[i], &v);
        if (k < 0) {
            argv[kept++] = argv[i];
            continue;
        }
        if (!v && i + 1 >= *argc)
            return errbuf_set(-EINVAL, err, errlen, "%s needs a value", argv[i]);
        if (!v)
            v = argv[++i];
        g->enabled = true;
        int rc = 0;
        switch ((enum gw_opt)k) {
        case GW_KERNEL_ID:
            rc = set_string(&g->kernel_id, v);
            break;
        case GW_RESPONSE:
            rc = set_string(&g->response_address, v);
            break;
        case GW_PUBLIC_KEY:
            rc = set_string(&g->public_key, v);
            break;
        case GW_PORT_RANGE:
            rc = set_string(&g->port_range, v);
            break;
        case GW_SPARK:
            if (strcmp(v, "none") != 0)
                return errbuf_set(-EINVAL, err, errlen,
                                  "--RemoteProcessProxy.spark-context-initialization-"
                                  "mode takes only none: sandpit has no Spark context "
                                  "to start (not \"%s\")",
                                  v);
            break;
        case GW_NOPTS:
            break;
        }
        if (rc)
            return rc;
    }
    argv[kept] = NULL;
    *argc = kept;
    return 0;
}

static bool parse_port(const char *s, const char *end, int *port)
{
    long v = 0;
    if (s == end || end - s > 5)
        return false;
    for (const char *p = s; p < end; p++) {
        if (*p < '0' || *p > '9')
            return false;
        v = v * 10 + (*p - '0');
    }
    if (v > 65535)
        return false;
    *port = (int)v;
    return true;
}

int launcher_parse_port_range(const char *text, int *low, int *high, char *err,
                              size_t errlen)
{
    const char *dots = text ? strstr(text, "..") : NULL;
    if (!dots || !parse_port(text, dots, low) ||
        !parse_port(dots + 2, dots + strlen(dots), high) || *low > *high)
        return errbuf_set(-EINVAL, err, errlen,
                          "--RemoteProcessProxy.port-range takes LOW..HIGH, two port "
                          "numbers with LOW no greater than HIGH (0..0: any port), not "
                          "\"%s\"",
                          text ? text : "");
    /* As the gateway's launchers read it: a range of size 0 is no range. */
    if (*low == *high)
        *low = *high = 0;
    if (*low == 0 && *high > 0)
        *low = 1;
    if (*high && *high - *low + 1 < NPORTS)
        return errbuf_set(-EINVAL, err, errlen,
                          "the port range %s holds fewer than the %d ports a kernel "
                          "needs (five channels and the communication port)",
                          text, NPORTS);
    return 0;
}

/* host:port, or [v6]:port. The host is written into host (hostlen bytes). */
static bool split_address(const char *address, char *host, size_t hostlen, int *port)
{
    const char *colon = strrchr(address, ':');
    if (!colon || colon == address ||
        !parse_port(colon + 1, colon + strlen(colon), port) || *port == 0)
        return false;
    const char *h = address;
    size_t len = (size_t)(colon - address);
    if (h[0] == '[' && len >= 2 && h[len - 1] == ']') {
        h++;
        len -= 2;
    }
    if (!len || len >= hostlen)
        return false;
    memcpy(host, h, len);
    host[len] = 0;
    return true;
}

static bool valid_kernel_id(const char *id)
{
    size_t n = strlen(id);
    if (!n || n > MAX_ID_LEN || id[0] == '.')
        return false;
    for (const char *p = id; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
              (*p >= '0' && *p <= '9') || *p == '-' || *p == '_' || *p == '.'))
            return false;
    return true;
}

int launcher_check(struct launcher *g, char *err, size_t errlen)
{
    static const struct {
        enum gw_opt opt;
        size_t offset;
    } required[] = {
        {GW_KERNEL_ID, offsetof(struct launcher, kernel_id)},
        {GW_RESPONSE, offsetof(struct launcher, response_address)},
        {GW_PUBLIC_KEY, offsetof(struct launcher, public_key)},
    };
    for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
        if (!*(char **)((char *)g + required[i].offset))
            return errbuf_set(-EINVAL, err, errlen,
                              "a kernel started by Enterprise Gateway needs " PREFIX
                              "%s as well",
                              gw_names[required[i].opt]);
    if (!valid_kernel_id(g->kernel_id))
        return errbuf_set(-EINVAL, err, errlen,
                          "the kernel id \"%.*s\" is not one the gateway makes (letters, "
                          "digits, -, _ and ., at most %d)",
                          MAX_ID_LEN, g->kernel_id, MAX_ID_LEN);
    char host[256];
    int port;
    if (!split_address(g->response_address, host, sizeof host, &port))
        return errbuf_set(-EINVAL, err, errlen,
                          "the response address \"%s\" is not HOST:PORT",
                          g->response_address);
    int rc;
    if (g->port_range && (rc = launcher_parse_port_range(g->port_range, &g->port_low,
                                                         &g->port_high, err, errlen)))
        return rc;
    seal_key_free(g->key);
    g->key = NULL;
    return seal_key_parse(g->public_key, &g->key, err, errlen);
}

/* A TCP socket bound on every address to a free port in [low, high] (0, 0:
 * any), tried from a random place in the range so that kernels on one host
 * spread out. Returns the descriptor with *port, or -errno (-EADDRINUSE when
 * the range is full). */
static int bind_free(int low, int high, int *port)
{
    unsigned span = high ? (unsigned)(high - low + 1) : 1, start = 0;
    if (span > 1 && getrandom(&start, sizeof start, 0) != (ssize_t)sizeof start)
        start = (unsigned)getpid();
    for (unsigned k = 0; k < span; k++) {
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            return -errno;
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_addr.s_addr = htonl(INADDR_ANY)};
        a.sin_port = htons((uint16_t)(high ? low + (int)((start + k) % span) : 0));
        socklen_t alen = sizeof a;
        if (bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
            getsockname(fd, (struct sockaddr *)&a, &alen) == 0) {
            *port = ntohs(a.sin_port);
            return fd;
        }
        int e = errno;
        close(fd);
        if (e != EADDRINUSE && e != EACCES)
            return -e;
    }
    return -EADDRINUSE;
}

static int pick_ports(struct launcher *g, char *err, size_t errlen)
{
    int fds[NPORTS], ports[NPORTS], n = 0, rc = 0;
    for (; n < NPORTS; n++)
        if ((fds[n] = bind_free(g->port_low, g->port_high, &ports[n])) < 0) {
            rc = fds[n];
            break;
        }
    for (int i = 0; i < n && i < CONNECTION_NCHANNELS; i++)
        close(fds[i]);
    if (rc)
        return g->port_high ? errbuf_set(rc, err, errlen,
                                         "cannot find %d free ports in the range %s: %s",
                                         NPORTS, g->port_range, strerror(-rc))
                            : errbuf_set(rc, err, errlen, "cannot find free ports: %s",
                                         strerror(-rc));
    memcpy(g->ports, ports, sizeof g->ports);
    if (listen(fds[CONNECTION_NCHANNELS], COMM_BACKLOG) != 0) {
        rc = -errno;
        close(fds[CONNECTION_NCHANNELS]);
        return errbuf_set(rc, err, errlen, "cannot listen on the communication port: %s",
                          strerror(-rc));
    }
    g->comm_fd = fds[CONNECTION_NCHANNELS];
    g->comm_port = ports[CONNECTION_NCHANNELS];
    return 0;
}

int launcher_prepare(struct launcher *g, char *err, size_t errlen)
{
    char path[PATH_MAX];
    int rc = tmpdir_make_private("gateway", &g->private_dir);
    if (rc)
        return errbuf_set(rc, err, errlen,
                          "cannot make a private folder for the connection file in "
                          "TMPDIR or /tmp: %s",
                          strerror(-rc));
    if (snprintf(path, sizeof path, "%s/kernel-%s.json", g->private_dir, g->kernel_id) >=
        (int)sizeof path)
        return errbuf_set(-ENAMETOOLONG, err, errlen,
                          "the connection file's path is too long (TMPDIR is %s)",
                          g->private_dir);
    if ((rc = pick_ports(g, err, errlen)))
        return rc;
    if ((rc = connfile_write_ports(path, "0.0.0.0", g->ports, err, errlen)))
        return rc;
    if (!(g->connection_file = strdup(path))) {
        unlink(path);
        return -ENOMEM;
    }
    return 0;
}

int launcher_take_listener(struct launcher *g)
{
    int fd = g->comm_fd;
    g->comm_fd = -1;
    return fd;
}

/* The connection info the gateway reads: the file's fields and ours. The
 * text is new (caller wipes and frees). */
static char *connection_info(const struct launcher *g, char *err, size_t errlen)
{
    json_error_t je;
    json_t *info = json_load_file(g->connection_file, 0, &je);
    if (!json_is_object(info)) {
        json_decref(info);
        errbuf_set(0, err, errlen, "cannot read back the connection file %s: %s",
                   g->connection_file, je.text);
        return NULL;
    }
    json_object_set_new(info, "pid", json_integer(getpid()));
    json_object_set_new(info, "pgid", json_integer(getpgid(0)));
    json_object_set_new(info, "comm_port", json_integer(g->comm_port));
    json_object_set_new(info, "kernel_id", json_string(g->kernel_id));
    char *text = json_dumps(info, JSON_COMPACT | JSON_PRESERVE_ORDER);
    /* jansson frees without wiping: wipe the key in place first. */
    json_t *key = json_object_get(info, "key");
    if (json_is_string(key))
        memset((char *)json_string_value(key), 0, json_string_length(key));
    json_decref(info);
    if (!text)
        errbuf_set(0, err, errlen, "out of memory building the connection info");
    return text;
}

/* Waits until fd is ready for events or the deadline passes. 0, -ETIMEDOUT or
 * -errno. */
static int wait_for(int fd, short events, double deadline)
{
    for (;;) {
        double left = deadline - monotime_now();
        if (left <= 0)
            return -ETIMEDOUT;
        struct pollfd p = {.fd = fd, .events = events};
        int n = poll(&p, 1, (int)(left * 1000) + 1);
        if (n > 0)
            return 0;
        if (n < 0 && errno != EINTR)
            return -errno;
    }
}

/* A connected socket to host:port, trying each of its addresses until the
 * deadline. Returns the descriptor, or -errno of the last attempt. */
static int connect_to(const char *host, int port, double deadline)
{
    char service[8];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints = {.ai_family = AF_UNSPEC,
                             .ai_socktype = SOCK_STREAM,
                             .ai_flags = AI_NUMERICSERV},
                    *res = NULL;
    int rc = getaddrinfo(host, service, &hints, &res);
    if (rc)
        return rc == EAI_SYSTEM ? -errno : -EHOSTUNREACH;
    rc = -EHOSTUNREACH;
    for (struct addrinfo *a = res; a; a = a->ai_next) {
        int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
                        a->ai_protocol);
        if (fd < 0) {
            rc = -errno;
            continue;
        }
        if (connect(fd, a->ai_addr, a->ai_addrlen) != 0 && errno != EINPROGRESS) {
            rc = -errno;
        } else if ((rc = wait_for(fd, POLLOUT, deadline)) == 0) {
            int e = 0;
            socklen_t elen = sizeof e;
            if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &elen) != 0)
                e = errno;
            if (!e) {
                freeaddrinfo(res);
                return fd;
            }
            rc = -e;
        }
        close(fd);
    }
    freeaddrinfo(res);
    return rc;
}

static int send_all(int fd, const char *data, size_t len, double deadline)
{
    while (len) {
        ssize_t n = send(fd, data, len, MSG_NOSIGNAL);
        if (n > 0) {
            data += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno != EAGAIN && errno != EINTR)
            return -errno;
        int rc = wait_for(fd, POLLOUT, deadline);
        if (rc)
            return rc;
    }
    return 0;
}

int launcher_report(struct launcher *g, char *err, size_t errlen)
{
    char host[256];
    int port = 0, rc, fd = -1;
    char *payload = NULL, *info = connection_info(g, err, errlen);
    if (!info)
        return -EIO;
    payload = seal_payload(g->key, info, strlen(info), err, errlen);
    memset(info, 0, strlen(info));
    free(info);
    if (!payload)
        return -EIO;
    split_address(g->response_address, host, sizeof host, &port);
    double deadline = monotime_now() + LAUNCHER_REPORT_TIMEOUT_S;
    if ((fd = connect_to(host, port, deadline)) < 0) {
        rc = errbuf_set(fd, err, errlen,
                        "cannot reach the gateway's response address %s to report the "
                        "kernel's connection: %s",
                        g->response_address, strerror(-fd));
        goto out;
    }
    if ((rc = send_all(fd, payload, strlen(payload), deadline)) ||
        (shutdown(fd, SHUT_WR) != 0 && (rc = -errno))) {
        errbuf_set(rc, err, errlen,
                   "cannot send the kernel's connection to the gateway's response "
                   "address %s: %s",
                   g->response_address, strerror(-rc));
        goto out;
    }
    rc = 0;
    g->reported = true;
out:
    if (fd >= 0)
        close(fd);
    free(payload);
    return rc;
}

void launcher_log_unreported(const struct launcher *g)
{
    log_error("the kernel ended before it reported to the gateway at %s: the gateway, "
              "which takes no failure from a kernel launcher, shows a launch timeout "
              "for kernel %s (\"Waited too long ... to get connection file\", after "
              "KERNEL_LAUNCH_TIMEOUT or EG_KERNEL_LAUNCH_TIMEOUT, 30 s by default); "
              "the reason is in the lines above",
              g->response_address, g->kernel_id ? g->kernel_id : "?");
}
