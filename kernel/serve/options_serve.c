/* options_serve: the command line of `sandpit serve` (options_serve.h).
 *
 * What must not slip: a token from the command line is visible to every
 * user of the machine in /proc, so --token-file (or JUPYTER_TOKEN, as
 * Jupyter reads it) is the way to give one on a shared machine; a token is
 * checked to be printable and not empty; an address other than loopback
 * needs TLS or an explicit --allow-insecure. */
#include "kernel/serve/options_serve.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "kernel/client/lifecycle.h"
#include "kernel/serve/e2b_files.h"
#include "kernel/util/flags.h"
#include "protocol/errbuf.h"
#include "sandbox/tfile.h"

struct owned {
    char *workspace, *workspaces;
};
static struct owned owned;

void serve_usage(FILE *f)
{
    fprintf(
        f,
        "usage: sandpit serve [--ip ADDR] [--port N] [--token T | --token-file F]\n"
        "                     [--certfile F --keyfile F] [--allow-insecure]\n"
        "                     [--allow-origin ORIGIN] [--workspace DIR | --workspaces "
        "DIR]\n"
        "                     [--max-kernels N] [--cull-idle-timeout S] [--cull-busy]\n"
        "                     [--cull-connected] [--log-format text|json]\n"
        "                     [--e2b-secret-file F] [--max-upload N]\n"
        "                     [--profile default|agent] [kernel options]\n\n"
        "A kernel gateway: Jupyter's kernel API (REST and WebSocket, as Jupyter Kernel\n"
        "Gateway serves it) on one port, each kernel a sandboxed sandpit kernel. Point\n"
        "a front end at it with `jupyter server --gateway-url http://ADDR:PORT\n"
        "--GatewayClient.auth_token T`, or use it from @jupyterlab/services. MCP\n"
        "clients (Streamable HTTP) find the tools of `sandpit mcp` at /mcp.\n\n"
        "  --ip ADDR              the address to listen on (default 127.0.0.1); any\n"
        "                         other than loopback needs TLS or --allow-insecure\n"
        "  --port N               the port (default 8888; 0: any free one)\n"
        "  --token T              the token every request needs (as \"Authorization:\n"
        "                         token T\", \"Bearer T\" or ?token=T); without it,\n"
        "                         JUPYTER_TOKEN, else one is generated and printed\n"
        "  --token-file F         the token, read from the file F\n"
        "  --certfile F --keyfile F   serve HTTPS and WSS with this certificate\n"
        "  --allow-insecure       allow an address other than loopback without TLS\n"
        "  --allow-origin ORIGIN  the browser origin allowed (CORS and WebSocket), or *\n"
        "  --workspace DIR        the kernels' workspace (default: this folder)\n"
        "  --workspaces DIR       each KERNEL_USERNAME gets DIR/<user>, made 0700\n"
        "  --max-kernels N        at most N kernels at once (0: no limit)\n"
        "  --cull-idle-timeout S  end kernels idle for S seconds (0: never)\n"
        "  --cull-busy            ... busy ones too; --cull-connected: with clients too\n"
        "  --max-connections-per-address N   at most N connections from one address\n"
        "                         at once (default %d)\n"
        "  --ws-ping-interval S   ping a quiet WebSocket after S seconds, close it if "
        "it\n"
        "                         does not answer within 2S+10 (default %d)\n"
        "  --log-format F         text (default) or json, a JSON object a line\n"
        "  --e2b-secret-file F    the secret of the E2B SDK's URL, /e2b/<secret>/ (16\n"
        "                         to 256 letters, digits, '-', '.', '_', '~'); without\n"
        "                         it, one is made; the URL is in the log\n"
        "  --max-upload N         the largest file, in bytes, that E2B's POST /files\n"
        "                         takes and GET /files gives (default 100 MiB); it is\n"
        "                         held in memory while it passes\n\n"
        "kernel options (given to every kernel):\n",
        SERVE_MAX_PER_ADDRESS, SERVE_WS_PING_S);
    options_usage(f);
}

static int read_token_file(const char *path, char *out, size_t len, char *err,
                           size_t errlen)
{
    char dir[PATH_MAX];
    const char *slash = strrchr(path, '/');
    const char *base = slash ? slash + 1 : path;
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1,
             slash ? path : ".");
    if (slash == path)
        snprintf(dir, sizeof dir, "/");
    int fd = tfile_open_root(dir);
    char *text = NULL;
    size_t n = 0;
    int rc = fd < 0 ? fd : tfile_read(fd, base, 4096, &text, &n);
    if (fd >= 0)
        close(fd);
    if (rc)
        return errbuf_set(rc, err, errlen, "cannot read the token file %s: %s", path,
                          tfile_strerror(rc));
    while (n && (text[n - 1] == '\n' || text[n - 1] == '\r' || text[n - 1] == ' '))
        text[--n] = 0;
    rc = n < len ? 0 : -EINVAL;
    if (!rc)
        memcpy(out, text, n + 1);
    lws_explicit_bzero(text, n);
    free(text);
    return rc ? errbuf_set(rc, err, errlen, "the token file holds too long a token") : 0;
}

static bool loopback(const char *ip)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, ip, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, ip, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return strcmp(ip, "localhost") == 0;
}

static int number(const char *opt, const char *v, double lo, double hi, double *out,
                  char *err, size_t errlen)
{
    char *end = NULL;
    double d = v ? strtod(v, &end) : 0;
    if (!v || !*v || *end || !(d >= lo && d <= hi))
        return errbuf_set(-EINVAL, err, errlen, "%s needs a number from %g to %g", opt,
                          lo, hi);
    *out = d;
    return 0;
}

/* The server's own flags as given, before they are checked and applied. */
struct serve_args {
    const char *ip, *port, *token, *token_file, *certfile, *keyfile, *allow_origin,
        *workspaces, *max_kernels, *cull_idle, *log_format, *max_per_address, *ws_ping,
        *e2b_secret_file, *max_upload;
    bool allow_insecure, cull_busy, cull_connected;
};

#define OFF(field) offsetof(struct serve_args, field)
#define TEXT(flag, what, field)                                                          \
    {                                                                                    \
        .name = (flag), .kind = FLAG_TEXT, .needs = (what), .offset = OFF(field)         \
    }
#define SWITCH(flag, field)                                                              \
    {                                                                                    \
        .name = (flag), .kind = FLAG_SWITCH, .offset = OFF(field)                        \
    }

/* What is not here is a kernel option, parsed after (lifecycle.h). */
static const struct flag serve_flags[] = {
    {.name = "help", .letter = 'h', .kind = FLAG_HELP},
    TEXT("ip", "an address", ip),
    TEXT("port", "a number", port),
    TEXT("token", "a token", token),
    TEXT("token-file", "a file", token_file),
    TEXT("certfile", "a file", certfile),
    TEXT("keyfile", "a file", keyfile),
    TEXT("allow-origin", "an origin", allow_origin),
    TEXT("workspaces", "a folder", workspaces),
    TEXT("max-kernels", "a number", max_kernels),
    TEXT("cull-idle-timeout", "a number of seconds", cull_idle),
    TEXT("log-format", "text or json", log_format),
    TEXT("max-connections-per-address", "a number", max_per_address),
    TEXT("ws-ping-interval", "a number of seconds", ws_ping),
    TEXT("e2b-secret-file", "a file", e2b_secret_file),
    TEXT("max-upload", "a number of bytes", max_upload),
    SWITCH("allow-insecure", allow_insecure),
    SWITCH("cull-busy", cull_busy),
    SWITCH("cull-connected", cull_connected),
};

/* The numbers among a: each within its bounds, or -EINVAL. */
static int apply_numbers(struct serve *s, const struct serve_args *a, char *err,
                         size_t errlen)
{
    struct serve_config *c = &s->cfg;
    double d;
    int rc = 0;
    if (a->port && !(rc = number("--port", a->port, 0, 65535, &d, err, errlen)))
        c->port = (int)d;
    if (!rc && a->max_kernels &&
        !(rc = number("--max-kernels", a->max_kernels, 0, 100000, &d, err, errlen)))
        s->reg.max_kernels = (int)d;
    if (!rc && a->max_per_address &&
        !(rc = number("--max-connections-per-address", a->max_per_address, 1, 1000000, &d,
                      err, errlen)))
        c->max_per_address = (int)d;
    if (!rc && a->max_upload) {
        rc = number("--max-upload", a->max_upload, 1, 17179869184.0, &d, err, errlen);
        if (rc)
            errbuf_set(rc, err, errlen,
                       "--max-upload needs a number of bytes from 1 to "
                       "17179869184 (16 GiB)");
        else
            c->max_upload = (size_t)d;
    }
    if (!rc && a->ws_ping &&
        !(rc = number("--ws-ping-interval", a->ws_ping, 1, 3600, &d, err, errlen)))
        c->ws_ping_s = (int)d;
    if (!rc && a->cull_idle)
        rc = number("--cull-idle-timeout", a->cull_idle, 0, 1e9, &s->reg.cull_idle_s, err,
                    errlen);
    return rc;
}

/* The server's flags, checked, into s; 0 or -EINVAL. */
static int apply(struct serve *s, const struct serve_args *a, char *err, size_t errlen)
{
    struct serve_config *c = &s->cfg;
    int rc = apply_numbers(s, a, err, errlen);
    if (rc)
        return rc;
    if (a->token) {
        if (!auth_token_valid(a->token))
            return errbuf_set(-EINVAL, err, errlen,
                              "--token needs 1 to %d printable characters, no space",
                              AUTH_TOKEN_MAX);
        snprintf(c->token, sizeof c->token, "%s", a->token);
    }
    if (a->log_format && strcmp(a->log_format, "json") && strcmp(a->log_format, "text"))
        return errbuf_set(-EINVAL, err, errlen, "--log-format is text or json");
    c->log_json = a->log_format && strcmp(a->log_format, "json") == 0;
    if (a->workspaces && !(owned.workspaces = realpath(a->workspaces, NULL)))
        return errbuf_set(-EINVAL, err, errlen, "--workspaces: no such folder: %s",
                          a->workspaces);
    if (a->ip)
        c->ip = a->ip;
    c->certfile = a->certfile;
    c->keyfile = a->keyfile;
    c->allow_origin = a->allow_origin;
    c->allow_insecure = a->allow_insecure;
    s->reg.cull_busy = a->cull_busy;
    s->reg.cull_connected = a->cull_connected;
    return 0;
}

/* The E2B prefix's secret: from the file, or made (never the token: the
 * secret travels in URLs, which proxies and shells keep). */
static int e2b_secret(struct serve_config *c, const char *file, char *err, size_t errlen)
{
    int rc = file
                 ? read_token_file(file, c->e2b_secret, sizeof c->e2b_secret, err, errlen)
                 : auth_token_generate(c->e2b_secret, sizeof c->e2b_secret);
    if (rc)
        return file ? rc : errbuf_set(rc, err, errlen, "cannot make the E2B secret");
    if (!auth_secret_valid(c->e2b_secret))
        return errbuf_set(-EINVAL, err, errlen,
                          "the E2B secret must be %d to %d letters, digits, '-', '.', "
                          "'_' or '~'",
                          AUTH_SECRET_MIN, AUTH_TOKEN_MAX);
    return 0;
}

static int check(struct serve *s, struct options *kopts, const char *token_file,
                 bool *generated, char *err, size_t errlen)
{
    struct serve_config *c = &s->cfg;
    if (!c->certfile != !c->keyfile)
        return errbuf_set(-EINVAL, err, errlen, "--certfile and --keyfile go together");
    if (!loopback(c->ip) && !c->certfile && !c->allow_insecure)
        return errbuf_set(-EINVAL, err, errlen,
                          "listening on %s needs TLS (--certfile, --keyfile) or "
                          "--allow-insecure: the token would cross the network in clear",
                          c->ip);
    if (token_file && c->token[0])
        return errbuf_set(-EINVAL, err, errlen, "--token and --token-file: give one");
    int rc = token_file
                 ? read_token_file(token_file, c->token, sizeof c->token, err, errlen)
                 : 0;
    if (rc)
        return rc;
    const char *env = getenv("JUPYTER_TOKEN");
    if (!c->token[0] && env && auth_token_valid(env))
        snprintf(c->token, sizeof c->token, "%s", env);
    if (!c->token[0]) {
        if ((rc = auth_token_generate(c->token, sizeof c->token)))
            return errbuf_set(rc, err, errlen, "cannot make a token");
        *generated = true;
    }
    if (!auth_token_valid(c->token))
        return errbuf_set(-EINVAL, err, errlen,
                          "the token must be 1 to %d printable characters, no space",
                          AUTH_TOKEN_MAX);
    char cwd[PATH_MAX];
    const char *ws = kopts->workspace ? kopts->workspace : getcwd(cwd, sizeof cwd);
    if (!ws || !(owned.workspace = realpath(ws, NULL)))
        return errbuf_set(-EINVAL, err, errlen, "no such workspace: %s", ws ? ws : "?");
    s->reg.workspace = owned.workspace;
    s->reg.workspaces = owned.workspaces;
    return 0;
}

int serve_options_parse(struct serve *s, struct options *kopts, int argc, char **argv,
                        bool *generated, char *err, size_t errlen)
{
    struct serve_config *c = &s->cfg;
    c->ip = "127.0.0.1";
    c->port = 8888;
    c->max_body = SERVE_MAX_BODY;
    c->max_upload = E2B_FILES_MAX_UPLOAD;
    c->max_ws_message = SERVE_MAX_WS_MESSAGE;
    c->max_per_address = SERVE_MAX_PER_ADDRESS;
    c->ws_ping_s = SERVE_WS_PING_S;
    *generated = false;
    struct serve_args a = {0};
    const struct flags fl = FLAGS_OF("sandpit serve", serve_flags, true);
    int rc = flags_parse(&fl, &a, &argc, argv, err, errlen);
    if (rc == FLAGS_HELP) {
        serve_usage(stdout);
        return 1;
    }
    if (!rc)
        rc = apply(s, &a, err, errlen);
    if (!rc)
        rc = lifecycle_parse_kernel_options(kopts, "sandpit serve", argc, argv, err,
                                            errlen);
    if (!rc)
        rc = check(s, kopts, a.token_file, generated, err, errlen);
    if (!rc)
        rc = e2b_secret(c, a.e2b_secret_file, err, errlen);
    return rc;
}

void serve_options_release(struct serve *s)
{
    (void)s;
    free(owned.workspace);
    free(owned.workspaces);
    memset(&owned, 0, sizeof owned);
}
