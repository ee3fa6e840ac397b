"""E2B's code-interpreter API on `sandpit serve`: E2B's own JavaScript SDK
(@e2b/code-interpreter, in its local mode: E2B_DEBUG=true and
E2B_SANDBOX_URL set to the URL the server logs) runs code written for E2B
(tests/node/e2b_client.mjs), and raw HTTP checks what the SDK does not show:
lines that stream while a cell runs, the keepalive, a client that goes away
(its cell interrupted), the errors of a wrong request, the /e2b/<secret>/
prefix and the token."""

import http.client
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import time
import uuid

import pytest

from serve_helpers import SANDPIT, Server, e2b_url, run_e2b_client

@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.stop()


def post_lines(server, body, path="/execute", token=True, timeout=60, on_line=None):
    """POSTs body to path; (status, [(seconds since the request, object)])
    with the lines read as they come. on_line(obj) may return True to stop
    reading (the connection is then closed)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    h = {"Content-Type": "application/json"}
    if token:
        h["Authorization"] = "Token " + server.token
    start = time.monotonic()
    conn.request("POST", path, body=data, headers=h)
    r = conn.getresponse()
    got = []
    if r.status != 200:
        got.append((0, json.loads(r.read() or b"null")))
        conn.close()
        return r.status, got
    assert r.getheader("content-type") == "application/x-ndjson"
    while True:
        line = r.readline()
        if not line:
            break
        obj = json.loads(line)
        got.append((time.monotonic() - start, obj))
        if on_line and on_line(obj):
            break
    conn.close()
    return r.status, got


def objects(lines):
    return [o for _, o in lines]


def run(server, code, **kw):
    status, lines = post_lines(server, dict(code=code, **kw))
    assert status == 200, lines
    got = objects(lines)
    assert got[-1] == {"type": "end_of_execution"}, got
    assert sum(o["type"] == "end_of_execution" for o in got) == 1, got
    return got


def stdout(got):
    return "".join(o["text"] for o in got if o["type"] == "stdout")


def main_result(got):
    return [o for o in got if o["type"] == "result" and o.get("is_main_result")]


# --- E2B's SDK -------------------------------------------------------------------


@pytest.fixture(scope="module")
def sdk(server):
    url = e2b_url(server)
    refused = re.sub(r"/e2b/[^/]+", "/e2b/" + "0" * 48, url)
    return run_e2b_client(server, "e2b_client.mjs", url, E2B_REFUSED_URL=refused)


def test_the_sdk_shares_a_variable_between_two_cells(sdk):
    assert sdk["first"]["stdout"] == ["x set\n"], sdk["first"]
    assert sdk["first"]["error"] is None
    second = sdk["second"]
    assert second["text"] == "42", second
    assert second["results"][0]["is_main_result"] is True
    assert second["execution_count"] == sdk["first"]["execution_count"] + 1


def test_the_sdk_gets_a_chart_as_png(sdk):
    chart = sdk["chart"]
    assert chart["error"] is None, chart
    assert chart["png_type"] == "string" and chart["png_bytes"] > 1000, chart
    assert chart["png_magic"] == "89504e470d0a1a0a"


def test_the_sdk_gets_an_error_with_its_name(sdk):
    err = sdk["error"]
    assert err["error"]["name"] == "ZeroDivisionError", err
    assert "division by zero" in err["error"]["value"]
    assert "f()" in err["error"]["traceback"]
    assert err["on_error"] == ["ZeroDivisionError"]


def test_the_sdk_makes_a_second_context_with_its_own_variables(sdk):
    c = sdk["context"]
    assert "threw" not in c, c
    assert c["ctx"]["language"] == "python" and c["ctx"]["cwd"] == "/home/user"
    assert c["fresh"]["error"]["name"] == "NameError", c["fresh"]
    assert c["own"]["text"] == "mine"
    assert c["default_after"]["text"] == "(41, False)"
    assert c["ctx"]["id"] in c["listed"] and len(c["listed"]) >= 2


def test_the_sdk_without_the_secret_is_refused(sdk):
    refused = sdk["refused"]
    assert refused["run"]["threw"] and "401" in refused["run"]["threw"], refused
    assert refused["read"]["threw"], refused


def test_the_sdk_kills_its_sandbox(sdk):
    assert sdk["kill"] is True


def test_the_sdk_streams_stdout_while_the_cell_runs(sdk):
    # The cell waits for a file that the client writes (files.write) only once
    # onStdout has seen "ready": "go" proves both the streaming and the write.
    s = sdk["streaming"]
    assert s["wrote"] == "written", s
    assert s["stdout"] == ["ready\n", "go\n"], s
    assert s["on_stdout"][0] == {"line": "ready\n", "error": False}, s
    assert s["on_stderr"] == [{"line": "to stderr\n", "error": True}], s


def test_the_sdk_writes_and_reads_the_same_bytes(sdk):
    f = sdk["files"]
    assert f["write_info"] == {"path": "/home/user/e2b_bytes.bin", "name": "e2b_bytes.bin",
                               "type": "file"}, f
    assert f["read_type"] == "Uint8Array" and f["read_length"] == 1024, f
    assert f["same_bytes"] is True and f["same_text"] is True, f
    assert f["text_info"]["path"] == "/home/user/e2b_text.txt", f
    assert f["kernel_sees"] == "True", f  # the kernel's workspace is the files'


def test_the_sdk_reads_a_missing_file_as_file_not_found(sdk):
    assert sdk["missing"]["name"] == "FileNotFoundError", sdk["missing"]
    assert "e2b_no_such_file.txt" in sdk["missing"]["threw"], sdk["missing"]


# --- the URL, the prefix, the token ----------------------------------------------


def test_the_url_is_logged_as_a_json_line_with_json_logs(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("a-secret_of.the~tests0123\n")
    s = Server("--log-format", "json", "--e2b-secret-file", str(secret))
    try:
        url = e2b_url(s)
        assert url == "http://127.0.0.1:%d/e2b/a-secret_of.the~tests0123" % s.port
        status, lines = post_lines(s, {"code": "6 * 7"}, path="/e2b/a-secret_of.the~tests0123"
                                   "/execute", token=False)
        assert status == 200 and main_result(objects(lines))[0]["text"] == "42"
    finally:
        s.stop()
    for line in s.log().splitlines():
        if line.strip():
            json.loads(line)  # every line is JSON


def test_a_bad_secret_file_is_refused(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("short\n")
    proc = subprocess.run([SANDPIT, "serve", "--port", "0",
                           "--token", "x", "--e2b-secret-file", str(secret)],
                          capture_output=True, text=True, timeout=30)
    assert proc.returncode != 0 and "E2B secret" in proc.stderr, proc.stderr


def test_the_prefix_needs_the_secret_and_reaches_only_e2bs_routes(server):
    url = e2b_url(server)
    prefix = url[len(server.base):]
    status, body = server.call("GET", prefix + "/health", token=False)
    assert (status, body) == (200, "OK")
    wrong = prefix[:-1] + ("0" if prefix[-1] != "0" else "1")
    for p in (wrong + "/health", "/e2b/health", "/e2b/", prefix[:-1] + "/health"):
        status, body = server.call("GET", p, token=False)
        assert status == 401 and set(body) == {"reason", "message"}, (p, status, body)
    # The token's routes are not under the prefix, even with the token.
    assert server.call("GET", prefix + "/api/kernels", token=False)[0] == 404
    assert server.call("GET", prefix + "/api/kernels")[0] == 404
    assert server.call("GET", prefix + "/metrics", token=False)[0] == 404
    # At the root, E2B's routes need the token like every other.
    assert server.call("GET", "/health", token=False)[0] == 401
    assert server.call("GET", "/health") == (200, "OK")
    assert post_lines(server, {"code": "1"}, token=False)[0] == 401
    assert url.split("/e2b/")[1] not in server.log().replace(url, "")


def test_curl_streams_the_lines_with_the_token(server):
    if not shutil.which("curl"):
        pytest.skip("no curl here")
    proc = subprocess.Popen(
        ["curl", "-sN", "-H", "Authorization: Token " + server.token, "-d",
         json.dumps({"code": "import time\nprint('one', flush=True)\ntime.sleep(2)\n"
                             "print('two')"}),
         server.base + "/execute"], stdout=subprocess.PIPE, text=True)
    start = time.monotonic()
    first = None
    lines = []
    for line in proc.stdout:
        lines.append(json.loads(line))
        if lines[-1]["type"] == "stdout" and first is None:
            first = time.monotonic() - start
    proc.wait(30)
    assert proc.returncode == 0
    assert stdout(lines) == "one\ntwo\n", lines
    assert lines[-1] == {"type": "end_of_execution"}
    assert first is not None and first < time.monotonic() - start - 1.0, lines


# --- the stream --------------------------------------------------------------------


def test_lines_arrive_while_the_cell_runs(server):
    status, lines = post_lines(server, {
        "code": "import time\nprint('early', flush=True)\ntime.sleep(3)\nprint('late')"})
    assert status == 200
    times = {o.get("text"): t for t, o in lines if o["type"] == "stdout"}
    end = lines[-1][0]
    assert lines[-1][1] == {"type": "end_of_execution"}
    assert times["early\n"] < end - 2.0, lines  # sent before the cell slept
    assert objects(lines)[0]["type"] == "number_of_executions"
    assert all(o["type"] != "keepalive" for o in objects(lines))


def test_a_quiet_cell_gets_a_keepalive(server):
    status, lines = post_lines(server, {"code": "import time\ntime.sleep(6.5)\n'done'"})
    assert status == 200
    got = objects(lines)
    keep = [t for t, o in lines if o["type"] == "keepalive"]
    assert len(keep) == 1 and 4.5 < keep[0] < 6.5, lines
    assert main_result(got)[0]["text"] == "done" and got[-1]["type"] == "end_of_execution"


def test_a_client_that_goes_interrupts_its_cell(server):
    assert run(server, "kept = 'still here'") [-1]["type"] == "end_of_execution"
    start = time.monotonic()
    status, lines = post_lines(
        server, {"code": "import time\nprint('sleeping', flush=True)\ntime.sleep(60)"},
        on_line=lambda o: o["type"] == "stdout")
    assert status == 200 and objects(lines)[-1]["type"] == "stdout"
    got = run(server, "kept")  # waits behind the first only if it was not interrupted
    assert time.monotonic() - start < 30, got
    assert main_result(got)[0]["text"] == "still here", got
    assert "interrupting" in server.log()


def test_env_vars_are_set_for_that_cell_only(server):
    got = run(server, "import os\nos.environ.get('E2B_TEST_VAR')",
              env_vars={"E2B_TEST_VAR": "caf\u00e9 \"quoted\" \\ \n"})
    # E2B shows a string result without the quotes of its repr.
    assert main_result(got)[0]["text"] == repr("caf\u00e9 \"quoted\" \\ \n")[1:-1], got
    got = run(server, "import os\nos.environ.get('E2B_TEST_VAR', 'unset'), "
                      "'__sandpit_env_saved' in globals()")
    assert main_result(got)[0]["text"] == "('unset', False)", got
    # The variables are restored after a cell that fails too.
    got = run(server, "import os\nos.environ['HOME']\n1/0", env_vars={"HOME": "/elsewhere"})
    assert [o["name"] for o in got if o["type"] == "error"] == ["ZeroDivisionError"]
    got = run(server, "import os\nos.environ.get('HOME') != '/elsewhere'")
    assert main_result(got)[0]["text"] == "True", got


# --- wrong requests ----------------------------------------------------------------


@pytest.mark.parametrize("body, status, words", [
    ({"code": "1", "context_id": str(uuid.uuid4()), "language": "python"}, 400, "not both"),
    ({"code": "1", "language": "javascript"}, 400, "Python only"),
    ({"code": "1", "language": 3}, 400, "strings"),
    ({"code": "1", "context_id": str(uuid.uuid4())}, 404, "no such context"),
    ({"code": "1", "context_id": "../../etc"}, 404, "no such context"),
    ({"code": 1}, 400, "code must be a string"),
    ({"code": "1\u0000"}, 400, "not a JSON object"),  # jansson refuses NUL
    ({}, 400, "code must be a string"),
    ({"code": "1", "env_vars": ["A"]}, 400, "env_vars"),
    ({"code": "1", "env_vars": {"A": 1}}, 400, "env_vars"),
    ({"code": "1", "env_vars": {"A=B": "x"}}, 400, "env_vars"),
    ({"code": "1", "env_vars": {"V%d" % i: "x" for i in range(65)}}, 400, "at most"),
    (b"not json", 400, "not a JSON object"),
    (b"[1, 2]", 400, "not a JSON object"),
])
def test_a_wrong_execute_is_answered_with_a_clear_error(server, body, status, words):
    got_status, lines = post_lines(server, body)
    assert got_status == status, lines
    assert words in lines[0][1]["message"], lines


def test_a_huge_body_is_refused_and_the_server_serves_on(server):
    big = json.dumps({"code": "x = '" + "a" * (2 << 20) + "'"}).encode()
    try:
        status, lines = post_lines(server, big)
        assert status == 413, lines
    except (ConnectionError, socket.error):
        pass  # the server may close the connection rather than read it all
    assert server.call("GET", "/health") == (200, "OK")
    assert main_result(run(server, "1 + 1"))[0]["text"] == "2"


# --- contexts --------------------------------------------------------------------


def test_contexts_are_kernels_made_listed_restarted_and_deleted(server):
    status, ctx = server.call("POST", "/contexts", {"cwd": "/home/user/project"})
    assert status == 200 and set(ctx) == {"id", "language", "cwd"}, ctx
    assert ctx["language"] == "python" and ctx["cwd"] == "/home/user/project"
    assert ctx["id"] in [k["id"] for k in server.call("GET", "/api/kernels")[1]]
    assert ctx in server.call("GET", "/contexts")[1]
    run(server, "mine = 1", context_id=ctx["id"])
    assert main_result(run(server, "mine", context_id=ctx["id"]))[0]["text"] == "1"
    assert server.call("POST", "/contexts/%s/restart" % ctx["id"])[0] == 200
    got = run(server, "'mine' in globals()", context_id=ctx["id"])
    assert main_result(got)[0]["text"] == "False", got
    assert server.call("DELETE", "/contexts/" + ctx["id"])[0] == 204
    assert server.call("DELETE", "/contexts/" + ctx["id"])[0] == 404
    assert ctx["id"] not in [c["id"] for c in server.call("GET", "/contexts")[1]]
    assert post_lines(server, {"code": "1", "context_id": ctx["id"]})[0] == 404
    for body in ({"language": "r"}, {"cwd": 5}, {"cwd": ""}, [1]):
        status, err = server.call("POST", "/contexts", body)
        assert status == 400, (body, status, err)
    assert server.call("POST", "/contexts/%s/restart" % uuid.uuid4())[0] == 404
    assert server.call("PUT", "/contexts")[0] == 405


def test_a_context_removed_mid_cell_ends_its_stream_with_an_error(server):
    status, ctx = server.call("POST", "/contexts", {})
    assert status == 200

    def delete_when_running(o):
        if o["type"] == "stdout":
            assert server.call("DELETE", "/contexts/" + ctx["id"])[0] == 204
        return False

    status, lines = post_lines(
        server, {"code": "import time\nprint('go', flush=True)\ntime.sleep(60)",
                 "context_id": ctx["id"]}, on_line=delete_when_running)
    got = objects(lines)
    assert [o["type"] for o in got][-2:] == ["error", "end_of_execution"], got
    assert got[-2]["name"] == "ContextGone"
    assert lines[-1][0] < 30


def test_a_cell_whose_worker_dies_ends_with_an_error_and_the_context_goes_on(server):
    status, ctx = server.call("POST", "/contexts", {})
    assert status == 200
    got = run(server, "import os\nprint('bye', flush=True)\nos._exit(3)",
              context_id=ctx["id"])
    errors = [o for o in got if o["type"] == "error"]
    assert [e["name"] for e in errors] == ["WorkerDied"], got
    got = run(server, "1 + 2", context_id=ctx["id"])
    assert main_result(got)[0]["text"] == "3", got
    assert server.call("DELETE", "/contexts/" + ctx["id"])[0] == 204


def children(pid):
    """The pids of pid's children (from /proc)."""
    out = set()
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open("/proc/%s/stat" % d) as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                out.add(int(d))
    return out


def test_a_context_whose_kernel_dies_mid_cell_ends_its_stream_with_an_error(server):
    before = children(server.proc.pid)
    status, ctx = server.call("POST", "/contexts", {})
    assert status == 200
    new = children(server.proc.pid) - before
    assert len(new) == 1, new

    def kill_when_running(o):
        if o["type"] == "stdout":
            os.kill(new.pop(), signal.SIGKILL)
        return False

    status, lines = post_lines(
        server, {"code": "import time\nprint('go', flush=True)\ntime.sleep(60)",
                 "context_id": ctx["id"]}, on_line=kill_when_running)
    got = objects(lines)
    assert [o["type"] for o in got][-2:] == ["error", "end_of_execution"], got
    assert got[-2]["name"] == "ContextDied"
    assert lines[-1][0] < 30
    status, lines = post_lines(server, {"code": "1", "context_id": ctx["id"]})
    assert status == 409 and "dead" in lines[0][1]["message"], lines
    assert ctx["id"] not in [c["id"] for c in server.call("GET", "/contexts")[1]]


def test_two_cells_at_once_on_one_context_run_in_turn(server):
    import threading
    results = {}

    def one(name, code):
        results[name] = run(server, code)

    first = threading.Thread(target=one, args=("a", "import time\ntime.sleep(1.5)\n'a'"))
    first.start()
    time.sleep(0.3)
    one("b", "'b'")
    first.join(30)
    assert main_result(results["a"])[0]["text"] == "a", results
    assert main_result(results["b"])[0]["text"] == "b", results
    count = {k: [o for o in v if o["type"] == "number_of_executions"][0]["execution_count"]
             for k, v in results.items()}
    assert count["b"] == count["a"] + 1, results


@pytest.mark.parametrize("route", ["/contexts/%s/restart", "/api/kernels/%s/restart"])
def test_a_restart_ends_a_running_cell(server, route):
    status, ctx = server.call("POST", "/contexts", {})
    assert status == 200

    def restart_when_running(o):
        if o["type"] == "stdout":
            assert server.call("POST", route % ctx["id"])[0] == 200
        return False

    status, lines = post_lines(
        server, {"code": "import time\nprint('go', flush=True)\ntime.sleep(60)",
                 "context_id": ctx["id"]}, on_line=restart_when_running)
    got = objects(lines)
    assert [o["type"] for o in got][-2:] == ["error", "end_of_execution"], got
    assert got[-2]["name"] == "ContextRestarting" and lines[-1][0] < 30
    assert main_result(run(server, "2 + 2", context_id=ctx["id"]))[0]["text"] == "4"
    assert server.call("DELETE", "/contexts/" + ctx["id"])[0] == 204
