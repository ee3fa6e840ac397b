/* bench_client: the C client of `make bench`, on sandpit's client library
 * (kernel/client/client.h), so that what it measures is the kernel, not a
 * Python client.
 *
 *   bench-client roundtrip -f CONN [--cells N] [--warmup N] [--code CODE] [--pid PID]
 *   bench-client ready --spec KERNEL_JSON [--runs N]
 *   bench-client many --spec KERNEL_JSON [--kernels N] [--runs N]
 *   bench-client output -f CONN --setup CODE --code CODE --expect KIND:N [--runs N]
 *   bench-client interrupt -f CONN [--runs N]
 *   bench-client restart -f CONN --pid PID [--runs N] [--pause S]
 *   bench-client crash -f CONN [--runs N] [--pause S]
 *   bench-client pss --pid PID
 *
 * Each command prints one JSON object of raw figures (seconds, kB) on stdout;
 * tests/bench/bench.py turns them into the table. A kernel that does not
 * answer as it must (a cell that fails, output with bytes missing) ends the
 * command with status 1 and a sentence on stderr: a figure from a broken run
 * is worse than none.
 *
 * Times are taken on the monotonic clock around what a user waits for: from
 * sending a request to having its reply and its status idle (every output
 * before idle included); for a start, from fork to the first execute_reply,
 * with the client connected (its requests queued) before the kernel exists,
 * retrying a refused connection every few milliseconds. */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <unistd.h>
#include <zmq.h>

#include "kernel/client/client.h"
#include "kernel/client/connfile.h"
#include "kernel/client/launch.h"
#include "kernel/util/monotime.h"

#define TIMEOUT_S    120.0
#define RECONNECT_MS 2
#define MAX_KERNELS  64
#define MAX_PROCS    256

static const struct client_options quick_connect = {.reconnect_ms = RECONNECT_MS};

static _Noreturn void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static _Noreturn void fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "bench-client: ");
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(1);
}

/* --- the kernel's processes, from /proc ------------------------------------------- */

struct proc {
    pid_t pid, ppid;
};

/* pid and its descendants, up to max, into out. Returns how many. */
static size_t proc_tree(pid_t root, pid_t *out, size_t max)
{
    static struct proc all[4096];
    size_t nall = 0, n = 0;
    DIR *d = opendir("/proc");
    struct dirent *e;
    while (d && (e = readdir(d)) && nall < sizeof all / sizeof all[0]) {
        char path[64], buf[512];
        pid_t pid = (pid_t)atoi(e->d_name);
        if (pid <= 0)
            continue;
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
        FILE *f = fopen(path, "r");
        size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[len] = 0;
        char *close_paren = strrchr(buf, ')'); /* the name may hold anything */
        int ppid;
        if (close_paren && sscanf(close_paren + 1, " %*c %d", &ppid) == 1)
            all[nall++] = (struct proc){pid, (pid_t)ppid};
    }
    if (d)
        closedir(d);
    out[n++] = root;
    for (size_t i = 0; i < n; i++) /* breadth first: out grows as it is walked */
        for (size_t j = 0; j < nall && n < max; j++)
            if (all[j].ppid == out[i])
                out[n++] = all[j].pid;
    return n;
}

/* The value of the line starting with key in a /proc file (kB, counts), or 0. */
static long long proc_field(const char *path, const char *key)
{
    FILE *f = fopen(path, "r");
    char line[256];
    long long v = 0;
    size_t klen = strlen(key);
    while (f && fgets(line, sizeof line, f))
        if (strncmp(line, key, klen) == 0) {
            v = atoll(line + klen);
            break;
        }
    if (f)
        fclose(f);
    return v;
}

static long long pss_kb(pid_t pid)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/smaps_rollup", (int)pid);
    return proc_field(path, "Pss:");
}

/* CPU seconds (user and system, every thread) and context switches (every
 * thread's, voluntary and not) of a kernel's processes so far. */
struct usage {
    double cpu_s;
    long long switches;
};

static struct usage tree_usage(pid_t root)
{
    struct usage u = {0, 0};
    pid_t pids[MAX_PROCS];
    size_t n = root > 0 ? proc_tree(root, pids, MAX_PROCS) : 0;
    long hz = sysconf(_SC_CLK_TCK);
    for (size_t i = 0; i < n; i++) {
        char path[96], buf[1024];
        snprintf(path, sizeof path, "/proc/%d/stat", (int)pids[i]);
        FILE *f = fopen(path, "r");
        size_t len = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
        if (f)
            fclose(f);
        buf[len] = 0;
        char *p = strrchr(buf, ')');
        unsigned long long ut, st;
        if (p && sscanf(p + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
                        &ut, &st) == 2)
            u.cpu_s += (double)(ut + st) / (double)hz;
        snprintf(path, sizeof path, "/proc/%d/task", (int)pids[i]);
        DIR *d = opendir(path);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (e->d_name[0] == '.')
                continue;
            snprintf(path, sizeof path, "/proc/%d/task/%.16s/status", (int)pids[i],
                     e->d_name);
            u.switches += proc_field(path, "voluntary_ctxt_switches:") +
                          proc_field(path, "nonvoluntary_ctxt_switches:");
        }
        if (d)
            closedir(d);
    }
    return u;
}

static json_t *pss_json(pid_t root)
{
    pid_t pids[MAX_PROCS];
    size_t n = proc_tree(root, pids, MAX_PROCS);
    json_t *procs = json_array();
    long long total = 0;
    for (size_t i = 0; i < n; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/comm", (int)pids[i]);
        char name[64] = "";
        FILE *f = fopen(path, "r");
        if (f && fgets(name, sizeof name, f))
            name[strcspn(name, "\n")] = 0;
        if (f)
            fclose(f);
        long long kb = pss_kb(pids[i]);
        total += kb;
        json_array_append_new(procs, json_pack("{s:i, s:s, s:I}", "pid", (int)pids[i],
                                               "name", name, "pss_kb", (json_int_t)kb));
    }
    return json_pack("{s:o, s:I}", "processes", procs, "total_kb", (json_int_t)total);
}

/* --- one cell ------------------------------------------------------------------------
 */

/* What a cell's iopub messages held, for the checks of `output` and `interrupt`. */
struct seen {
    size_t stream_bytes, png_bytes, displays;
    struct client *c;         /* interrupt: where to send the interrupt_request */
    const char *interrupt_on; /* interrupt: the stdout text that says the cell runs */
    double interrupted_at;    /* when the interrupt_request went; 0: not yet */
};

static size_t b64_decoded_len(const char *s)
{
    size_t n = 0, pad = 0;
    for (; *s; s++) {
        if (*s == '=')
            pad++;
        else if (*s != '\n' && *s != '\r' && *s != ' ')
            n++;
    }
    return (n + pad) / 4 * 3 - pad;
}

static void on_iopub(void *arg, const struct msg *m)
{
    struct seen *s = arg;
    const char *type = msg_type(m);
    if (strcmp(type, "stream") == 0) {
        const char *text = json_string_value(json_object_get(m->content, "text"));
        s->stream_bytes += text ? strlen(text) : 0;
        if (text && s->interrupt_on && !s->interrupted_at &&
            strstr(text, s->interrupt_on)) {
            s->interrupted_at = monotime_now();
            if (client_send(s->c, CONNECTION_CONTROL, "interrupt_request", NULL, NULL,
                            NULL))
                fail("cannot send interrupt_request");
        }
    } else if (strcmp(type, "display_data") == 0 || strcmp(type, "execute_result") == 0) {
        s->displays += strcmp(type, "display_data") == 0;
        json_t *png = json_object_get(json_object_get(m->content, "data"), "image/png");
        if (json_is_string(png))
            s->png_bytes += b64_decoded_len(json_string_value(png));
    }
}

static const char *reply_status(const struct msg *reply)
{
    const char *st = json_string_value(json_object_get(reply->content, "status"));
    return st ? st : "?";
}

/* Sends code as an execute_request (its new msg_id into id) with stop_on_error
 * false: a cell that fails on purpose (an interrupt, a crash) must not have the
 * kernel abort the next one, as ipykernel does for a moment after an error. */
static int send_cell(struct client *c, const char *code, char *id)
{
    json_t *content = json_pack("{s:s, s:b, s:b, s:{}, s:b, s:b}", "code", code, "silent",
                                0, "store_history", 1, "user_expressions", "allow_stdin",
                                0, "stop_on_error", 0);
    if (!content)
        return -ENOMEM;
    return client_send(c, CONNECTION_SHELL, "execute_request", &content, NULL, id);
}

/* Runs code and waits for its reply and idle. Returns the seconds it took;
 * with want_ok, a reply that is not "ok" ends the command. *reply, when not
 * NULL, is new (caller frees). */
static double cell(struct client *c, const char *code, struct seen *seen, bool want_ok,
                   struct msg **reply_out)
{
    char id[CLIENT_ID_LEN];
    struct client_wait w = {.on_iopub = seen ? on_iopub : NULL,
                            .arg = seen,
                            .timeout_s = TIMEOUT_S,
                            .no_heartbeat = true};
    struct msg *reply = NULL;
    double t0 = monotime_now();
    if (send_cell(c, code, id) || client_wait(c, CONNECTION_SHELL, id, &w, &reply))
        fail("no answer to the cell %s", code);
    double t = monotime_now() - t0;
    if (want_ok && strcmp(reply_status(reply), "ok") != 0) {
        const char *ev = json_string_value(json_object_get(reply->content, "evalue"));
        fprintf(stderr, "bench-client: %s\n", ev ? ev : "");
        fail("the cell %s failed", code);
    }
    if (reply_out)
        *reply_out = reply;
    else
        msg_free(reply);
    return t;
}

static void open_client(struct client *c, const char *conn)
{
    char err[512];
    if (client_open_with(c, conn, &quick_connect, err, sizeof err))
        fail("%s", err);
    struct client_wait w = {.timeout_s = TIMEOUT_S};
    if (client_ready(c, &w, NULL))
        fail("the kernel of %s does not answer", conn);
}

static json_t *times_json(const double *t, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_real(t[i]));
    return a;
}

/* --- commands
 * --------------------------------------------------------------------------- */

struct args {
    const char *conn, *spec, *code, *setup, *expect;
    int cells, warmup, runs, kernels;
    double pause; /* restart, crash: seconds idle before each, not counted */
    pid_t pid;
};

static void pause_for(double s)
{
    if (s <= 0)
        return;
    struct timespec t = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&t, &t) != 0 && errno == EINTR)
        ;
}

static json_t *cmd_roundtrip(const struct args *a)
{
    struct client c;
    open_client(&c, a->conn);
    for (int i = 0; i < a->warmup; i++)
        cell(&c, a->code, NULL, true, NULL);
    double *t = calloc((size_t)a->cells, sizeof *t);
    if (!t)
        fail("out of memory");
    struct usage before = tree_usage(a->pid);
    for (int i = 0; i < a->cells; i++)
        t[i] = cell(&c, a->code, NULL, true, NULL);
    struct usage after = tree_usage(a->pid);
    json_t *r = json_pack("{s:o, s:f, s:I}", "times", times_json(t, (size_t)a->cells),
                          "cpu_s", after.cpu_s - before.cpu_s, "switches",
                          (json_int_t)(after.switches - before.switches));
    free(t);
    client_close(&c);
    return r;
}

/* A kernel started from a kernelspec's argv, the way a Jupyter client starts it. */
struct started {
    char dir[64], conn[96];
    struct launched k;
    struct client c;
    char info_id[CLIENT_ID_LEN], exec_id[CLIENT_ID_LEN];
    double t0, info_at, exec_at;
};

static char **spec_argv(const char *spec, const char *conn)
{
    json_error_t jerr;
    json_t *j = json_load_file(spec, 0, &jerr);
    json_t *argv = json_object_get(j, "argv");
    size_t n = json_array_size(argv);
    char **out = n ? calloc(n + 1, sizeof *out) : NULL;
    for (size_t i = 0; out && i < n; i++) {
        const char *s = json_string_value(json_array_get(argv, i));
        const char *at = s ? strstr(s, "{connection_file}") : NULL;
        size_t len = (s ? strlen(s) : 0) + strlen(conn) + 1;
        if (!s || !(out[i] = malloc(len)))
            fail("bad argv in %s", spec);
        if (at)
            snprintf(out[i], len, "%.*s%s%s", (int)(at - s), s, conn,
                     at + strlen("{connection_file}"));
        else
            snprintf(out[i], len, "%s", s);
    }
    json_decref(j);
    if (!out)
        fail("no argv in %s", spec);
    return out;
}

/* Ports below the system's range of ephemeral ports, free when tried, never
 * the same twice in this process. connfile_write's ports come from that range
 * (as jupyter_client's do), and so do the local ports of the connections this
 * client tries every few milliseconds while kernels start: with ten kernels
 * starting at once, one of those could take a port before its kernel binds. */
static int next_port(void)
{
    static int port;
    if (!port)
        port = 20000 + (int)(getpid() % 1000) * 10;
    for (; port < 32768; port++) {
        struct sockaddr_in a = {.sin_family = AF_INET,
                                .sin_port = htons((uint16_t)port),
                                .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
        int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        bool ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
        if (fd >= 0)
            close(fd);
        if (ok)
            return port++;
    }
    fail("no free port below 32768");
}

static void use_quiet_ports(const char *conn)
{
    static const char *const keys[] = {"shell_port", "iopub_port", "stdin_port",
                                       "control_port", "hb_port"};
    json_error_t jerr;
    json_t *j = json_load_file(conn, 0, &jerr);
    for (size_t i = 0; j && i < sizeof keys / sizeof keys[0]; i++)
        json_object_set_new(j, keys[i], json_integer(next_port()));
    if (!j || json_dump_file(j, conn, JSON_INDENT(1)) != 0)
        fail("cannot rewrite %s", conn);
    json_decref(j);
}

/* Writes the connection file and connects (requests queue until the kernel
 * listens), then starts the kernel and sends kernel_info and a cell. */
static void start_kernel(struct started *s, const char *spec)
{
    char err[512];
    snprintf(s->dir, sizeof s->dir, "/tmp/sandpit-bench-XXXXXX");
    if (!mkdtemp(s->dir))
        fail("cannot make a temporary folder");
    snprintf(s->conn, sizeof s->conn, "%s/kernel.json", s->dir);
    if (connfile_write(s->conn, err, sizeof err))
        fail("%s", err);
    use_quiet_ports(s->conn);
    if (client_open_with(&s->c, s->conn, &quick_connect, err, sizeof err))
        fail("%s", err);
    char **argv = spec_argv(spec, s->conn);
    char log[128];
    snprintf(log, sizeof log, "%s/kernel.log", s->dir);
    launch_init(&s->k);
    s->info_at = s->exec_at = 0;
    s->t0 = monotime_now();
    if (launch_start(&s->k, &argv, true, log, err, sizeof err))
        fail("%s", err);
    if (client_send(&s->c, CONNECTION_SHELL, "kernel_info_request", NULL, NULL,
                    s->info_id) ||
        send_cell(&s->c, "x = 1", s->exec_id))
        fail("cannot send to the kernel");
}

/* Reads the replies waiting for s; true once both have come. */
static bool take_replies(struct started *s)
{
    struct msg *m;
    while (client_recv(&s->c, CONNECTION_SHELL, 0, &m) == 0) {
        const char *parent =
            json_string_value(json_object_get(m->parent_header, "msg_id"));
        double now = monotime_now();
        if (parent && strcmp(parent, s->info_id) == 0)
            s->info_at = now;
        if (parent && strcmp(parent, s->exec_id) == 0) {
            if (strcmp(reply_status(m), "ok") != 0)
                fail("the first cell of %s failed", s->conn);
            s->exec_at = now;
        }
        msg_free(m);
    }
    return s->info_at && s->exec_at;
}

/* Waits until every kernel has answered its cell. */
static void wait_started(struct started *ks, int n)
{
    double deadline = monotime_now() + TIMEOUT_S;
    for (;;) {
        zmq_pollitem_t items[MAX_KERNELS];
        int waiting = 0;
        for (int i = 0; i < n; i++)
            if (!take_replies(&ks[i]))
                items[waiting++] = (zmq_pollitem_t){
                    .socket = ks[i].c.sockets[CONNECTION_SHELL], .events = ZMQ_POLLIN};
        if (!waiting)
            return;
        for (int i = 0; i < n; i++)
            if (launch_exited(&ks[i].k)) {
                char *tail = launch_log_tail(ks[i].k.log_path, 2000);
                fail("the kernel exited while starting:\n%s", tail ? tail : "");
            }
        if (monotime_now() > deadline)
            fail("a kernel did not answer");
        zmq_poll(items, waiting, 100);
    }
}

static void stop_kernel(struct started *s)
{
    launch_stop(&s->k, &s->c, 10);
    client_close(&s->c);
    launch_release(&s->k);
    char path[128];
    const char *files[] = {"kernel.json", "kernel.log"};
    for (size_t i = 0; i < 2; i++) {
        snprintf(path, sizeof path, "%s/%s", s->dir, files[i]);
        unlink(path);
    }
    rmdir(s->dir);
}

static json_t *cmd_ready(const struct args *a)
{
    json_t *ready = json_array(), *info = json_array();
    for (int r = 0; r < a->runs; r++) {
        struct started s;
        start_kernel(&s, a->spec);
        wait_started(&s, 1);
        json_array_append_new(ready, json_real(s.exec_at - s.t0));
        json_array_append_new(info, json_real(s.info_at - s.t0));
        stop_kernel(&s);
    }
    return json_pack("{s:o, s:o}", "ready", ready, "kernel_info", info);
}

static json_t *cmd_many(const struct args *a)
{
    static struct started ks[MAX_KERNELS];
    int n = a->kernels < MAX_KERNELS ? a->kernels : MAX_KERNELS;
    json_t *all = json_array(), *pss = json_array();
    for (int r = 0; r < a->runs; r++) {
        for (int i = 0; i < n; i++)
            start_kernel(&ks[i], a->spec);
        wait_started(ks, n);
        double last = 0;
        long long total = 0;
        for (int i = 0; i < n; i++) {
            if (ks[i].exec_at - ks[0].t0 > last)
                last = ks[i].exec_at - ks[0].t0;
            pid_t pids[MAX_PROCS];
            size_t np = proc_tree(ks[i].k.pid, pids, MAX_PROCS);
            for (size_t j = 0; j < np; j++)
                total += pss_kb(pids[j]);
        }
        json_array_append_new(all, json_real(last));
        json_array_append_new(pss, json_integer(total));
        for (int i = 0; i < n; i++)
            stop_kernel(&ks[i]);
    }
    return json_pack("{s:i, s:o, s:o}", "kernels", n, "all_ready", all, "total_pss_kb",
                     pss);
}

static json_t *cmd_output(const struct args *a)
{
    char kind[32] = "";
    size_t want = 0;
    if (!a->expect || sscanf(a->expect, "%31[a-z]:%zu", kind, &want) != 2)
        fail("--expect KIND:N (stream, png or displays) is needed");
    struct client c;
    open_client(&c, a->conn);
    if (a->setup)
        cell(&c, a->setup, NULL, true, NULL);
    double *t = calloc((size_t)a->runs, sizeof *t);
    for (int r = 0; t && r < a->runs; r++) {
        struct seen s = {0};
        t[r] = cell(&c, a->code, &s, true, NULL);
        size_t got = strcmp(kind, "stream") == 0 ? s.stream_bytes
                     : strcmp(kind, "png") == 0  ? s.png_bytes
                                                 : s.displays;
        if (got != want)
            fail("output went missing: %s: %zu received, %zu expected", kind, got, want);
    }
    json_t *r = json_pack("{s:o}", "times", times_json(t, (size_t)a->runs));
    free(t);
    client_close(&c);
    return r;
}

static json_t *cmd_interrupt(const struct args *a)
{
    struct client c;
    open_client(&c, a->conn);
    json_t *times = json_array();
    for (int r = 0; r < a->runs; r++) {
        struct seen s = {.c = &c, .interrupt_on = "spinning"};
        struct msg *reply;
        cell(&c, "print('spinning', flush=True)\nwhile True:\n    pass", &s, false,
             &reply);
        double done = monotime_now();
        const char *ename = json_string_value(json_object_get(reply->content, "ename"));
        if (!s.interrupted_at || !ename || strcmp(ename, "KeyboardInterrupt") != 0)
            fail("the cell did not end with KeyboardInterrupt: status %s, ename %s%s",
                 reply_status(reply), ename ? ename : "none",
                 s.interrupted_at ? "" : ", before the interrupt was sent");
        msg_free(reply);
        json_array_append_new(times, json_real(done - s.interrupted_at));
        struct msg *m; /* the interrupt_reply */
        if (client_recv(&c, CONNECTION_CONTROL, (int)(TIMEOUT_S * 1000), &m) == 0)
            msg_free(m);
    }
    client_close(&c);
    return json_pack("{s:o}", "times", times);
}

static json_t *cmd_restart(const struct args *a)
{
    struct client c;
    struct launched k;
    char err[512];
    open_client(&c, a->conn);
    launch_init(&k);
    if (launch_attach(&k, a->pid, NULL, NULL))
        fail("cannot watch the kernel's process");
    json_t *times = json_array();
    for (int r = 0; r < a->runs; r++) {
        pause_for(a->pause);
        double t0 = monotime_now();
        if (launch_restart(&k, &c, TIMEOUT_S, err, sizeof err) != 0)
            fail("%s", err);
        cell(&c, "x = 1", NULL, true, NULL);
        json_array_append_new(times, json_real(monotime_now() - t0));
    }
    launch_release(&k);
    client_close(&c);
    return json_pack("{s:o}", "times", times);
}

static json_t *cmd_crash(const struct args *a)
{
    struct client c;
    open_client(&c, a->conn);
    json_t *times = json_array(), *noticed = json_array();
    for (int r = 0; r < a->runs; r++) {
        struct msg *reply;
        pause_for(a->pause);
        double t0 = monotime_now();
        cell(&c, "import os; os.abort()", NULL, false, &reply);
        double t1 = monotime_now();
        if (strcmp(reply_status(reply), "error") != 0)
            fail("the crash was not reported as an error");
        msg_free(reply);
        cell(&c, "x = 1", NULL, true, NULL);
        json_array_append_new(noticed, json_real(t1 - t0));
        json_array_append_new(times, json_real(monotime_now() - t0));
    }
    client_close(&c);
    return json_pack("{s:o, s:o}", "times", times, "reported", noticed);
}

static int usage(void)
{
    fprintf(
        stderr,
        "usage: bench-client roundtrip|ready|many|output|interrupt|restart|crash|pss\n"
        "         [-f CONN] [--spec KERNEL_JSON] [--pid PID] [--cells N] [--warmup N]\n"
        "         [--runs N] [--pause S] [--kernels N] [--code CODE] [--setup CODE]\n"
        "         [--expect stream|png|displays:N]\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    struct args a = {
        .code = "x = 1", .cells = 1000, .warmup = 50, .runs = 10, .kernels = 10};
    for (int i = 2; i < argc; i++) {
        const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v)
            return usage();
        i++;
        if (strcmp(o, "-f") == 0)
            a.conn = v;
        else if (strcmp(o, "--spec") == 0)
            a.spec = v;
        else if (strcmp(o, "--code") == 0)
            a.code = v;
        else if (strcmp(o, "--setup") == 0)
            a.setup = v;
        else if (strcmp(o, "--expect") == 0)
            a.expect = v;
        else if (strcmp(o, "--pid") == 0)
            a.pid = (pid_t)atoi(v);
        else if (strcmp(o, "--cells") == 0)
            a.cells = atoi(v);
        else if (strcmp(o, "--warmup") == 0)
            a.warmup = atoi(v);
        else if (strcmp(o, "--runs") == 0)
            a.runs = atoi(v);
        else if (strcmp(o, "--pause") == 0)
            a.pause = atof(v);
        else if (strcmp(o, "--kernels") == 0)
            a.kernels = atoi(v);
        else
            return usage();
    }
    const char *cmd = argv[1];
    bool needs_conn = strcmp(cmd, "ready") && strcmp(cmd, "many") && strcmp(cmd, "pss");
    if ((needs_conn && !a.conn) || (!needs_conn && strcmp(cmd, "pss") && !a.spec) ||
        ((!strcmp(cmd, "pss") || !strcmp(cmd, "restart")) && a.pid <= 0) || a.cells < 1 ||
        a.runs < 1 || a.kernels < 1 || a.warmup < 0)
        return usage();
    json_t *out = NULL;
    if (strcmp(cmd, "roundtrip") == 0)
        out = cmd_roundtrip(&a);
    else if (strcmp(cmd, "ready") == 0)
        out = cmd_ready(&a);
    else if (strcmp(cmd, "many") == 0)
        out = cmd_many(&a);
    else if (strcmp(cmd, "output") == 0)
        out = cmd_output(&a);
    else if (strcmp(cmd, "interrupt") == 0)
        out = cmd_interrupt(&a);
    else if (strcmp(cmd, "restart") == 0)
        out = cmd_restart(&a);
    else if (strcmp(cmd, "crash") == 0)
        out = cmd_crash(&a);
    else if (strcmp(cmd, "pss") == 0)
        out = pss_json(a.pid);
    else
        return usage();
    if (!out)
        fail("out of memory");
    json_dumpf(out, stdout, JSON_COMPACT);
    putchar('\n');
    json_decref(out);
    return 0;
}
