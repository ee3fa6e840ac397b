/* registry: the server's kernels (registry.h).
 *
 * The hard parts. Admission: the kernel limit is checked and the kernel
 * counted before anything else happens, in the one thread the server has,
 * so that no two requests can both take the last place. The environment: a
 * request names the variables its kernel gets, and only KERNEL_* ones of
 * sane names and sizes pass; KERNEL_USERNAME with --workspaces chooses the
 * user's own folder, made 0700 by userdir (names checked there). Death: a
 * kernel's pidfd is watched in the loop; a kernel that exits is marked dead
 * at once, its clients told, and it is removed a little later, so that a
 * client that asks meanwhile sees "dead" rather than "not found". */
#include "kernel/serve/registry.h"

#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zmq.h>

#include "kernel/client/connfile.h"
#include "kernel/client/lifecycle.h"
#include "kernel/serve/loop.h"
#include "kernel/serve/ready.h"
#include "kernel/serve/registry_ring.h"
#include "kernel/serve/relay.h"
#include "kernel/serve/slog.h"
#include "kernel/serve/zwire.h"
#include "kernel/util/log.h"
#include "kernel/util/monotime.h"
#include "kernel/util/userdir.h"
#include "protocol/errbuf.h"

#define START_TIMEOUT_S   60.0
#define STOP_GRACE_S      5.0
#define RESTART_TIMEOUT_S 60.0
#define ENV_NAME_MAX      128

static double wall_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* A log line about k: its id and user on the line (slog.h). */
static void klog(const struct serve_kernel *k, enum log_level level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void klog(const struct serve_kernel *k, enum log_level level, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    slog_kernel(k->id, k->user);
    log_msg(level, "%s", text);
    slog_kernel(NULL, NULL);
}

void registry_init(struct registry *r)
{
    memset(r, 0, sizeof *r);
}

static void kernel_free(struct serve_kernel *k)
{
    lws_sul_cancel(&k->start_timer);
    loop_unwatch(&k->shell_watch);
    free(k->ready);
    loop_unwatch(&k->iopub_watch);
    loop_unwatch(&k->exit_watch);
    if (k->client.zctx)
        client_close(&k->client);
    launch_release(&k->proc);
    if (k->connfile) {
        connfile_remove(k->connfile);
        free(k->connfile);
    }
    registry_ring_clear(k);
    free(k->ring);
    relay_free(k->relay);
    free(k);
}

static bool env_name_ok(const char *name)
{
    size_t n = strlen(name);
    if (n <= 7 || n > ENV_NAME_MAX || strncmp(name, "KERNEL_", 7) != 0)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((name[i] >= 'A' && name[i] <= 'Z') || (name[i] >= '0' && name[i] <= '9') ||
              name[i] == '_'))
            return false;
    return true;
}

static void free_env(char **env)
{
    for (size_t i = 0; env && env[i]; i++)
        free(env[i]);
    free(env);
}

/* The KERNEL_* entries of a request's env, a new NULL-terminated array (other
 * names, and values that are not strings, are left out, as Kernel Gateway
 * leaves them). 0, or an HTTP status with a sentence in err. */
static int take_env(const json_t *env, char ***out, char *user, size_t ulen, char *err,
                    size_t errlen)
{
    *out = NULL;
    user[0] = 0;
    if (env && !json_is_object(env))
        return errbuf_set(400, err, errlen, "env must be an object"), 400;
    char **v = calloc(REGISTRY_ENV_MAX + 1, sizeof *v);
    size_t n = 0;
    const char *key;
    json_t *val;
    if (!v)
        return errbuf_set(500, err, errlen, "out of memory"), 500;
    json_object_foreach((json_t *)env, key, val) {
        const char *s = json_string_value(val);
        if (!env_name_ok(key))
            continue;
        if (!s) {
            free_env(v);
            return errbuf_set(400, err, errlen, "env: %.128s must be a string", key);
        }
        size_t slen = json_string_length(val);
        if (n == REGISTRY_ENV_MAX || slen != strlen(s) || slen > REGISTRY_ENV_VALUE_MAX) {
            free_env(v);
            errbuf_set(400, err, errlen,
                       "env: at most %d KERNEL_* variables of at most %d bytes, without "
                       "NUL",
                       REGISTRY_ENV_MAX, REGISTRY_ENV_VALUE_MAX);
            return 400;
        }
        if (strcmp(key, "KERNEL_USERNAME") == 0)
            snprintf(user, ulen, "%s", s);
        if (asprintf(&v[n], "%s=%s", key, s) < 0) {
            v[n] = NULL;
            free_env(v);
            return errbuf_set(500, err, errlen, "out of memory"), 500;
        }
        n++;
    }
    *out = v;
    return 0;
}

/* The workspace of a kernel for user: the server's, or with --workspaces
 * the user's own folder there. *out new. 0 or an HTTP status. */
static int choose_workspace(const struct registry *r, const char *user, char **out,
                            char *err, size_t errlen)
{
    *out = NULL;
    if (!r->workspaces) {
        *out = strdup(r->workspace);
        return *out ? 0 : 500;
    }
    if (!*user || !userdir_valid(user)) {
        errbuf_set(400, err, errlen,
                   "this server gives each user a workspace of their own: env needs "
                   "KERNEL_USERNAME, a name of letters, digits, '.', '_' and '-'");
        return 400;
    }
    char tmpl[PATH_MAX];
    if (snprintf(tmpl, sizeof tmpl, "%s/" USERDIR_PLACEHOLDER, r->workspaces) >=
        (int)sizeof tmpl)
        return errbuf_set(500, err, errlen, "the workspaces' path is too long"), 500;
    char why[512];
    if (userdir_workspace(tmpl, user, out, why, sizeof why)) {
        log_error("cannot make the workspace of %s: %s", user, why);
        errbuf_set(500, err, errlen, "cannot make the user's workspace");
        return 500;
    }
    return 0;
}

static void on_iopub(void *arg);
static void on_exit_fd(void *arg);

/* Starts the process and opens a client on it. 0 or -errno with err. */
static int spawn(struct registry *r, struct serve_kernel *k, char **env, const char *ws,
                 char *err, size_t errlen)
{
    /* A short name: the ipc sockets' paths must fit a socket's address. */
    char path[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/k%lu.json", r->private_dir, ++r->spawned) >=
            (int)sizeof path ||
        !(k->connfile = strdup(path)))
        return errbuf_set(-ENAMETOOLONG, err, errlen,
                          "the private folder's path is long");
    int rc = connfile_write_ipc(k->connfile, err, errlen);
    if (rc < 0)
        return rc;
    char **argv = lifecycle_kernel_argv(r->kopts, k->connfile, ws);
    if (!argv)
        return errbuf_set(-ENOMEM, err, errlen, "out of memory");
    char log[64];
    if (r->relay_logs &&
        !(k->relay = relay_new(r->vh, k->id, k->user, log, sizeof log))) {
        free_env(argv);
        return errbuf_set(-ENOMEM, err, errlen, "cannot relay the kernel's log");
    }
    if ((rc = launch_start_env(&k->proc, &argv, true, k->relay ? log : NULL, env, err,
                               errlen)))
        return rc;
    struct client_options co = {.reconnect_ms = 10};
    return client_open_with(&k->client, k->connfile, &co, err, errlen);
}

/* Watches the kernel's iopub and its exit. 0 or -ENOMEM. */
static int watch(struct registry *r, struct serve_kernel *k, char *err, size_t errlen)
{
    k->iopub_watch =
        loop_watch(r->vh, zwire_fd(k->client.sockets[CONNECTION_IOPUB]), on_iopub, k);
    if (k->proc.pidfd >= 0)
        k->exit_watch = loop_watch(r->vh, k->proc.pidfd, on_exit_fd, k);
    if (!k->iopub_watch || (k->proc.pidfd >= 0 && !k->exit_watch))
        return errbuf_set(-ENOMEM, err, errlen, "cannot watch the kernel");
    return 0;
}

static bool name_ok(const char *name)
{
    return !name || !*name || strcmp(name, REGISTRY_KERNEL_NAME) == 0 ||
           strcmp(name, "python3") == 0;
}

/* A new kernel, counted, with its environment and workspace: 0, or an HTTP
 * status with err (nothing is left). */
static int prepare(struct registry *r, const char *name, const json_t *env,
                   struct serve_kernel **out, char ***kenv, char **ws, char *err,
                   size_t errlen)
{
    *out = NULL;
    if (!name_ok(name))
        return errbuf_set(404, err, errlen, "no such kernel: %s", name);
    if (r->max_kernels > 0 && r->count >= r->max_kernels)
        return errbuf_set(403, err, errlen, "the server runs its limit of %d kernels",
                          r->max_kernels);
    struct serve_kernel *k = calloc(1, sizeof *k);
    if (!k)
        return errbuf_set(500, err, errlen, "out of memory");
    k->reg = r;
    launch_init(&k->proc);
    snprintf(k->name, sizeof k->name, "%s", name && *name ? name : REGISTRY_KERNEL_NAME);
    snprintf(k->state, sizeof k->state, "starting");
    registry_touch(k);
    int status = take_env(env, kenv, k->user, sizeof k->user, err, errlen);
    if (!status)
        status = choose_workspace(r, k->user, ws, err, errlen);
    if (!status && model_id_new(k->id))
        status = errbuf_set(500, err, errlen, "cannot make an id");
    if (status) {
        free_env(*kenv);
        *kenv = NULL;
        kernel_free(k);
        return status;
    }
    r->count++; /* the place is taken from here on */
    *out = k;
    return 0;
}

/* A kernel that did not start and is in no list: logged, stopped, freed. */
static void discard(struct registry *r, struct serve_kernel *k, const char *why)
{
    klog(k, LOG_ERROR, "the kernel did not start: %s", why);
    r->count--;
    if (k->proc.pid > 0)
        launch_stop(&k->proc, k->client.zctx ? &k->client : NULL, 1);
    kernel_free(k);
}

static void now_ready(struct registry *r, struct serve_kernel *k)
{
    snprintf(k->state, sizeof k->state, "idle");
    registry_touch(k);
    r->started++;
    klog(k, LOG_INFO, "kernel started (pid %d)", (int)k->proc.pid);
}

int registry_start(struct registry *r, const char *name, const json_t *env,
                   struct serve_kernel **out, char *err, size_t errlen)
{
    struct serve_kernel *k;
    char **kenv = NULL, *ws = NULL, why[1024];
    int status = prepare(r, name, env, &k, &kenv, &ws, err, errlen);
    if (!status && (spawn(r, k, kenv, ws, why, sizeof why) ||
                    launch_wait_ready(&k->proc, &k->client, START_TIMEOUT_S, NULL, why,
                                      sizeof why) ||
                    watch(r, k, why, sizeof why))) {
        errbuf_set(500, err, errlen, "the kernel did not start: %s", why);
        discard(r, k, why);
        status = 500;
    } else if (!status) {
        registry_drain_iopub(k);
        k->next = r->head;
        r->head = k;
        now_ready(r, k);
        *out = k;
    }
    free_env(kenv);
    free(ws);
    return status;
}

/* --- starting without waiting ---------------------------------------------- */

static void start_over(struct serve_kernel *k)
{
    lws_sul_cancel(&k->start_timer);
    loop_unwatch(&k->shell_watch);
    free(k->ready);
    k->ready = NULL;
}

/* The waiter is told (k NULL), then the kernel goes. */
static void start_failed(struct serve_kernel *k, const char *why)
{
    struct registry *r = k->reg;
    registry_ready_fn fn = k->ready_fn;
    char msg[1100];
    snprintf(msg, sizeof msg, "the kernel did not start: %s", why);
    klog(k, LOG_ERROR, "%s", msg);
    k->ready_fn = NULL;
    start_over(k);
    if (fn)
        fn(k->ready_arg, NULL, 500, msg);
    registry_remove(r, k);
}

static void start_done(struct serve_kernel *k)
{
    registry_ready_fn fn = k->ready_fn;
    k->ready_fn = NULL;
    start_over(k);
    now_ready(k->reg, k);
    if (fn)
        fn(k->ready_arg, k, 0, NULL);
}

/* A message on the starting kernel's channel ch: 0, 1 when the start is
 * over and k ready, -1 when it failed and k has gone. */
static int start_msg(struct serve_kernel *k, enum connection_channel ch,
                     const struct msg *m)
{
    int rc = ready_on_msg(k->ready, &k->client, ch, m);
    if (rc == 1)
        start_done(k);
    else if (rc < 0)
        start_failed(k, strerror(-rc));
    return rc < 0 ? -1 : rc;
}

static void on_shell(void *arg)
{
    struct serve_kernel *k = arg;
    void *sock = k->client.sockets[CONNECTION_SHELL];
    while (k->ready && zwire_readable(sock)) {
        struct msg *m = NULL;
        int rc = zwire_recv(sock, &k->client.sign, &m, NULL);
        bool ended = rc == 0 && start_msg(k, CONNECTION_SHELL, m) != 0;
        msg_free(m);
        if (ended || (rc && rc != -EBADMSG))
            return;
    }
}

static void on_start_tick(lws_sorted_usec_list_t *sul)
{
    struct serve_kernel *k = lws_container_of(sul, struct serve_kernel, start_timer);
    if (!k->ready)
        return;
    if (monotime_now() > k->start_deadline) {
        start_failed(k, "it did not answer in time");
        return;
    }
    if (ready_waiting_info(k->ready) && ready_poke(k->ready, &k->client)) {
        start_failed(k, "cannot send to it");
        return;
    }
    on_shell(k); /* the send may have taken the descriptor's signal */
    if (!k->ready)
        return;
    k->poke_interval = k->poke_interval * 2 > 0.5 ? 0.5 : k->poke_interval * 2;
    lws_sul_schedule(k->reg->ctx, 0, &k->start_timer, on_start_tick,
                     (lws_usec_t)(k->poke_interval * LWS_US_PER_SEC));
}

int registry_start_async(struct registry *r, const char *name, const json_t *env,
                         registry_ready_fn fn, void *arg, struct serve_kernel **out,
                         char *err, size_t errlen)
{
    struct serve_kernel *k;
    char **kenv = NULL, *ws = NULL, why[1024];
    int status = prepare(r, name, env, &k, &kenv, &ws, err, errlen);
    if (!status &&
        (!(k->ready = calloc(1, sizeof *k->ready)) ||
         spawn(r, k, kenv, ws, why, sizeof why) || watch(r, k, why, sizeof why) ||
         !(k->shell_watch = loop_watch(
               r->vh, zwire_fd(k->client.sockets[CONNECTION_SHELL]), on_shell, k)))) {
        errbuf_set(500, err, errlen, "the kernel did not start: %s",
                   k->ready ? why : "out of memory");
        discard(r, k, k->ready ? why : "out of memory");
        status = 500;
    } else if (!status) {
        ready_init(k->ready);
        k->ready_fn = fn;
        k->ready_arg = arg;
        k->start_deadline = monotime_now() + START_TIMEOUT_S;
        k->poke_interval = 0.025;
        k->next = r->head;
        r->head = k;
        *out = k;
        on_start_tick(&k->start_timer); /* the first request, and the timer */
    }
    free_env(kenv);
    free(ws);
    return status;
}

void registry_forget_waiter(struct serve_kernel *k)
{
    k->ready_fn = NULL;
}

struct serve_kernel *registry_find(struct registry *r, const char *id)
{
    for (struct serve_kernel *k = r->head; k && id; k = k->next)
        if (strcmp(k->id, id) == 0)
            return k;
    return NULL;
}

void registry_remove(struct registry *r, struct serve_kernel *k)
{
    for (struct serve_kernel **p = &r->head; *p; p = &(*p)->next)
        if (*p == k) {
            *p = k->next;
            break;
        }
    r->count--;
    if (k->ready_fn) { /* removed while it starts: its waiter is told */
        registry_ready_fn fn = k->ready_fn;
        k->ready_fn = NULL;
        fn(k->ready_arg, NULL, 500, "the kernel was shut down while it started");
    }
    start_over(k);
    loop_unwatch(&k->iopub_watch);
    loop_unwatch(&k->exit_watch);
    if (!k->dead_at && k->proc.pid > 0)
        launch_stop(&k->proc, &k->client, STOP_GRACE_S);
    else if (k->proc.pid > 0)
        launch_exited(&k->proc); /* reaps it */
    klog(k, LOG_INFO, "kernel removed");
    if (r->on_gone)
        r->on_gone(r->hook_arg, k);
    kernel_free(k);
}

void registry_release(struct registry *r)
{
    lws_sul_cancel(&r->cull_timer);
    /* Ask every kernel first, then wait for each: they shut down together. */
    for (struct serve_kernel *k = r->head; k; k = k->next)
        if (!k->dead_at && k->client.zctx)
            client_send(&k->client, CONNECTION_CONTROL, "shutdown_request", NULL, NULL,
                        NULL);
    while (r->head)
        registry_remove(r, r->head);
}

static void drain_socket(void *sock, struct sign *s)
{
    struct msg *m;
    int rc;
    while ((rc = zwire_recv(sock, s, &m, NULL)) != -EAGAIN && rc != -ETERM) {
        msg_free(m);
        if (rc && rc != -EBADMSG)
            break;
    }
}

void registry_drain_shell(struct serve_kernel *k)
{
    drain_socket(k->client.sockets[CONNECTION_SHELL], &k->client.sign);
}

int registry_interrupt(struct serve_kernel *k)
{
    if (k->dead_at)
        return -ECHILD;
    if (k->ready)
        return -EBUSY;
    drain_socket(k->client.sockets[CONNECTION_CONTROL], &k->client.sign);
    json_t *content = json_object();
    return client_send(&k->client, CONNECTION_CONTROL, "interrupt_request", &content,
                       NULL, NULL);
}

int registry_restart(struct serve_kernel *k, char *err, size_t errlen)
{
    if (k->dead_at)
        return errbuf_set(-ECHILD, err, errlen, "the kernel is dead");
    if (k->ready)
        return errbuf_set(-EBUSY, err, errlen, "the kernel is starting");
    snprintf(k->state, sizeof k->state, "restarting");
    registry_drain_shell(k);
    drain_socket(k->client.sockets[CONNECTION_CONTROL], &k->client.sign);
    pid_t before = k->proc.pid;
    int rc = launch_restart(&k->proc, &k->client, RESTART_TIMEOUT_S, err, errlen);
    if (k->proc.pid != before) {
        loop_unwatch(&k->exit_watch);
        if (k->proc.pidfd >= 0)
            k->exit_watch = loop_watch(k->reg->vh, k->proc.pidfd, on_exit_fd, k);
    }
    registry_drain_iopub(k);
    if (rc < 0)
        return rc;
    snprintf(k->state, sizeof k->state, "idle");
    k->busy_since = 0;
    registry_touch(k);
    return 0;
}

json_t *registry_model(const struct serve_kernel *k)
{
    struct model_kernel m = {.id = k->id,
                             .name = k->name,
                             .state = k->state,
                             .last_activity = k->last_activity,
                             .connections = k->connections};
    return model_kernel_json(&m);
}

json_t *registry_list(const struct registry *r)
{
    json_t *a = json_array();
    for (const struct serve_kernel *k = r->head; k && a; k = k->next)
        json_array_append_new(a, registry_model(k));
    return a;
}

void registry_touch(struct serve_kernel *k)
{
    k->last_activity = wall_now();
}

/* --- iopub, the replay ring, death and culling ---------------------------- */

static void note_status(struct serve_kernel *k, const struct msg *m)
{
    if (k->ready || strcmp(msg_type(m), "status") != 0)
        return; /* starting: the handshake's own busy and idle do not count */
    const char *s = json_string_value(json_object_get(m->content, "execution_state"));
    if (!s || !(strcmp(s, "busy") == 0 || strcmp(s, "idle") == 0 ||
                strcmp(s, "starting") == 0 || strcmp(s, "restarting") == 0))
        return;
    if (strcmp(k->state, "restarting") == 0 && strcmp(s, "idle") != 0)
        return;
    snprintf(k->state, sizeof k->state, "%s", s);
    k->busy_since = strcmp(s, "busy") == 0 ? monotime_now() : 0;
}

static void count(struct registry *r, const struct msg *m)
{
    const char *type = msg_type(m);
    if (strcmp(type, "execute_input") == 0) {
        r->cells++;
    } else if (strcmp(type, "error") == 0) {
        const char *ename = json_string_value(json_object_get(m->content, "ename"));
        const char *evalue = json_string_value(json_object_get(m->content, "evalue"));
        if (ename && strcmp(ename, "TimeoutError") == 0)
            r->timeouts++;
        if (ename && strcmp(ename, "WorkerDied") == 0) {
            r->worker_restarts++;
            if (evalue && strcasestr(evalue, "memory"))
                r->memory_ends++;
        }
    }
}

static void on_iopub(void *arg)
{
    registry_drain_iopub(arg);
}

void registry_drain_iopub(struct serve_kernel *k)
{
    void *sock = k->client.sockets[CONNECTION_IOPUB];
    struct registry *r = k->reg;
    while (sock && zwire_readable(sock)) {
        struct msg *m = NULL;
        size_t bytes = 0;
        int rc = zwire_recv(sock, &k->client.sign, &m, &bytes);
        if (rc == -EAGAIN)
            break;
        if (rc) {
            if (rc != -EBADMSG)
                break;
            continue;
        }
        k->seq++;
        registry_touch(k);
        if (k->ready && start_msg(k, CONNECTION_IOPUB, m) < 0) {
            msg_free(m); /* the start failed: k has gone */
            return;
        }
        note_status(k, m);
        count(r, m);
        if (r->on_iopub)
            r->on_iopub(r->hook_arg, k, m, k->seq);
        if (registry_someone_away(k))
            registry_ring_push(k, &m, bytes);
        msg_free(m);
    }
}

static void on_exit_fd(void *arg)
{
    struct serve_kernel *k = arg;
    if (!launch_exited(&k->proc))
        return;
    if (k->ready) {
        start_failed(k, "it exited while starting");
        return;
    }
    loop_unwatch(&k->exit_watch);
    loop_unwatch(&k->iopub_watch);
    snprintf(k->state, sizeof k->state, "dead");
    k->dead_at = monotime_now();
    k->reg->died++;
    klog(k, LOG_WARN, "the kernel died");
    if (k->reg->on_dead)
        k->reg->on_dead(k->reg->hook_arg, k);
}

static bool cull_due(const struct registry *r, const struct serve_kernel *k, double now)
{
    if (r->cull_idle_s <= 0 || k->dead_at || k->ready)
        return false;
    if (strcmp(k->state, "busy") == 0 && !r->cull_busy)
        return false;
    if (k->connections > 0 && !r->cull_connected)
        return false;
    return now - k->last_activity > r->cull_idle_s;
}

static double tick_s(const struct registry *r)
{
    double t = r->cull_idle_s > 0 ? r->cull_idle_s / 2 : 5.0;
    return t < 0.5 ? 0.5 : t > 5.0 ? 5.0 : t;
}

static void on_tick(lws_sorted_usec_list_t *sul)
{
    struct registry *r = lws_container_of(sul, struct registry, cull_timer);
    double now = wall_now(), mono = monotime_now();
    struct serve_kernel *k = r->head, *next;
    for (; k; k = next) {
        next = k->next;
        registry_forget_old_sessions(k, mono);
        if (k->dead_at && mono - k->dead_at > REGISTRY_DEAD_KEEP_S) {
            registry_remove(r, k);
        } else if (cull_due(r, k, now)) {
            klog(k, LOG_INFO, "kernel culled: idle for %.0f s", now - k->last_activity);
            r->culled++;
            registry_remove(r, k);
        }
    }
    lws_sul_schedule(r->ctx, 0, &r->cull_timer, on_tick,
                     (lws_usec_t)(tick_s(r) * LWS_US_PER_SEC));
}

void registry_start_timers(struct registry *r)
{
    lws_sul_schedule(r->ctx, 0, &r->cull_timer, on_tick,
                     (lws_usec_t)(tick_s(r) * LWS_US_PER_SEC));
}
