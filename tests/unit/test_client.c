/* Unit tests for kernel/client/: the parts of the client commands that stand
 * alone. base64 and the cutting of long text; the outcome of a cell folded
 * from iopub messages (including ones of the wrong shape); JSON-RPC line
 * framing against input that arrives in pieces, is not JSON, or never ends;
 * the confinement of workspace_read and workspace_list; where a workspace's
 * kernel files live; fresh connection files. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kernel/util/base64.h"
#include "kernel/client/connfile.h"
#include "kernel/client/instance.h"
#include "kernel/client/jsonrpc.h"
#include "kernel/client/outcome.h"
#include "kernel/client/workspace.h"
#include "protocol/connection.h"
#include "protocol/msg.h"
#include "testing.h"

/* A folder for this test, which the runner removes after it. */
static char *temp_dir(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/sandpit-client-XXXXXX");
    REQUIRE(mkdtemp(dir) != NULL);
    testing_remove_after(dir);
    return dir;
}

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    REQUIRE(f != NULL);
    fputs(text, f);
    fclose(f);
}

/* --- base64 ---------------------------------------------------------------------- */

static void test_base64_vectors(void)
{
    static const char *const vectors[][2] = {
        {"", ""},
        {"f", "Zg=="},
        {"fo", "Zm8="},
        {"foo", "Zm9v"},
        {"foob", "Zm9vYg=="},
        {"fooba", "Zm9vYmE="},
        {"foobar", "Zm9vYmFy"},
    };
    for (size_t i = 0; i < sizeof vectors / sizeof vectors[0]; i++) {
        char *enc =
            base64_encode((const unsigned char *)vectors[i][0], strlen(vectors[i][0]));
        CHECK_STR(enc, vectors[i][1]);
        free(enc);
        unsigned char *dec;
        size_t n;
        REQUIRE(base64_decode(vectors[i][1], strlen(vectors[i][1]), &dec, &n) == 0);
        CHECK_INT(n, strlen(vectors[i][0]));
        CHECK(memcmp(dec, vectors[i][0], n) == 0);
        free(dec);
    }
    /* Every byte value survives a round trip. */
    unsigned char all[256];
    for (int i = 0; i < 256; i++)
        all[i] = (unsigned char)i;
    char *enc = base64_encode(all, sizeof all);
    unsigned char *dec;
    size_t n;
    REQUIRE(base64_decode(enc, strlen(enc), &dec, &n) == 0);
    CHECK_INT(n, 256);
    CHECK(memcmp(dec, all, 256) == 0);
    free(enc);
    free(dec);
}

static void test_base64_rejects_what_is_not_base64(void)
{
    unsigned char *dec;
    size_t n;
    /* Line breaks, as some kernels wrap it, are skipped. */
    REQUIRE(base64_decode("Zm9v\nYmFy\r\n", 11, &dec, &n) == 0);
    CHECK_INT(n, 6);
    CHECK(memcmp(dec, "foobar", 6) == 0);
    free(dec);
    static const char *const bad[] = {"Zm9v!mFy", "Zg=a", "Z",
                                      "Zm9vY===", "=Zm9", "Zm9\x80"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dec = (unsigned char *)"untouched";
        CHECK_INT(base64_decode(bad[i], strlen(bad[i]), &dec, &n), -EINVAL);
        CHECK(dec == NULL);
    }
}

/* --- cutting and colour codes ------------------------------------------------------- */

static void test_cut_keeps_both_ends_and_says_how_much(void)
{
    char *s = outcome_cut("short", 10);
    CHECK_STR(s, "short");
    free(s);
    s = outcome_cut("no limit at all", 0);
    CHECK_STR(s, "no limit at all");
    free(s);
    char text[1001];
    for (int i = 0; i < 1000; i++)
        text[i] = (char)('a' + i % 26);
    text[1000] = 0;
    s = outcome_cut(text, 100);
    CHECK(strncmp(s, text, 50) == 0);
    CHECK(strstr(s, "[... 900 characters cut ...]") != NULL);
    CHECK(strcmp(s + strlen(s) - 50, text + 950) == 0);
    free(s);
    /* Characters, not bytes: "é" is two bytes and is never split. */
    char accents[2 * 300 + 1] = "";
    for (int i = 0; i < 300; i++)
        strcat(accents, "\xc3\xa9");
    s = outcome_cut(accents, 21);
    CHECK(strstr(s, "[... 279 characters cut ...]") != NULL);
    CHECK(strncmp(s, accents, 22) == 0 && s[22] == '\n'); /* 11 whole characters */
    CHECK(strcmp(s + strlen(s) - 20, accents + 580) == 0);
    free(s);
}

static void test_strip_ansi(void)
{
    char *s = outcome_strip_ansi("\x1b[0;31mZeroDivisionError\x1b[0m: division by zero");
    CHECK_STR(s, "ZeroDivisionError: division by zero");
    free(s);
    s = outcome_strip_ansi("a\x1b]8;;http://x\x07link\x1b]8;;\x1b\\b\x1b(Bc\x1b[");
    CHECK_STR(s, "alinkbc");
    free(s);
}

/* --- the outcome of a cell ------------------------------------------------------------
 */

static struct msg *event(struct msg_session *s, const char *type, const char *content)
{
    json_t *c = json_loads(content, 0, NULL);
    REQUIRE(c != NULL);
    struct msg *m = msg_make(s, type, NULL, &c, false);
    REQUIRE(m != NULL);
    return m;
}

static int saved;
static int fake_sink(void *arg, int count, int index, const char *mime, const char *b64,
                     char *path, size_t len)
{
    (void)arg;
    (void)b64;
    saved++;
    snprintf(path, len, "/out/cell-%d-%d.%s", count, index,
             strcmp(mime, "image/png") == 0 ? "png" : "other");
    return 0;
}

static void test_outcome_folds_a_cell(void)
{
    struct msg_session s;
    REQUIRE(msg_session_init(&s, "test") == 0);
    struct outcome o;
    REQUIRE(outcome_init(&o) == 0);
    o.save_image = fake_sink;
    const char *events[][2] = {
        {"status", "{\"execution_state\": \"busy\"}"},
        {"execute_input", "{\"code\": \"x\", \"execution_count\": 7}"},
        {"stream", "{\"name\": \"stdout\", \"text\": \"hel\"}"},
        {"stream", "{\"name\": \"stdout\", \"text\": \"lo\\n\"}"},
        {"stream", "{\"name\": \"stderr\", \"text\": \"careful\\n\"}"},
        {"stream", "{\"name\": \"stdout\", \"text\": 42}"}, /* wrong type */
        {"display_data", "{\"data\": \"not an object\"}"},  /* wrong type */
        {"display_data", "{\"data\": {\"text/plain\": \"<Figure>\", "
                         "\"image/png\": \"iVBORw0KGgo=\"}, \"metadata\": {}}"},
        {"execute_result",
         "{\"execution_count\": 7, \"data\": {\"text/plain\": \"42\"}}"},
        {"error", "{\"ename\": \"ValueError\", \"evalue\": \"bad\", \"traceback\": "
                  "[\"\\u001b[0;31mValueError\\u001b[0m: bad\", 5]}"},
        {"status", "{\"execution_state\": \"idle\"}"},
    };
    for (size_t i = 0; i < sizeof events / sizeof events[0]; i++) {
        struct msg *m = event(&s, events[i][0], events[i][1]);
        outcome_add(&o, m);
        msg_free(m);
    }
    struct msg *reply =
        event(&s, "execute_reply", "{\"status\": \"error\", \"execution_count\": 7}");
    const char *status;
    outcome_finish(&o, reply, &status);
    msg_free(reply);
    CHECK_STR(status, "error");
    CHECK_INT(saved, 1);
    json_t *j = outcome_json(&o, status, 0);
    REQUIRE(j != NULL);
    CHECK_STR(json_string_value(json_object_get(j, "stdout")), "hello\n");
    CHECK_STR(json_string_value(json_object_get(j, "stderr")), "careful\n");
    CHECK_STR(json_string_value(json_object_get(j, "result")), "42");
    CHECK_INT(json_integer_value(json_object_get(j, "execution_count")), 7);
    json_t *files = json_object_get(j, "files");
    CHECK_INT(json_array_size(files), 1);
    CHECK_STR(json_string_value(json_array_get(files, 0)), "/out/cell-7-1.png");
    json_t *err = json_object_get(j, "error");
    CHECK_STR(json_string_value(json_object_get(err, "ename")), "ValueError");
    json_t *tb = json_object_get(err, "traceback");
    CHECK_INT(json_array_size(tb), 1);
    CHECK_STR(json_string_value(json_array_get(tb, 0)), "ValueError: bad");
    /* Outputs in order: stdout merged, stderr, the display, result, error. */
    json_t *outs = json_object_get(j, "outputs");
    const char *want[] = {"stream", "stream", "display_data", "execute_result", "error"};
    REQUIRE(json_array_size(outs) == 5);
    for (size_t i = 0; i < 5; i++)
        CHECK_STR(json_string_value(json_object_get(json_array_get(outs, i), "type")),
                  want[i]);
    CHECK_STR(json_string_value(json_object_get(json_array_get(outs, 0), "text")),
              "hello\n");
    json_decref(j);
    outcome_release(&o);
}

static void test_outcome_keeps_images_without_a_sink(void)
{
    struct msg_session s;
    REQUIRE(msg_session_init(&s, "test") == 0);
    struct outcome o;
    REQUIRE(outcome_init(&o) == 0);
    struct msg *m =
        event(&s, "display_data",
              "{\"data\": {\"image/png\": \"AAAA\", \"image/svg+xml\": \"<svg/>\"}}");
    outcome_add(&o, m);
    msg_free(m);
    CHECK_INT(json_array_size(o.images), 2);
    json_t *entry = json_array_get(o.outputs, 0);
    CHECK_INT(json_array_size(json_object_get(entry, "images")), 2);
    CHECK_STR(json_string_value(json_object_get(json_array_get(o.images, 1), "mime")),
              "image/svg+xml");
    /* An error only in the reply (the kernel's own refusal) is still reported. */
    struct msg *reply = event(&s, "execute_reply",
                              "{\"status\": \"error\", \"ename\": \"Refused\", "
                              "\"evalue\": \"no\", \"traceback\": []}");
    const char *status;
    outcome_finish(&o, reply, &status);
    msg_free(reply);
    CHECK_STR(json_string_value(json_object_get(o.error, "ename")), "Refused");
    char *text = outcome_traceback_text(o.error);
    CHECK_STR(text, "Refused: no\n");
    free(text);
    outcome_release(&o);
}

/* --- JSON-RPC framing ----------------------------------------------------------------
 */

static void test_jsonrpc_lines_in_pieces(void)
{
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    struct jsonrpc j;
    REQUIRE(jsonrpc_init(&j, sv[0], sv[0]) == 0);
    const char *chunk = "{\"id\": 1}\n\n  \n{\"id\": 2}\nnot json\n{\"id\":";
    REQUIRE(write(sv[1], chunk, strlen(chunk)) == (ssize_t)strlen(chunk));
    REQUIRE(jsonrpc_fill(&j) == 0);
    json_t *v;
    CHECK_INT(jsonrpc_next(&j, &v), 1);
    CHECK_INT(json_integer_value(json_object_get(v, "id")), 1);
    json_decref(v);
    CHECK_INT(jsonrpc_next(&j, &v), 1);
    CHECK_INT(json_integer_value(json_object_get(v, "id")), 2);
    json_decref(v);
    CHECK_INT(jsonrpc_next(&j, &v), JSONRPC_PARSE_ERROR);
    CHECK_INT(jsonrpc_next(&j, &v), 0); /* half a message so far */
    REQUIRE(write(sv[1], " 3}\n", 4) == 4);
    REQUIRE(jsonrpc_fill(&j) == 0);
    CHECK_INT(jsonrpc_next(&j, &v), 1);
    CHECK_INT(json_integer_value(json_object_get(v, "id")), 3);
    json_decref(v);
    /* What we send is one line each. */
    json_t *r = json_pack("{s:s}", "text", "two\nlines");
    json_t *id = json_integer(9);
    REQUIRE(jsonrpc_result(&j, id, &r) == 0);
    json_decref(id);
    char buf[256];
    ssize_t n = read(sv[1], buf, sizeof buf - 1);
    REQUIRE(n > 0);
    buf[n] = 0;
    CHECK_STR(buf,
              "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{\"text\":\"two\\nlines\"}}\n");
    close(sv[1]);
    REQUIRE(jsonrpc_fill(&j) == 0);
    CHECK(j.eof);
    jsonrpc_release(&j);
}

static void test_jsonrpc_line_without_end_is_dropped(void)
{
    int sv[2];
    REQUIRE(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
    pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) { /* a client that writes 40 MiB without a newline, then a message */
        close(sv[0]);
        static char block[1 << 20];
        memset(block, 'a', sizeof block);
        for (int i = 0; i < 40; i++)
            if (write(sv[1], block, sizeof block) != (ssize_t)sizeof block)
                _exit(1);
        const char *tail = "\n{\"after\": true}\n";
        _exit(write(sv[1], tail, strlen(tail)) == (ssize_t)strlen(tail) ? 0 : 1);
    }
    close(sv[1]);
    struct jsonrpc j;
    REQUIRE(jsonrpc_init(&j, sv[0], sv[0]) == 0);
    int got_error = 0, got_after = 0;
    json_t *v;
    while (!j.eof && !got_after) {
        REQUIRE(jsonrpc_fill(&j) == 0);
        CHECK(j.cap <= JSONRPC_MAX_LINE + 262144); /* memory stays bounded */
        int r;
        while ((r = jsonrpc_next(&j, &v)) != 0) {
            if (r == JSONRPC_PARSE_ERROR)
                got_error++;
            else
                got_after += json_is_true(json_object_get(v, "after"));
            json_decref(v);
        }
    }
    CHECK_INT(got_error, 1);
    CHECK_INT(got_after, 1);
    int status;
    waitpid(pid, &status, 0);
    jsonrpc_release(&j);
}

/* --- workspace confinement -----------------------------------------------------------
 */

static void make_tree(char *root, size_t len, char *runtime, size_t rlen)
{
    char *dir = temp_dir(), path[PATH_MAX];
    snprintf(root, len, "%s/ws", dir);
    REQUIRE(mkdir(root, 0700) == 0);
    snprintf(path, sizeof path, "%s/outside.txt", dir);
    write_text(path, "secret\n");
    snprintf(path, sizeof path, "%s/a.txt", root);
    write_text(path, "alpha\n");
    snprintf(path, sizeof path, "%s/sub", root);
    REQUIRE(mkdir(path, 0700) == 0);
    snprintf(path, sizeof path, "%s/sub/b.txt", root);
    write_text(path, "beta\n");
    snprintf(path, sizeof path, "%s/link-out", root);
    char target[PATH_MAX];
    snprintf(target, sizeof target, "%s/outside.txt", dir);
    REQUIRE(symlink(target, path) == 0);
    snprintf(path, sizeof path, "%s/sub/up", root);
    REQUIRE(symlink("../..", path) == 0);
    snprintf(path, sizeof path, "%s/link-in", root);
    REQUIRE(symlink("sub/b.txt", path) == 0);
    snprintf(runtime, rlen, "%s/rt", root);
    REQUIRE(mkdir(runtime, 0700) == 0);
    snprintf(path, sizeof path, "%s/rt/kernel.json", root);
    write_text(path, "{\"key\": \"k\"}\n");
}

static void test_workspace_read_is_confined(void)
{
    char root[PATH_MAX], runtime[PATH_MAX], err[512], *data;
    size_t len;
    make_tree(root, sizeof root, runtime, sizeof runtime);
    struct workspace w;
    REQUIRE(workspace_init(&w, root, runtime) == 0);
    REQUIRE(workspace_read(&w, "a.txt", 1000, &data, &len, err, sizeof err) == 0);
    CHECK_STR(data, "alpha\n");
    free(data);
    /* No link is followed, even one that stays inside: the cell could swap it. */
    CHECK_INT(workspace_read(&w, "link-in", 1000, &data, &len, err, sizeof err), -EXDEV);
    CHECK(strstr(err, "symbolic link") != NULL);
    CHECK_INT(workspace_read(&w, "../outside.txt", 1000, &data, &len, err, sizeof err),
              -EINVAL);
    CHECK(strstr(err, "..") != NULL);
    CHECK_INT(workspace_read(&w, "sub/../a.txt", 1000, &data, &len, err, sizeof err),
              -EINVAL);
    CHECK_INT(workspace_read(&w, "/etc/hostname", 1000, &data, &len, err, sizeof err),
              -EINVAL);
    CHECK(strstr(err, "absolute") != NULL);
    CHECK_INT(workspace_read(&w, "link-out", 1000, &data, &len, err, sizeof err), -EXDEV);
    CHECK(strstr(err, "outside the workspace") != NULL);
    CHECK_INT(
        workspace_read(&w, "sub/up/outside.txt", 1000, &data, &len, err, sizeof err),
        -EXDEV);
    CHECK_INT(workspace_read(&w, "rt/kernel.json", 1000, &data, &len, err, sizeof err),
              -EACCES);
    CHECK(strstr(err, "runtime folder") != NULL);
    CHECK_INT(workspace_read(&w, "a.txt", 3, &data, &len, err, sizeof err), -EFBIG);
    CHECK_INT(workspace_read(&w, "sub", 1000, &data, &len, err, sizeof err), -EISDIR);
    CHECK(data == NULL);
}

/* The names of one folder are read up to a bound, whatever the code made
 * there: a listing of a folder of 70,000 files says it is truncated even when
 * the caller asks for more. */
static void test_workspace_list_bounds_a_huge_folder(void)
{
    char root[] = "/tmp/sandpit-test-XXXXXX", path[PATH_MAX], err[512];
    REQUIRE(mkdtemp(root) != NULL);
    testing_remove_after(root);
    for (int i = 0; i < 70000; i++) {
        snprintf(path, sizeof path, "%s/f%d", root, i);
        int fd = open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
        REQUIRE(fd >= 0);
        close(fd);
    }
    struct workspace w;
    REQUIRE(workspace_init(&w, root, NULL) == 0);
    int truncated = 0;
    json_t *list = workspace_list(&w, "", 1u << 20, &truncated, err, sizeof err);
    REQUIRE(list != NULL);
    CHECK(truncated);
    CHECK(json_array_size(list) <= 65536);
    json_decref(list);
}

static void test_workspace_list_never_follows_links(void)
{
    char root[PATH_MAX], runtime[PATH_MAX], err[512];
    make_tree(root, sizeof root, runtime, sizeof runtime);
    struct workspace w;
    REQUIRE(workspace_init(&w, root, runtime) == 0);
    int truncated;
    json_t *list = workspace_list(&w, "", 100, &truncated, err, sizeof err);
    REQUIRE(list != NULL);
    char all[2048] = "";
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
        char line[256];
        snprintf(line, sizeof line, "%s:%s ",
                 json_string_value(json_object_get(e, "path")),
                 json_string_value(json_object_get(e, "type")));
        strcat(all, line);
    }
    CHECK_STR(all, "a.txt:file link-in:link link-out:link sub:folder sub/b.txt:file "
                   "sub/up:link ");
    CHECK_INT(truncated, 0);
    json_decref(list);
    list = workspace_list(&w, "sub", 1, &truncated, err, sizeof err);
    REQUIRE(list != NULL);
    CHECK_INT(json_array_size(list), 1);
    CHECK_INT(truncated, 1);
    json_decref(list);
    CHECK(workspace_list(&w, "sub/up", 100, &truncated, err, sizeof err) == NULL);
    CHECK(workspace_list(&w, "..", 100, &truncated, err, sizeof err) == NULL);
}

/* --- where a workspace's kernel lives -------------------------------------------------
 */

static void test_runtime_dir_as_jupyter_core_finds_it(void)
{
    char out[PATH_MAX];
    const char *vars[] = {"JUPYTER_RUNTIME_DIR", "JUPYTER_PLATFORM_DIRS",
                          "XDG_RUNTIME_DIR", "JUPYTER_DATA_DIR", "XDG_DATA_HOME"};
    for (size_t i = 0; i < 5; i++)
        unsetenv(vars[i]);
    setenv("HOME", "/home/ada", 1);
    REQUIRE(instance_runtime_dir(out, sizeof out) == 0);
    CHECK_STR(out, "/home/ada/.local/share/jupyter/runtime");
    setenv("XDG_DATA_HOME", "/xdg/data", 1);
    REQUIRE(instance_runtime_dir(out, sizeof out) == 0);
    CHECK_STR(out, "/xdg/data/jupyter/runtime");
    setenv("JUPYTER_DATA_DIR", "/jdata", 1);
    REQUIRE(instance_runtime_dir(out, sizeof out) == 0);
    CHECK_STR(out, "/jdata/runtime");
    setenv("XDG_RUNTIME_DIR", "/run/user/1000", 1);
    REQUIRE(instance_runtime_dir(out, sizeof out) == 0);
    CHECK_STR(out, "/jdata/runtime"); /* not without JUPYTER_PLATFORM_DIRS */
    setenv("JUPYTER_PLATFORM_DIRS", "1", 1);
    REQUIRE(instance_runtime_dir(out, sizeof out) == 0);
    CHECK_STR(out, "/run/user/1000/jupyter");
    setenv("JUPYTER_RUNTIME_DIR", "/explicit", 1);
    REQUIRE(instance_runtime_dir(out, sizeof out) == 0);
    CHECK_STR(out, "/explicit");
    for (size_t i = 0; i < 5; i++)
        unsetenv(vars[i]);
    unsetenv("HOME");
    CHECK_INT(instance_runtime_dir(out, sizeof out), -ENOENT);
}

static void test_instance_files_follow_the_real_path(void)
{
    char *dir = temp_dir(), ws[PATH_MAX], alias[PATH_MAX], other[PATH_MAX], err[512];
    snprintf(ws, sizeof ws, "%s/ws", dir);
    snprintf(alias, sizeof alias, "%s/alias", dir);
    snprintf(other, sizeof other, "%s/other", dir);
    REQUIRE(mkdir(ws, 0700) == 0 && mkdir(other, 0700) == 0 && symlink("ws", alias) == 0);
    setenv("JUPYTER_RUNTIME_DIR", "/rt", 1);
    struct instance a, b, c;
    REQUIRE(instance_locate(&a, ws, err, sizeof err) == 0);
    REQUIRE(instance_locate(&b, alias, err, sizeof err) == 0);
    REQUIRE(instance_locate(&c, other, err, sizeof err) == 0);
    CHECK_STR(a.connection_file, b.connection_file);
    CHECK(strcmp(a.connection_file, c.connection_file) != 0);
    CHECK(strncmp(a.connection_file, "/rt/sandpit-", 12) == 0);
    CHECK_INT(strlen(a.connection_file), strlen("/rt/sandpit-") + 16 + strlen(".json"));
    CHECK(strstr(a.state_file, ".state.json") != NULL);
    char file[PATH_MAX];
    snprintf(file, sizeof file, "%s/ws/x", dir);
    write_text(file, "");
    CHECK_INT(instance_locate(&a, file, err, sizeof err), -ENOTDIR);
    snprintf(file, sizeof file, "%s/missing", dir);
    CHECK_INT(instance_locate(&a, file, err, sizeof err), -ENOENT);
    CHECK(strstr(err, "missing") != NULL);
}

static void test_alive_means_the_same_process(void)
{
    unsigned long long me = instance_start_time(getpid());
    CHECK(me > 0);
    CHECK(instance_alive(getpid(), me));
    CHECK(!instance_alive(getpid(), me + 1)); /* a pid reused by another process */
    pid_t child = fork();
    REQUIRE(child >= 0);
    if (child == 0)
        _exit(0);
    unsigned long long t = instance_start_time(child);
    int status;
    /* Exited but not reaped: a zombie is not alive. */
    siginfo_t info;
    REQUIRE(waitid(P_PID, (id_t)child, &info, WEXITED | WNOWAIT) == 0);
    CHECK(!instance_alive(child, t));
    waitpid(child, &status, 0);
    CHECK(!instance_alive(child, t));
    CHECK(!instance_alive(0, 0));
}

static void test_state_file_round_trip(void)
{
    char *dir = temp_dir(), err[512];
    setenv("JUPYTER_RUNTIME_DIR", dir, 1);
    struct instance in;
    REQUIRE(instance_locate(&in, dir, err, sizeof err) == 0);
    struct instance_state st;
    CHECK_INT(instance_read_state(&in, &st), -ENOENT);
    char *argv[] = {"/bin/sandpit", "kernel", "-f", "x.json", NULL};
    REQUIRE(instance_write_state(&in, getpid(), argv) == 0);
    struct stat sb;
    REQUIRE(stat(in.state_file, &sb) == 0);
    CHECK_INT(sb.st_mode & 0777, 0600);
    REQUIRE(instance_read_state(&in, &st) == 0);
    CHECK_INT(st.pid, getpid());
    CHECK(instance_alive(st.pid, st.start_time));
    CHECK_STR(st.argv[3], "x.json");
    CHECK(st.argv[4] == NULL);
    instance_state_release(&st);
    write_text(in.state_file, "{\"pid\": \"not a number\"}");
    CHECK_INT(instance_read_state(&in, &st), -EINVAL);
    write_text(in.state_file, "not json");
    CHECK_INT(instance_read_state(&in, &st), -EINVAL);
}

static void test_fresh_connection_file(void)
{
    char *dir = temp_dir(), path[PATH_MAX], err[512];
    snprintf(path, sizeof path, "%s/k.json", dir);
    write_text(path, "an old file is replaced");
    REQUIRE(connfile_write(path, err, sizeof err) == 0);
    struct stat sb;
    REQUIRE(stat(path, &sb) == 0);
    CHECK_INT(sb.st_mode & 0777, 0600);
    struct connection c;
    REQUIRE(connection_load(&c, path, err, sizeof err) == 0);
    CHECK_STR(c.ip, "127.0.0.1");
    CHECK_STR(c.transport, "tcp");
    CHECK_INT(c.key_len, 36);
    for (int i = 0; i < CONNECTION_NCHANNELS; i++)
        for (int k = i + 1; k < CONNECTION_NCHANNELS; k++)
            CHECK(c.ports[i] != c.ports[k]);
    struct connection d;
    char path2[PATH_MAX];
    snprintf(path2, sizeof path2, "%s/k2.json", dir);
    REQUIRE(connfile_write(path2, err, sizeof err) == 0);
    REQUIRE(connection_load(&d, path2, err, sizeof err) == 0);
    CHECK(memcmp(c.key, d.key, 36) != 0); /* a fresh key each time */
    connection_release(&c);
    connection_release(&d);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_base64_vectors),
    TESTING_CASE(test_base64_rejects_what_is_not_base64),
    TESTING_CASE(test_cut_keeps_both_ends_and_says_how_much),
    TESTING_CASE(test_strip_ansi),
    TESTING_CASE(test_outcome_folds_a_cell),
    TESTING_CASE(test_outcome_keeps_images_without_a_sink),
    TESTING_CASE(test_jsonrpc_lines_in_pieces),
    TESTING_CASE_TIMEOUT(test_jsonrpc_line_without_end_is_dropped, 30),
    TESTING_CASE(test_workspace_read_is_confined),
    TESTING_CASE(test_workspace_list_never_follows_links),
    TESTING_CASE_TIMEOUT(test_workspace_list_bounds_a_huge_folder, 60),
    TESTING_CASE(test_runtime_dir_as_jupyter_core_finds_it),
    TESTING_CASE(test_instance_files_follow_the_real_path),
    TESTING_CASE(test_alive_means_the_same_process),
    TESTING_CASE(test_state_file_round_trip),
    TESTING_CASE(test_fresh_connection_file),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
