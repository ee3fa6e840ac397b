/* run: send one cell, print what it did.
 *
 * The kernel is the one `sandpit start` launched for the workspace, or any
 * kernel given by --connection-file. Printing follows what a person and an
 * agent each need: as text, streams are written as they arrive (stdout to
 * stdout, stderr and the traceback to stderr) so that a long cell shows its
 * progress; with --json, one object at the end, with every text cut to
 * --max-chars and every image written to a file and listed by path (never
 * inlined: a model's context is no place for base64). Ctrl-C interrupts the
 * cell, as a notebook's stop button does, rather than abandoning it. */
#include "kernel/client/run.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "kernel/util/base64.h"
#include "kernel/client/client.h"
#include "kernel/client/instance.h"
#include "kernel/client/launch.h"
#include "kernel/client/outcome.h"
#include "kernel/client/run_args.h"
#include "kernel/client/textcut.h"
#include "kernel/util/fsutil.h"
#include "sandbox/tfile.h"

#define READY_TIMEOUT_S   30.0
#define RESTART_TIMEOUT_S 60.0
#define REPLY_GRACE_S     30.0 /* past --timeout: the kernel's own escalation */
#define END_GRACE_S       3.0  /* after SIGTERM: the interrupted cell's reply */
#define MAX_CODE_BYTES    (16u << 20)

/* Reads all of standard input. New string, or NULL with errno. */
static char *read_stdin(void)
{
    char *code = NULL;
    size_t len = 0;
    int rc = tfile_read_fd(0, MAX_CODE_BYTES - 2, 4096, &code, &len);
    errno = -rc;
    return code;
}

/* What a run keeps while the cell runs. */
struct run {
    const struct run_args *args;
    char why[1024];          /* why the cell could not be run, for --json */
    int timerfd;             /* --timeout and its grace, armed when the cell starts */
    bool started;            /* its execute_input has come: it runs, not waits */
    int ended_by;            /* SIGTERM or SIGHUP that ended the run, or 0 */
    struct textcut out, err; /* as text: the streams within --max-chars */
    const char *workspace;   /* its real path, borrowed from the instance */
    char outdir[PATH_MAX];
    int outdir_fd; /* -1 until the first image */
    struct outcome outcome;
    struct client *client;
    int sigfd, pidfd;
};

/* Says on stderr why the cell cannot be run, and keeps it for --json. */
static void fail(struct run *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void fail(struct run *r, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->why, sizeof r->why, fmt, ap);
    va_end(ap);
    fprintf(stderr, "sandpit run: %s\n", r->why);
}

/* With --json, what a harness that reads standard output gets when the cell
 * could not be run: one object, as for a cell that ran. */
static void print_unavailable(const struct run *r)
{
    json_t *j = json_pack("{s:s, s:s}", "status", "unavailable", "reason",
                          r->why[0] ? r->why : "the cell could not be run");
    char *text = j ? json_dumps(j, JSON_PRESERVE_ORDER | JSON_INDENT(1)) : NULL;
    printf("%s\n", text ? text : "{\"status\": \"unavailable\"}");
    fflush(stdout);
    free(text);
    json_decref(j);
}

static const char *extension_of(const char *mime)
{
    if (strcmp(mime, "image/jpeg") == 0)
        return "jpg";
    if (strcmp(mime, "image/gif") == 0)
        return "gif";
    if (strcmp(mime, "image/svg+xml") == 0)
        return "svg";
    return "png";
}

/* Opens the output folder (into r->outdir_fd), made if missing, and makes
 * r->outdir absolute. The cell can write the workspace, so inside it (the
 * default outputs/, or an --outdir there) each folder below the workspace is
 * made and opened without following a link; elsewhere the path is the user's. */
static int open_outdir(struct run *r)
{
    char abs[PATH_MAX], cwd[PATH_MAX];
    int rc = 0;
    if (r->outdir[0] != '/' &&
        (!getcwd(cwd, sizeof cwd) ||
         snprintf(abs, sizeof abs, "%s/%s", cwd, r->outdir) >= (int)sizeof abs))
        rc = -ENAMETOOLONG;
    else if (r->outdir[0] != '/')
        snprintf(r->outdir, sizeof r->outdir, "%s", abs);
    size_t n = strlen(r->workspace);
    if (!rc && strncmp(r->outdir, r->workspace, n) == 0 && r->outdir[n] == '/') {
        int root = tfile_open_root(r->workspace);
        rc = root < 0 ? root : tfile_mkdir(root, r->outdir + n + 1, 0755);
        if (root >= 0)
            close(root);
    } else if (!rc && !(rc = fsutil_mkdir_p(r->outdir, 0755))) {
        rc = tfile_open_root(r->outdir);
    }
    if (rc < 0) {
        fprintf(stderr, "sandpit run: cannot make %s: %s\n", r->outdir,
                tfile_strerror(rc));
        return rc;
    }
    r->outdir_fd = rc;
    return 0;
}

/* Writes the bytes to a fresh file in the output folder and moves it to
 * cell-N-K.EXT, or, if that name is taken (by anything: a file, a link the
 * cell planted), to cell-N-K-2.EXT and so on: nothing there is overwritten
 * or followed. The name is in name. */
static int write_image(struct run *r, const void *bytes, size_t len, const char *stem,
                       const char *ext, char *name, size_t name_len)
{
    struct tfile_new t;
    int rc = tfile_create(r->outdir_fd, "", 0644, &t);
    for (size_t off = 0; !rc && off < len;) {
        ssize_t w = write(t.fd, (const char *)bytes + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            rc = w < 0 ? -errno : -EIO;
        else
            off += (size_t)w;
    }
    for (int i = 1; !rc && i <= 100; i++) {
        if (i == 1)
            snprintf(name, name_len, "%s.%s", stem, ext);
        else
            snprintf(name, name_len, "%s-%d.%s", stem, i, ext);
        rc = tfile_commit(&t, name, 0);
        if (rc != -EEXIST)
            return rc;
        rc = i < 100 ? 0 : -EEXIST;
    }
    tfile_abort(&t);
    return rc;
}

/* The outcome's image sink: OUTDIR/cell-N-K.EXT, written whole or not at all. */
static int save_image(void *arg, int execution_count, int index, const char *mime,
                      const char *b64, char *path, size_t len)
{
    struct run *r = arg;
    int rc;
    if (r->outdir_fd < 0 && (rc = open_outdir(r)))
        return rc;
    unsigned char *data = NULL;
    size_t n = 0;
    bool text = strcmp(mime, "image/svg+xml") == 0; /* SVG comes as text */
    if (!text && (rc = base64_decode(b64, strlen(b64), &data, &n))) {
        fprintf(stderr, "sandpit run: the kernel sent an image that is not base64\n");
        return rc;
    }
    char stem[64], name[96];
    snprintf(stem, sizeof stem, "cell-%d-%d", execution_count, index);
    rc = write_image(r, text ? (const void *)b64 : data, text ? strlen(b64) : n, stem,
                     extension_of(mime), name, sizeof name);
    if (!rc && snprintf(path, len, "%s/%s", r->outdir, name) >= (int)len)
        rc = -ENAMETOOLONG;
    if (rc)
        fprintf(stderr, "sandpit run: cannot write %s/%s: %s\n", r->outdir, stem,
                tfile_strerror(rc));
    free(data);
    return rc;
}

/* As text, each output as it arrives. */
static void print_live(struct run *r, const struct msg *m)
{
    const char *type = msg_type(m);
    const json_t *c = m->content;
    if (strcmp(type, "stream") == 0) {
        const char *name = json_string_value(json_object_get(c, "name"));
        json_t *text = json_object_get(c, "text");
        if (!name || !json_is_string(text))
            return;
        textcut_add(strcmp(name, "stderr") == 0 ? &r->err : &r->out,
                    json_string_value(text), json_string_length(text));
    } else if (strcmp(type, "execute_result") == 0 || strcmp(type, "display_data") == 0) {
        /* The files of this output are the last ones the outcome recorded. */
        json_t *last =
            json_array_get(r->outcome.outputs, json_array_size(r->outcome.outputs) - 1);
        json_t *files = json_object_get(last, "files");
        const char *text = json_string_value(json_object_get(last, "text"));
        size_t i;
        json_t *p;
        json_array_foreach(files, i, p)
            printf("[image: %s]\n", json_string_value(p));
        bool result = strcmp(type, "execute_result") == 0;
        if (result) /* the end of the log, then the result */
            textcut_flush(&r->out);
        char *cut = text && (!json_array_size(files) || result)
                        ? outcome_cut(text, r->args->max_chars)
                        : NULL;
        if (cut)
            printf("%s\n", cut);
        free(cut);
        fflush(stdout);
    } else if (strcmp(type, "error") == 0) {
        textcut_flush(&r->out);
        textcut_flush(&r->err);
        char *tb = outcome_traceback_text(r->outcome.error);
        if (tb)
            fputs(tb, stderr);
        free(tb);
    }
}

static void arm(struct run *r, double t)
{
    struct itimerspec it = {
        .it_value = {.tv_sec = (time_t)t, .tv_nsec = (long)((t - (time_t)t) * 1e9)}};
    if (r->timerfd >= 0)
        timerfd_settime(r->timerfd, 0, &it, NULL);
}

static void on_iopub(void *arg, const struct msg *m)
{
    struct run *r = arg;
    if (!r->started && strcmp(msg_type(m), "execute_input") == 0) {
        r->started = true; /* its own time limit counts from now, not the wait */
        if (r->args->timeout_s > 0)
            arm(r, r->args->timeout_s + REPLY_GRACE_S);
    }
    outcome_add(&r->outcome, m);
    if (!r->args->json)
        print_live(r, m);
}

static int on_fd(void *arg, int fd)
{
    struct run *r = arg;
    if (fd == r->pidfd)
        return -ECHILD;
    if (fd == r->timerfd)
        return r->ended_by ? -EINTR : -ETIMEDOUT;
    struct signalfd_siginfo si;
    while (read(fd, &si, sizeof si) == (ssize_t)sizeof si) {
        /* Ctrl-C interrupts whatever runs, as in a console. A harness that
         * ends the command (SIGTERM, SIGHUP) interrupts its own cell only:
         * one still waiting behind another client's is not that one's. */
        bool end = si.ssi_signo != SIGINT;
        if (end && (r->ended_by || !r->started)) {
            r->ended_by = (int)si.ssi_signo;
            return -EINTR; /* a second one, or a cell that does not run yet */
        }
        json_t *content = json_object();
        client_send(r->client, CONNECTION_CONTROL, "interrupt_request", &content, NULL,
                    NULL);
        if (end) { /* its reply, for a moment, so that what it did is told */
            r->ended_by = (int)si.ssi_signo;
            arm(r, END_GRACE_S);
            fprintf(stderr, "\nsandpit run: ended by %s: interrupting the cell\n",
                    r->ended_by == SIGTERM ? "SIGTERM" : "SIGHUP");
            continue;
        }
        fprintf(stderr, "\nsandpit run: interrupting the cell\n");
    }
    return 0;
}

static int send_interrupt(struct client *c)
{
    char id[CLIENT_ID_LEN];
    struct msg *reply = NULL;
    struct client_wait w = {.timeout_s = 10, .skip_idle = true};
    int rc = client_send(c, CONNECTION_CONTROL, "interrupt_request", NULL, NULL, id);
    if (!rc)
        rc = client_wait(c, CONNECTION_CONTROL, id, &w, &reply);
    msg_free(reply);
    return rc;
}

/* Sends the cell and prints what it did: 0 (it succeeded), 1 (it failed), 2
 * (it could not be run: r->why says why). */
/* Prints the cell's end: with --json, the one object; as text, an error that
 * came in the reply alone. The exit status: 0 when the cell succeeded, 1 when it
 * failed, 2 (r->why set) when out of memory. */
static int print_outcome(struct run *r, const char *cell_status)
{
    const struct run_args *a = r->args;
    if (a->json) {
        json_t *j = outcome_json(&r->outcome, cell_status, a->max_chars);
        char *text = j ? json_dumps(j, JSON_PRESERVE_ORDER | JSON_INDENT(1)) : NULL;
        json_decref(j);
        if (!text) {
            fail(r, "out of memory");
            return 2;
        }
        printf("%s\n", text);
        free(text);
    } else if (strcmp(cell_status, "ok") != 0 && !json_array_size(r->outcome.outputs)) {
        /* An error that came in the reply alone, or an aborted cell. */
        char *tb = r->outcome.error ? outcome_traceback_text(r->outcome.error) : NULL;
        fprintf(stderr, "%s", tb ? tb : "sandpit run: the cell was aborted\n");
        free(tb);
    }
    fflush(stdout);
    return strcmp(cell_status, "ok") == 0 ? 0 : 1;
}

static int run_cell(struct run *r, struct client *c, const char *code)
{
    const struct run_args *a = r->args;
    struct client_wait w = {.timeout_s = READY_TIMEOUT_S,
                            .on_fd = on_fd,
                            .arg = r,
                            .on_iopub = on_iopub,
                            .on_control = true};
    int fds[3], nfds = 0, rc;
    if (r->pidfd >= 0)
        fds[nfds++] = r->pidfd;
    w.fds = fds;
    w.nfds = (size_t)nfds;
    /* Asked on control, a kernel busy with another cell answers at once. */
    if ((rc = client_ready(c, &w, NULL))) {
        fail(r, "the kernel does not answer: %s",
             rc == -ECHILD ? "it has exited" : strerror(-rc));
        return 2;
    }
    /* Ctrl-C from now on interrupts the cell; SIGTERM and SIGHUP too, and end
     * the command. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    if ((r->sigfd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) >= 0)
        fds[nfds++] = r->sigfd;
    if ((r->timerfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC)) >= 0)
        fds[nfds++] = r->timerfd;
    w.nfds = (size_t)nfds;
    r->outcome.save_image = save_image;
    r->outcome.save_arg = r;
    /* A cell whose command has ended (killed by a harness) before its turn
     * does not run: the kernel checks the client is still there. */
    json_t *meta = a->timeout_s > 0
                       ? json_pack("{s:{s:f, s:b}}", "sandpit", "timeout", a->timeout_s,
                                   "abandon_if_gone", 1)
                       : json_pack("{s:{s:b}}", "sandpit", "abandon_if_gone", 1);
    char id[CLIENT_ID_LEN];
    struct msg *reply = NULL;
    /* A cell waits its turn behind others for as long as they run (the
     * heartbeat tells a dead kernel); its own time runs from its start. */
    w.timeout_s = 0;
    if ((rc = client_execute(c, code, false, &meta, id)) ||
        (rc = client_wait(c, CONNECTION_SHELL, id, &w, &reply))) {
        if (r->ended_by)
            fail(r, "ended by %s: %s", r->ended_by == SIGTERM ? "SIGTERM" : "SIGHUP",
                 r->started ? "the cell was interrupted and has not answered yet"
                            : "the cell had not started, and will not run");
        else
            fail(r, "%s",
                 rc == -ECHILD      ? "the kernel exited while the cell ran"
                 : rc == -EHOSTDOWN ? "the kernel stopped answering"
                 : rc == -ETIMEDOUT ? "no answer from the kernel in time"
                                    : strerror(-rc));
        return 2;
    }
    const char *cell_status;
    outcome_finish(&r->outcome, reply, &cell_status);
    msg_free(reply);
    return print_outcome(r, cell_status);
}

/* Finds the kernel: the workspace's (or the nearest enclosing folder's, said
 * on stderr), or the connection file's. 0, or 2 with r->why set. */
static int find_kernel(struct run *r, struct instance *in, struct instance_state *st,
                       struct launched *k, const char **conn)
{
    const struct run_args *a = r->args;
    char err[1024];
    int rc = a->connection_file
                 ? instance_locate(in, a->workspace, err, sizeof err)
                 : instance_find_running(in, a->workspace, st, err, sizeof err);
    if (rc < 0) {
        fail(r, "%s", err);
        return 2;
    }
    *conn = a->connection_file;
    if (a->connection_file)
        return 0;
    if (rc == 2) {
        fail(r,
             "no kernel is running for %s or a folder that holds it: start one with "
             "`sandpit start`, or give --connection-file",
             in->workspace);
        return 2;
    }
    if (rc == 1)
        fprintf(stderr, "sandpit run: using the kernel of the enclosing workspace %s\n",
                in->workspace);
    *conn = in->connection_file;
    launch_attach(k, st->pid, st->argv, in->log_file);
    r->pidfd = k->pidfd;
    return 0;
}

/* The code to run, or NULL with r->why set; *none when there is none to run
 * (--interrupt or --restart alone). */
static char *read_code(struct run *r, bool *none)
{
    const struct run_args *a = r->args;
    *none = false;
    if (a->code) {
        char *code = strdup(a->code);
        if (!code)
            fail(r, "out of memory");
        return code;
    }
    if (!a->code_file && (a->interrupt || a->restart)) {
        *none = true;
        return NULL;
    }
    /* -f FILE: a file a cell may have written (in the workspace), so a link
     * there is refused rather than followed (it could name a file the sandbox
     * hides), and a FIFO rather than waited on. */
    const char *path = a->code_file && strcmp(a->code_file, "-") ? a->code_file : NULL;
    char *code = NULL;
    size_t len;
    int rc = 0;
    if (path)
        rc = fsutil_read_file(path, MAX_CODE_BYTES - 1, &code, &len);
    else if (!(code = read_stdin()))
        rc = -errno;
    if (!code)
        fail(r, "cannot read the code from %s: %s", path ? path : "standard input",
             tfile_strerror(rc));
    return code;
}

/* Before the cell: the kernel interrupted or restarted, as asked (the
 * workspace's lock held across a restart, in *lock). 0, or 2 with r->why set. */
static int before_cell(struct run *r, struct instance *in, struct launched *k,
                       struct client *c, int *lock)
{
    const struct run_args *a = r->args;
    char err[1024];
    int rc;
    if (a->interrupt && (rc = send_interrupt(c))) {
        fail(r, "the kernel did not answer the interrupt: %s", strerror(-rc));
        return 2;
    }
    if (!a->restart)
        return 0;
    if (!a->connection_file)
        *lock = instance_lock(in);
    rc = launch_restart(k, c, RESTART_TIMEOUT_S, err, sizeof err);
    if (rc < 0) {
        fail(r, "cannot restart the kernel: %s", err);
        return 2;
    }
    if (rc == 1 && !a->connection_file)
        instance_write_state(in, k->pid, k->argv);
    r->pidfd = k->pidfd;
    if (!a->json)
        fprintf(stderr, "sandpit run: the kernel was restarted\n");
    return 0;
}

/* Where images go: --outdir, else outputs/ in the workspace. 0, or 2 with r->why. */
static int set_outdir(struct run *r, const char *workspace)
{
    const char *dir = r->args->outdir;
    if ((dir ? snprintf(r->outdir, sizeof r->outdir, "%s", dir)
             : snprintf(r->outdir, sizeof r->outdir, "%.4000s/outputs", workspace)) >=
        (int)sizeof r->outdir) {
        fail(r, "the output folder's path is too long");
        return 2;
    }
    r->workspace = workspace;
    return 0;
}

static void run_release(struct run *r)
{
    if (r->sigfd >= 0)
        close(r->sigfd);
    if (r->timerfd >= 0)
        close(r->timerfd);
    if (r->outdir_fd >= 0)
        close(r->outdir_fd);
    outcome_release(&r->outcome);
}

/* A command line that is not valid, said as one object too with --json. */
static void bad_command_line(struct run *r, int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (strcmp(argv[i], "--json") == 0) {
            snprintf(r->why, sizeof r->why,
                     "the command line is not valid (see sandpit run --help)");
            print_unavailable(r);
            return;
        }
}

int run_main(int argc, char **argv)
{
    struct run_args a;
    struct run r;
    memset(&r, 0, sizeof r);
    r.args = &a;
    r.sigfd = r.pidfd = r.outdir_fd = r.timerfd = -1;
    textcut_init(&r.out, stdout, 0);
    textcut_init(&r.err, stderr, 0);
    int rc = run_args_parse(&a, argc, argv);
    if (rc < 0)
        bad_command_line(&r, argc, argv);
    if (rc)
        return rc > 0 ? 0 : 2;
    struct instance in;
    struct instance_state st;
    struct launched k;
    struct client c;
    char err[1024];
    char *code = NULL;
    const char *conn = NULL;
    int status = 2, lock = -1;
    bool open = false, none = false;
    memset(&st, 0, sizeof st);
    launch_init(&k);
    if (outcome_init(&r.outcome)) {
        fail(&r, "out of memory");
        goto out;
    }
    textcut_init(&r.out, stdout, a.max_chars);
    textcut_init(&r.err, stderr, a.max_chars);
    if (find_kernel(&r, &in, &st, &k, &conn) ||
        (!(code = read_code(&r, &none)) && !none) || set_outdir(&r, in.workspace))
        goto out;
    if (client_open(&c, conn, err, sizeof err)) {
        fail(&r, "%s", err);
        goto out;
    }
    open = true;
    r.client = &c;
    if (before_cell(&r, &in, &k, &c, &lock) == 0)
        status = code ? run_cell(&r, &c, code) : 0;
out:
    textcut_finish(&r.out);
    textcut_finish(&r.err);
    if (status == 2 && a.json)
        print_unavailable(&r);
    if (open)
        client_close(&c);
    run_release(&r);
    if (lock >= 0)
        close(lock);
    free(code);
    instance_state_release(&st);
    launch_release(&k);
    return status;
}
