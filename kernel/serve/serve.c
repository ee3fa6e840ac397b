/* serve: the command, its options, and the loop (serve.h).
 *
 * The hard parts are at the edges of the process's life. At start: the
 * address (127.0.0.1 unless told; any other only with TLS or
 * --allow-insecure), the token (given, read from a file, or made and
 * printed, never logged otherwise), the private folder of the kernels'
 * connection files (mode 0700, in the user's folder of such folders that
 * every worker has hidden). At SIGTERM: stop accepting, ask every kernel to
 * shut down at once, wait for each within a bound, exit. */
#include "kernel/serve/serve.h"

#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "kernel/client/lifecycle.h"
#include "kernel/serve/bridge.h"
#include "kernel/serve/codec.h"
#include "kernel/serve/conns.h"
#include "kernel/serve/e2b_exec.h"
#include "kernel/serve/http.h"
#include "kernel/serve/loop.h"
#include "kernel/serve/options_serve.h"
#include "kernel/serve/server.h"
#include "kernel/serve/sessions.h"
#include "kernel/serve/slog.h"
#include "kernel/supervisor/tmpdir.h"
#include "kernel/util/log.h"

static volatile sig_atomic_t stopping;
static struct lws_context *running;

static void on_signal(int sig)
{
    (void)sig;
    stopping = 1;
    if (running)
        lws_cancel_service(running);
}

static int serve_callback(struct lws *wsi, enum lws_callback_reasons reason, void *user,
                          void *in, size_t len)
{
    if (bridge_handles(reason))
        return bridge_callback(wsi, reason, user, in, len);
    if (http_handles(reason))
        return http_callback(wsi, reason, user, in, len);
    if (conns_handles(reason))
        return conns_callback(wsi, reason, user, in, len);
    const struct lws_protocols *p = lws_get_protocol(wsi);
    if (p && strcmp(p->name, LOOP_PROTOCOL) == 0)
        return loop_callback(wsi, reason, user, in, len);
    return 0;
}

static const struct lws_protocols protocols[] = {
    {"http", serve_callback, sizeof(struct serve_pss), 65536, 0, NULL, 0},
    {CODEC_V1_NAME, serve_callback, sizeof(struct serve_pss), 65536, 0, NULL, 0},
    {LOOP_PROTOCOL, serve_callback, 0, 0, 0, NULL, 0},
    {NULL, NULL, 0, 0, 0, NULL, 0},
};

static int make_context(struct serve *s, char *err, size_t errlen)
{
    struct lws_context_creation_info info;
    memset(&info, 0, sizeof info);
    info.options = LWS_SERVER_OPTION_EXPLICIT_VHOSTS | LWS_SERVER_OPTION_VALIDATE_UTF8 |
                   (s->cfg.certfile ? LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT : 0);
    info.user = s;
    info.max_http_header_data = 8192;
    info.max_http_header_pool = 256;
    info.timeout_secs = 10; /* a request's headers: all of them within this */
    info.keepalive_timeout = 30;
    info.pt_serv_buf_size = 65536;
    if (!(s->ctx = lws_create_context(&info)))
        return snprintf(err, errlen, "cannot set up libwebsockets"), -1;
    info.port = s->cfg.port;
    info.iface = s->cfg.ip;
    info.protocols = protocols;
    info.vhost_name = "sandpit";
    info.alpn = "http/1.1";
    info.ssl_cert_filepath = s->cfg.certfile;
    info.ssl_private_key_filepath = s->cfg.keyfile;
    /* A WebSocket quiet for a while is pinged, and closed if it does not
     * answer: a client whose machine went away leaves nothing open. */
    static lws_retry_bo_t idle;
    idle.secs_since_valid_ping = (uint16_t)s->cfg.ws_ping_s;
    idle.secs_since_valid_hangup = (uint16_t)(s->cfg.ws_ping_s * 2 + 10);
    info.retry_and_idle_policy = &idle;
    if (!(s->vh = lws_create_vhost(s->ctx, &info)))
        return snprintf(err, errlen, "cannot listen on %s port %d", s->cfg.ip,
                        s->cfg.port),
               -1;
    return 0;
}

static void announce(const struct serve *s, bool generated)
{
    int port = lws_get_vhost_listen_port(s->vh);
    const char *scheme = s->cfg.certfile ? "https" : "http";
    log_info("listening on %s://%s:%d/", scheme, s->cfg.ip, port);
    bool v6 = strchr(s->cfg.ip, ':') != NULL; /* a URL's IPv6 host is bracketed */
    log_info(
        "for code written for E2B: E2B_DEBUG=true E2B_SANDBOX_URL=%s://%s%s%s:%d/e2b/%s",
        scheme, v6 ? "[" : "", s->cfg.ip, v6 ? "]" : "", port, s->cfg.e2b_secret);
    if (generated)
        fprintf(stderr,
                "sandpit serve: the token (generated; --token or --token-file to choose "
                "it):\n    %s://%s:%d/api?token=%s\n",
                scheme, s->cfg.ip, port, s->cfg.token);
    fflush(stderr);
}

/* Each kernel holds a dozen descriptors (its sockets, ZeroMQ's own, its
 * pidfd) and each WebSocket client half a dozen: the soft limit goes up to
 * the hard one, or 65536 (lws sizes its tables by it). */
static void raise_fd_limit(void)
{
    struct rlimit rl;
    rlim_t want = 65536;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < want) {
        rl.rlim_cur = rl.rlim_max < want ? rl.rlim_max : want;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
}

static void run_loop(struct serve *s)
{
    running = s->ctx;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    while (!stopping)
        if (lws_service(s->ctx, 0) < 0)
            break;
    log_info("stopping: shutting the kernels down");
}

int serve_main(int argc, char **argv)
{
    static struct serve s;
    struct options kopts;
    char err[1024], *private_dir = NULL;
    bool generated = false;
    int status = 2;
    options_init(&kopts);
    registry_init(&s.reg);
    int rc = serve_options_parse(&s, &kopts, argc, argv, &generated, err, sizeof err);
    if (rc == 1) {
        status = 0;
        goto out;
    }
    if (rc) {
        fprintf(stderr, "sandpit serve: %s\n", err);
        goto out;
    }
    status = 1;
    /* The server says what it does (kernels started, ended) at least. */
    slog_init(kopts.log_level > LOG_INFO ? kopts.log_level : LOG_INFO, s.cfg.log_json);
    lws_set_log_level(LLL_ERR, NULL);
    raise_fd_limit();
    if ((rc = tmpdir_make_private("serve", &private_dir)) ||
        msg_session_init(&s.session, "sandpit")) {
        fprintf(stderr, "sandpit serve: cannot make the private folder: %s\n",
                strerror(-rc));
        goto out;
    }
    s.reg.kopts = &kopts;
    s.reg.relay_logs = s.cfg.log_json;
    s.reg.private_dir = private_dir;
    if (make_context(&s, err, sizeof err)) {
        fprintf(stderr, "sandpit serve: %s\n", err);
        goto out;
    }
    s.reg.vh = s.vh;
    s.reg.ctx = s.ctx;
    bridge_hook(&s);
    if (e2b_hook(&s)) {
        fprintf(stderr, "sandpit serve: out of memory\n");
        goto out;
    }
    registry_start_timers(&s.reg);
    announce(&s, generated);
    run_loop(&s);
    status = 0;
out:
    sessions_release(&s);
    registry_release(&s.reg);
    if (s.ctx)
        lws_context_destroy(s.ctx);
    e2b_release(&s);
    running = NULL;
    if (private_dir)
        tmpdir_remove(private_dir);
    free(private_dir);
    serve_options_release(&s);
    options_release(&kopts);
    lws_explicit_bzero(s.cfg.token, sizeof s.cfg.token);
    lws_explicit_bzero(s.cfg.e2b_secret, sizeof s.cfg.e2b_secret);
    return status;
}
