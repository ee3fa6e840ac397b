/* Unit tests for a kernel started by Jupyter Enterprise Gateway: the sealed
 * payload (opened here with the private key, as the gateway opens it), the
 * gateway's options, the ports and connection file, the report over TCP, and
 * the communication port served by a loop on a clock the test moves. */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <netinet/in.h>
#include <openssl/evp.h>
#include <openssl/rsa.h>
#include <openssl/x509.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "kernel/cmd/launcher.h"
#include "kernel/supervisor/commport.h"
#include "kernel/supervisor/loop.h"
#include "protocol/seal.h"
#include "testing.h"

/* --- helpers ------------------------------------------------------------------- */

static char *b64(const unsigned char *data, size_t len)
{
    char *out = malloc((len + 2) / 3 * 4 + 1);
    EVP_EncodeBlock((unsigned char *)out, data, (int)len);
    return out;
}

static unsigned char *unb64(const char *text, size_t *len)
{
    size_t n = strlen(text);
    unsigned char *out = malloc(n / 4 * 3 + 1);
    int got = EVP_DecodeBlock(out, (const unsigned char *)text, (int)n);
    REQUIRE(got >= 0);
    *len = (size_t)got - (n && text[n - 1] == '=') - (n > 1 && text[n - 2] == '=');
    return out;
}

/* The public half of k as the gateway passes it: base64 of SubjectPublicKeyInfo. */
static char *public_text(EVP_PKEY *k)
{
    unsigned char *der = NULL;
    int n = i2d_PUBKEY(k, &der);
    REQUIRE(n > 0);
    char *t = b64(der, (size_t)n);
    OPENSSL_free(der);
    return t;
}

/* Opens a payload as the gateway's response manager does; returns the
 * connection info's JSON text (new) and the version it carried. */
static char *open_payload(EVP_PKEY *priv, const char *payload, json_int_t *version)
{
    size_t len;
    unsigned char *outer = unb64(payload, &len);
    json_error_t e;
    json_t *doc = json_loadb((const char *)outer, len, 0, &e);
    free(outer);
    REQUIRE(json_is_object(doc));
    REQUIRE(json_is_integer(json_object_get(doc, "version")));
    *version = json_integer_value(json_object_get(doc, "version"));
    size_t klen, clen;
    unsigned char *ekey = unb64(json_string_value(json_object_get(doc, "key")), &klen);
    unsigned char *einfo =
        unb64(json_string_value(json_object_get(doc, "conn_info")), &clen);
    json_decref(doc);

    EVP_PKEY_CTX *pc = EVP_PKEY_CTX_new(priv, NULL);
    unsigned char aes[512];
    size_t aes_len = sizeof aes;
    REQUIRE(EVP_PKEY_decrypt_init(pc) == 1);
    REQUIRE(EVP_PKEY_CTX_set_rsa_padding(pc, RSA_PKCS1_PADDING) == 1);
    REQUIRE(EVP_PKEY_decrypt(pc, aes, &aes_len, ekey, klen) == 1);
    EVP_PKEY_CTX_free(pc);
    CHECK_INT(aes_len, 16);
    CHECK_INT(clen % 16, 0);

    EVP_CIPHER_CTX *cc = EVP_CIPHER_CTX_new();
    unsigned char *plain = malloc(clen + 16);
    int n = 0, fin = 0;
    REQUIRE(EVP_DecryptInit_ex(cc, EVP_aes_128_ecb(), NULL, aes, NULL) == 1);
    REQUIRE(EVP_DecryptUpdate(cc, plain, &n, einfo, (int)clen) == 1);
    REQUIRE(EVP_DecryptFinal_ex(cc, plain + n, &fin) == 1); /* PKCS#7 padding checked */
    EVP_CIPHER_CTX_free(cc);
    plain[n + fin] = 0;
    free(ekey);
    free(einfo);
    return (char *)plain;
}

/* --- the seal ---------------------------------------------------------------- */

static void test_a_sealed_payload_opens_with_the_private_key(void)
{
    EVP_PKEY *priv = EVP_RSA_gen(1024);
    REQUIRE(priv != NULL);
    char *pub = public_text(priv), err[256] = "";
    struct seal_key *key = NULL;
    REQUIRE(seal_key_parse(pub, &key, err, sizeof err) == 0);
    const char *info = "{\"shell_port\": 5000, \"key\": \"secret\"}";
    char *payload = seal_payload(key, info, strlen(info), err, sizeof err);
    REQUIRE(payload != NULL);
    CHECK(strchr(payload, '\n') == NULL);
    json_int_t version = 0;
    char *opened = open_payload(priv, payload, &version);
    CHECK_INT(version, 1);
    CHECK_STR(opened, info);
    /* A fresh AES key each time: the same info seals differently. */
    char *again = seal_payload(key, info, strlen(info), err, sizeof err);
    REQUIRE(again != NULL);
    CHECK(strcmp(again, payload) != 0);
    /* A length that is a whole number of blocks still gets a block of padding. */
    const char *sixteen = "0123456789abcdef";
    char *p16 = seal_payload(key, sixteen, 16, err, sizeof err);
    char *o16 = open_payload(priv, p16, &version);
    CHECK_STR(o16, sixteen);
    free(p16);
    free(o16);
    free(again);
    free(opened);
    free(payload);
    free(pub);
    seal_key_free(key);
    EVP_PKEY_free(priv);
}

static void test_public_keys_in_other_shapes_are_read(void)
{
    EVP_PKEY *priv = EVP_RSA_gen(2048);
    REQUIRE(priv != NULL);
    char err[256] = "";
    struct seal_key *key = NULL;
    /* PKCS#1 RSAPublicKey. */
    unsigned char *der = NULL;
    int n = i2d_PublicKey(priv, &der);
    REQUIRE(n > 0);
    char *pkcs1 = b64(der, (size_t)n);
    CHECK(seal_key_parse(pkcs1, &key, err, sizeof err) == 0);
    seal_key_free(key);
    /* A PEM body with its line breaks. */
    char *spki = public_text(priv), wrapped[2048];
    size_t w = 0;
    for (size_t i = 0; spki[i]; i++) {
        wrapped[w++] = spki[i];
        if (i % 64 == 63)
            wrapped[w++] = '\n';
    }
    wrapped[w] = 0;
    CHECK(seal_key_parse(wrapped, &key, err, sizeof err) == 0);
    seal_key_free(key);
    OPENSSL_free(der);
    free(pkcs1);
    free(spki);
    EVP_PKEY_free(priv);
}

static void test_a_malformed_public_key_is_refused_clearly(void)
{
    char err[256];
    struct seal_key *key = NULL;
    CHECK_INT(seal_key_parse("not base64 at all!", &key, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "not base64") != NULL);
    CHECK(key == NULL);
    CHECK_INT(seal_key_parse("", &key, err, sizeof err), -EINVAL);
    CHECK_INT(seal_key_parse("aGVsbG8gd29ybGQh", &key, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "not an RSA public key in DER") != NULL);

    /* A key with bytes after it. */
    EVP_PKEY *priv = EVP_RSA_gen(1024);
    unsigned char *der = NULL;
    int n = i2d_PUBKEY(priv, &der);
    unsigned char *longer = malloc((size_t)n + 3);
    memcpy(longer, der, (size_t)n);
    memcpy(longer + n, "xyz", 3);
    char *text = b64(longer, (size_t)n + 3);
    CHECK_INT(seal_key_parse(text, &key, err, sizeof err), -EINVAL);
    free(text);
    free(longer);
    OPENSSL_free(der);
    EVP_PKEY_free(priv);

    /* Not RSA. */
    EVP_PKEY *ec = EVP_EC_gen("P-256");
    REQUIRE(ec != NULL);
    text = public_text(ec);
    CHECK_INT(seal_key_parse(text, &key, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "not an RSA key") != NULL);
    free(text);
    EVP_PKEY_free(ec);

    /* Too small. */
    EVP_PKEY *weak = EVP_RSA_gen(512);
    REQUIRE(weak != NULL);
    text = public_text(weak);
    CHECK_INT(seal_key_parse(text, &key, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "too weak") != NULL);
    free(text);
    EVP_PKEY_free(weak);
}

/* --- the options ----------------------------------------------------------------- */

static void test_the_gateway_options_are_taken_out_of_argv(void)
{
    char *argv[] = {"kernel",
                    "--timeout",
                    "3",
                    "--RemoteProcessProxy.kernel-id",
                    "k-1",
                    "--RemoteProcessProxy.response-address=10.0.0.1:8877",
                    "--public-key",
                    "KEY",
                    "--RemoteProcessProxy.port-range",
                    "40000..41000",
                    "--RemoteProcessProxy.spark-context-initialization-mode",
                    "none",
                    "--memory",
                    "512",
                    NULL};
    int argc = 14;
    struct launcher g;
    launcher_init(&g);
    char err[256] = "";
    REQUIRE(launcher_take_options(&g, &argc, argv, err, sizeof err) == 0);
    CHECK(g.enabled);
    CHECK_INT(argc, 5);
    CHECK_STR(argv[1], "--timeout");
    CHECK_STR(argv[2], "3");
    CHECK_STR(argv[3], "--memory");
    CHECK_STR(argv[4], "512");
    CHECK(argv[5] == NULL);
    CHECK_STR(g.kernel_id, "k-1");
    CHECK_STR(g.response_address, "10.0.0.1:8877");
    CHECK_STR(g.public_key, "KEY");
    CHECK_STR(g.port_range, "40000..41000");
    launcher_release(&g);

    /* Without them: nothing changes. */
    char *plain[] = {"kernel", "-f", "c.json", NULL};
    argc = 3;
    REQUIRE(launcher_take_options(&g, &argc, plain, err, sizeof err) == 0);
    CHECK(!g.enabled);
    CHECK_INT(argc, 3);
    launcher_release(&g);
}

static void test_spark_modes_other_than_none_are_refused(void)
{
    char *argv[] = {"kernel", "--RemoteProcessProxy.spark-context-initialization-mode",
                    "lazy", NULL};
    int argc = 3;
    struct launcher g;
    launcher_init(&g);
    char err[256] = "";
    CHECK_INT(launcher_take_options(&g, &argc, argv, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "takes only none") != NULL);
    CHECK(strstr(err, "\"lazy\"") != NULL);
    launcher_release(&g);

    char *no_value[] = {"kernel", "--RemoteProcessProxy.kernel-id", NULL};
    argc = 2;
    CHECK_INT(launcher_take_options(&g, &argc, no_value, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "needs a value") != NULL);
    launcher_release(&g);
}

static void test_port_ranges(void)
{
    int lo = -1, hi = -1;
    char err[256];
    CHECK_INT(launcher_parse_port_range("0..0", &lo, &hi, err, sizeof err), 0);
    CHECK(lo == 0 && hi == 0);
    CHECK_INT(launcher_parse_port_range("40000..40005", &lo, &hi, err, sizeof err), 0);
    CHECK(lo == 40000 && hi == 40005);
    /* As the gateway reads it, a range of size 0 is no range. */
    CHECK_INT(launcher_parse_port_range("7000..7000", &lo, &hi, err, sizeof err), 0);
    CHECK(lo == 0 && hi == 0);
    CHECK_INT(launcher_parse_port_range("40000..40004", &lo, &hi, err, sizeof err),
              -EINVAL);
    CHECK(strstr(err, "fewer than the 6 ports") != NULL);
    static const char *const bad[] = {"",         "40000", "41000..40000", "a..b",
                                      "1..70000", "-1..5", "10..20x"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_INT(launcher_parse_port_range(bad[i], &lo, &hi, err, sizeof err), -EINVAL);
}

static void test_check_names_what_is_missing_or_wrong(void)
{
    EVP_PKEY *priv = EVP_RSA_gen(1024);
    char *pub = public_text(priv), err[256] = "";
    struct launcher g;
    launcher_init(&g);
    g.enabled = true;
    g.kernel_id = strdup("k-1");
    g.public_key = strdup(pub);
    CHECK_INT(launcher_check(&g, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "--RemoteProcessProxy.response-address") != NULL);
    g.response_address = strdup("nowhere");
    CHECK_INT(launcher_check(&g, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "is not HOST:PORT") != NULL);
    free(g.response_address);
    g.response_address = strdup("[::1]:9000");
    CHECK_INT(launcher_check(&g, err, sizeof err), 0);
    free(g.kernel_id);
    g.kernel_id = strdup("../../etc/x");
    CHECK_INT(launcher_check(&g, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "kernel id") != NULL);
    free(g.kernel_id);
    g.kernel_id = strdup("k-1");
    free(g.public_key);
    g.public_key = strdup("bm90IGEga2V5");
    CHECK_INT(launcher_check(&g, err, sizeof err), -EINVAL);
    CHECK(strstr(err, "public key") != NULL);
    launcher_release(&g);
    free(pub);
    EVP_PKEY_free(priv);
}

/* --- the ports, the file and the report ------------------------------------------ */

static char tmp[] = "/tmp/sandpit-test-gateway-XXXXXX";

/* A TMPDIR of the test's own, where the connection file's folder is made. */
static void use_tmpdir(void)
{
    REQUIRE(mkdtemp(tmp) != NULL);
    testing_remove_after(tmp);
    setenv("TMPDIR", tmp, 1);
}

/* A gateway ready to prepare: a fresh key pair (the private half in *priv). */
static void make_gateway(struct launcher *g, EVP_PKEY **priv, const char *address,
                         const char *range)
{
    *priv = EVP_RSA_gen(1024);
    REQUIRE(*priv != NULL);
    launcher_init(g);
    g->enabled = true;
    g->kernel_id = strdup("0b5e6f3c-kernel");
    g->response_address = strdup(address);
    g->public_key = public_text(*priv);
    g->port_range = range ? strdup(range) : NULL;
    char err[256] = "";
    if (launcher_check(g, err, sizeof err))
        fprintf(stderr, "    %s\n", err);
    REQUIRE(g->key != NULL);
}

static void test_ports_are_picked_in_the_range_and_the_file_is_private(void)
{
    use_tmpdir();
    /* A range of 40 ports somewhere high, chosen by where a free port is now. */
    int probe = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET};
    socklen_t alen = sizeof a;
    REQUIRE(bind(probe, (struct sockaddr *)&a, sizeof a) == 0);
    REQUIRE(getsockname(probe, (struct sockaddr *)&a, &alen) == 0);
    close(probe);
    int low = ntohs(a.sin_port) > 60000 ? 50000 : ntohs(a.sin_port);
    char range[32];
    snprintf(range, sizeof range, "%d..%d", low, low + 39);

    struct launcher g;
    EVP_PKEY *priv;
    make_gateway(&g, &priv, "127.0.0.1:9", range);
    char err[256] = "";
    int rc = launcher_prepare(&g, err, sizeof err);
    if (rc)
        fprintf(stderr, "    %s\n", err);
    REQUIRE(rc == 0);
    int all[6];
    memcpy(all, g.ports, sizeof g.ports);
    all[5] = g.comm_port;
    for (int i = 0; i < 6; i++) {
        CHECK(all[i] >= low && all[i] <= low + 39);
        for (int j = 0; j < i; j++)
            CHECK(all[i] != all[j]);
    }
    /* The communication port listens already. */
    int c = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in to = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)g.comm_port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    CHECK(connect(c, (struct sockaddr *)&to, sizeof to) == 0);
    close(c);

    /* TMPDIR/sandpit-user-<uid>/sandpit-<pid>-gateway-XXXXXXXX/kernel-<id>.json: a
     * folder of its own in the user's folder of private folders, named for the pid
     * so that a later kernel reaps it if this one is killed. */
    struct stat st;
    REQUIRE(stat(g.connection_file, &st) == 0);
    CHECK_INT(st.st_mode & 0777, 0600);
    char prefix[PATH_MAX], expected[PATH_MAX];
    snprintf(prefix, sizeof prefix, "%s/sandpit-user-%u/sandpit-%d-gateway-", tmp,
             (unsigned)getuid(), (int)getpid());
    CHECK(strncmp(g.private_dir, prefix, strlen(prefix)) == 0);
    CHECK_INT(strlen(g.private_dir), strlen(prefix) + 8);
    snprintf(expected, sizeof expected, "%s/kernel-0b5e6f3c-kernel.json", g.private_dir);
    CHECK_STR(g.connection_file, expected);
    struct stat dst;
    REQUIRE(stat(g.private_dir, &dst) == 0);
    CHECK_INT(dst.st_mode & 0777, 0700);
    json_error_t je;
    json_t *file = json_load_file(g.connection_file, 0, &je);
    CHECK_STR(json_string_value(json_object_get(file, "ip")), "0.0.0.0");
    CHECK_STR(json_string_value(json_object_get(file, "signature_scheme")),
              "hmac-sha256");
    CHECK_INT(json_integer_value(json_object_get(file, "shell_port")), g.ports[0]);
    CHECK(json_string_length(json_object_get(file, "key")) >= 32);
    json_decref(file);

    char *path = strdup(g.connection_file), *dir = strdup(g.private_dir);
    launcher_release(&g);
    CHECK(access(path, F_OK) != 0); /* removed with the gateway, */
    CHECK(access(dir, F_OK) != 0);  /* and so is its folder */
    free(path);
    free(dir);
    EVP_PKEY_free(priv);
}

static int listen_local(int *port)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    REQUIRE(bind(s, (struct sockaddr *)&a, sizeof a) == 0);
    REQUIRE(listen(s, 64) == 0);
    REQUIRE(getsockname(s, (struct sockaddr *)&a, &alen) == 0);
    *port = ntohs(a.sin_port);
    return s;
}

static void test_the_report_reaches_the_response_address(void)
{
    use_tmpdir();
    int port, srv = listen_local(&port);
    char address[32];
    snprintf(address, sizeof address, "127.0.0.1:%d", port);
    struct launcher g;
    EVP_PKEY *priv;
    make_gateway(&g, &priv, address, NULL);
    char err[256] = "";
    REQUIRE(launcher_prepare(&g, err, sizeof err) == 0);
    /* The payload fits in the socket's buffers: the report completes before the
     * test accepts it. */
    int rc = launcher_report(&g, err, sizeof err);
    if (rc)
        fprintf(stderr, "    %s\n", err);
    REQUIRE(rc == 0);
    int conn = accept(srv, NULL, NULL);
    REQUIRE(conn >= 0);
    char buf[8192];
    size_t len = 0;
    ssize_t n;
    while ((n = read(conn, buf + len, sizeof buf - 1 - len)) > 0)
        len += (size_t)n;
    CHECK(n == 0); /* the end of the stream is the end of the payload */
    buf[len] = 0;
    json_int_t version;
    char *text = open_payload(priv, buf, &version);
    CHECK_INT(version, 1);
    json_error_t je;
    json_t *info = json_loads(text, 0, &je),
           *file = json_load_file(g.connection_file, 0, &je);
    REQUIRE(json_is_object(info));
    CHECK_INT(json_integer_value(json_object_get(info, "pid")), getpid());
    CHECK_INT(json_integer_value(json_object_get(info, "pgid")), getpgid(0));
    CHECK_INT(json_integer_value(json_object_get(info, "comm_port")), g.comm_port);
    CHECK_STR(json_string_value(json_object_get(info, "kernel_id")), "0b5e6f3c-kernel");
    CHECK_STR(json_string_value(json_object_get(info, "key")),
              json_string_value(json_object_get(file, "key")));
    CHECK_INT(json_integer_value(json_object_get(info, "hb_port")),
              json_integer_value(json_object_get(file, "hb_port")));
    json_decref(info);
    json_decref(file);
    free(text);
    close(conn);
    close(srv);
    launcher_release(&g);
    EVP_PKEY_free(priv);
}

static void test_an_unreachable_response_address_is_an_error(void)
{
    use_tmpdir();
    int port, srv = listen_local(&port);
    close(srv); /* nobody listens there now */
    char address[32];
    snprintf(address, sizeof address, "127.0.0.1:%d", port);
    struct launcher g;
    EVP_PKEY *priv;
    make_gateway(&g, &priv, address, NULL);
    char err[256] = "";
    REQUIRE(launcher_prepare(&g, err, sizeof err) == 0);
    CHECK_INT(launcher_report(&g, err, sizeof err), -ECONNREFUSED);
    CHECK(strstr(err, address) != NULL);
    CHECK(strstr(err, "Connection refused") != NULL);
    launcher_release(&g);
    EVP_PKEY_free(priv);
}

/* --- the communication port ----------------------------------------------------- */

static double now = 1000;

static double clock_fn(void)
{
    return now;
}

struct seen {
    int interrupts, stops;
    char why[128];
};

static void on_interrupt(void *data)
{
    ((struct seen *)data)->interrupts++;
}

static void on_stop(void *data, const char *why)
{
    struct seen *s = data;
    s->stops++;
    snprintf(s->why, sizeof s->why, "%s", why);
}

struct port_fixture {
    struct loop *l;
    struct commport *c;
    struct seen seen;
    int port;
};

static void open_port(struct port_fixture *f)
{
    memset(f, 0, sizeof *f);
    f->l = loop_new(clock_fn);
    REQUIRE(f->l != NULL);
    int fd = listen_local(&f->port);
    const struct commport_events ev = {&f->seen, on_interrupt, on_stop};
    f->c = commport_new(f->l, &fd, &ev);
    REQUIRE(f->c != NULL);
    CHECK_INT(fd, -1);
}

static void close_port(struct port_fixture *f)
{
    commport_free(f->c);
    loop_free(f->l);
}

static int dial(int port)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in to = {.sin_family = AF_INET,
                             .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(s, (struct sockaddr *)&to, sizeof to) != 0) {
        int e = errno;
        close(s);
        return -e;
    }
    return s;
}

/* What the gateway does: connect, send, close. */
static void send_request(int port, const char *text)
{
    int s = dial(port);
    REQUIRE(s >= 0);
    REQUIRE(write(s, text, strlen(text)) == (ssize_t)strlen(text));
    close(s);
}

/* Turns the loop until *counter reaches want (at most 100 turns of 20 ms). */
static void turn_until(struct port_fixture *f, const int *counter, int want)
{
    for (int i = 0; i < 100 && *counter < want; i++)
        REQUIRE(loop_turn(f->l, 20) == 0);
}

/* True when the server has closed s (a read sees the end of the stream). */
static bool closed_by_peer(struct port_fixture *f, int s)
{
    for (int i = 0; i < 100; i++) {
        REQUIRE(loop_turn(f->l, 10) == 0);
        struct pollfd p = {.fd = s, .events = POLLIN};
        char c;
        if (poll(&p, 1, 0) == 1)
            return read(s, &c, 1) <= 0;
    }
    return false;
}

static void test_requests_on_the_port_do_what_the_launcher_does(void)
{
    struct port_fixture f;
    open_port(&f);
    send_request(f.port, "{\"signum\": 0}");
    send_request(f.port, "{\"signum\": 2}");
    turn_until(&f, &f.seen.interrupts, 1);
    CHECK_INT(f.seen.interrupts, 1);
    CHECK_INT(f.seen.stops, 0);                  /* the poll did nothing */
    send_request(f.port, "{\"signum\": \"2\"}"); /* int() of a string, as the launcher */
    turn_until(&f, &f.seen.interrupts, 2);
    CHECK_INT(f.seen.interrupts, 2);
    send_request(f.port, "{\"signum\": 10}"); /* SIGUSR1: not acted on */
    send_request(f.port, "{\"signum\": 15}");
    turn_until(&f, &f.seen.stops, 1);
    CHECK_INT(f.seen.stops, 1);
    CHECK(strstr(f.seen.why, "signal 15") != NULL);
    CHECK_INT(f.seen.interrupts, 2);
    CHECK(commport_listening(f.c)); /* a signal stops the kernel, not the port */
    close_port(&f);
}

static void test_a_request_is_acted_on_before_the_peer_closes(void)
{
    struct port_fixture f;
    open_port(&f);
    int s = dial(f.port);
    REQUIRE(s >= 0);
    REQUIRE(write(s, "{\"sig", 5) == 5);
    for (int i = 0; i < 5; i++)
        REQUIRE(loop_turn(f.l, 10) == 0);
    CHECK_INT(f.seen.interrupts, 0); /* half a request */
    REQUIRE(write(s, "num\": 2}", 8) == 8);
    turn_until(&f, &f.seen.interrupts, 1);
    CHECK_INT(f.seen.interrupts, 1);
    CHECK(closed_by_peer(&f, s));
    close(s);
    close_port(&f);
}

static void test_shutdown_stops_listening(void)
{
    struct port_fixture f;
    open_port(&f);
    send_request(f.port, "{\"shutdown\": 0}");
    send_request(f.port, "{\"shutdown\": 1}");
    turn_until(&f, &f.seen.stops, 1);
    CHECK_INT(f.seen.stops, 1);
    CHECK(strstr(f.seen.why, "shut down") != NULL);
    CHECK(!commport_listening(f.c));
    /* The next poll is refused: that is how the gateway sees the kernel is gone. */
    CHECK_INT(dial(f.port), -ECONNREFUSED);
    close_port(&f);
}

static void test_garbage_is_dropped_and_the_port_serves_on(void)
{
    struct port_fixture f;
    open_port(&f);
    static const char *const junk[] = {
        "hello",
        "[1, 2]",
        "{\"signum\": \"two\"}",
        "{\"other\": 1}",
        "{\"signum\": 99999}",
        "{\"signum\": -3}",
        "\xff\xfe{",
    };
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++)
        send_request(f.port, junk[i]);
    /* More than a request may hold. */
    int s = dial(f.port);
    REQUIRE(s >= 0);
    char big[COMMPORT_MAX_REQUEST + 100];
    memset(big, ' ', sizeof big);
    big[0] = '{';
    REQUIRE(write(s, big, sizeof big) == (ssize_t)sizeof big);
    CHECK(closed_by_peer(&f, s));
    close(s);
    send_request(f.port, "{\"signum\": 2}");
    turn_until(&f, &f.seen.interrupts, 1);
    CHECK_INT(f.seen.interrupts, 1);
    CHECK_INT(f.seen.stops, 0);
    CHECK(commport_listening(f.c));
    close_port(&f);
}

static void test_idle_peers_time_out_and_are_bounded(void)
{
    struct port_fixture f;
    open_port(&f);
    int idle[COMMPORT_MAX_PEERS];
    for (int i = 0; i < COMMPORT_MAX_PEERS; i++) {
        idle[i] = dial(f.port);
        REQUIRE(idle[i] >= 0);
    }
    for (int i = 0; i < 5; i++)
        REQUIRE(loop_turn(f.l, 10) == 0);
    /* One more than the slots: closed at once. */
    int extra = dial(f.port);
    REQUIRE(extra >= 0);
    CHECK(closed_by_peer(&f, extra));
    close(extra);
    /* Past the deadline, the idle ones go. */
    now += COMMPORT_PEER_TIMEOUT_S + 1;
    for (int i = 0; i < COMMPORT_MAX_PEERS; i++) {
        CHECK(closed_by_peer(&f, idle[i]));
        close(idle[i]);
    }
    send_request(f.port, "{\"signum\": 2}");
    turn_until(&f, &f.seen.interrupts, 1);
    CHECK_INT(f.seen.interrupts, 1);
    close_port(&f);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_a_sealed_payload_opens_with_the_private_key),
    TESTING_CASE(test_public_keys_in_other_shapes_are_read),
    TESTING_CASE(test_a_malformed_public_key_is_refused_clearly),
    TESTING_CASE(test_the_gateway_options_are_taken_out_of_argv),
    TESTING_CASE(test_spark_modes_other_than_none_are_refused),
    TESTING_CASE(test_port_ranges),
    TESTING_CASE(test_check_names_what_is_missing_or_wrong),
    TESTING_CASE(test_ports_are_picked_in_the_range_and_the_file_is_private),
    TESTING_CASE(test_the_report_reaches_the_response_address),
    TESTING_CASE(test_an_unreachable_response_address_is_an_error),
    TESTING_CASE(test_requests_on_the_port_do_what_the_launcher_does),
    TESTING_CASE(test_a_request_is_acted_on_before_the_peer_closes),
    TESTING_CASE(test_shutdown_stops_listening),
    TESTING_CASE(test_garbage_is_dropped_and_the_port_serves_on),
    TESTING_CASE(test_idle_peers_time_out_and_are_bounded),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
