"""E2B's files API on `sandpit serve`, as envd serves it in a sandbox: POST
/files (multipart/form-data, or application/octet-stream, chunked or not),
GET /files, envd's Connect ListDir and Stat, all in the server's workspace.
Raw HTTP shows what E2B's SDK cannot: every byte value through each kind of
body, the paths that are refused (outside the workspace, "..", through a
link, a FIFO), the bounds, the token and the /e2b/<secret>/ prefix; then the
SDK itself (tests/node/e2b_files_client.mjs) writes several files at once,
writes from a stream, lists, stats and meets what is left out."""

import http.client
import json
import os
import re
import socket
import stat
import time
import urllib.parse

import pytest

from serve_helpers import Server, e2b_url, run_e2b_client

EVERY_BYTE = bytes(range(256)) * 4


@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.stop()


def workspace(server):
    return os.path.realpath(server.cwd)


def e2b_prefix(server):
    """The /e2b/<secret> path of the URL the server logged for E2B's SDK."""
    return urllib.parse.urlsplit(e2b_url(server)).path.rstrip("/")


def request(server, method, target, body=None, headers=None, token=True, timeout=30):
    """(status, headers, body bytes) of one request on a connection of its own."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=timeout)
    h = dict(headers or {})
    if token:
        h["Authorization"] = "Token " + server.token
    try:
        conn.request(method, target, body=body, headers=h)
        r = conn.getresponse()
        return r.status, r.headers, r.read()
    finally:
        conn.close()


def files_url(path, prefix=""):
    return prefix + "/files?" + urllib.parse.urlencode({"path": path})


def multipart(files, boundary="----sandpit-test-boundary"):
    """A multipart/form-data body of (field, filename, bytes) parts."""
    out = b""
    for field, filename, data in files:
        disp = 'form-data; name="%s"' % field
        if filename is not None:
            disp += '; filename="%s"' % filename
        out += (b"--" + boundary.encode() + b"\r\nContent-Disposition: " + disp.encode() +
                b"\r\nContent-Type: application/octet-stream\r\n\r\n" + data + b"\r\n")
    out += b"--" + boundary.encode() + b"--\r\n"
    return out, "multipart/form-data; boundary=" + boundary


def upload(server, path, data, prefix="", token=True, filename="upload.bin"):
    body, ctype = multipart([("file", filename, data)])
    return request(server, "POST", files_url(path, prefix), body, {"Content-Type": ctype},
                token=token)


def upload_raw(server, path, data, token=True):
    return request(server, "POST", files_url(path), data,
                {"Content-Type": "application/octet-stream"}, token=token)


def download(server, path, prefix="", token=True):
    return request(server, "GET", files_url(path, prefix), token=token)


def error_of(status, body, want, route=True):
    """The message of an error answer: envd's {"message", "code"} from the
    route, or the server's {"reason", "message"} for what http.c refuses
    before any route sees it (route False: a body too large, bad chunked
    framing); E2B's SDK reads "message" from either."""
    assert status == want, (status, body)
    err = json.loads(body)
    assert isinstance(err["message"], str) and err["message"], err
    assert err.get("code") == want if route else set(err) == {"reason", "message"}, err
    return err["message"]


def raw_request(server, head, body=b"", pieces=None, timeout=15):
    """Sends head (the request line and headers, without the empty line),
    then body in pieces, on a socket; the whole answer, read until the server
    closes (chunked uploads close the connection after their answer)."""
    s = socket.create_connection(("127.0.0.1", server.port), timeout=timeout)
    try:
        s.sendall(head.encode() + b"\r\n\r\n")
        data = body
        for n in pieces or [len(body)]:
            s.sendall(data[:n])
            data = data[n:]
            time.sleep(0.01)
        if data:
            s.sendall(data)
        got = b""
        while True:
            piece = s.recv(65536)
            if not piece:
                break
            got += piece
        return got
    finally:
        s.close()


def parse_answer(raw):
    head, _, body = raw.partition(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split()[1])
    headers = {k.strip().lower(): v.strip() for k, v in
               (line.split(":", 1) for line in lines[1:] if ":" in line)}
    return status, headers, body


def chunked(data, sizes):
    out, i = b"", 0
    for n in sizes:
        out += b"%x\r\n" % n + data[i:i + n] + b"\r\n"
        i += n
    assert i == len(data)
    return out + b"0\r\n\r\n"


def chunked_head(server, path, ctype="application/octet-stream"):
    return ("POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: token %s\r\n"
            "Content-Type: %s\r\nTransfer-Encoding: chunked" % (files_url(path), server.token,
                                                               ctype))


def still_serving(server):
    status, _, _ = request(server, "GET", "/api")
    assert status == 200


# --- bodies: every byte value, each way ---------------------------------------------


def test_a_multipart_upload_round_trips_every_byte_value(server):
    status, _, body = upload(server, "/home/user/every.bin", EVERY_BYTE)
    assert status == 200, body
    assert json.loads(body) == [{"path": "/home/user/every.bin", "name": "every.bin",
                                 "type": "file"}]
    with open(os.path.join(workspace(server), "every.bin"), "rb") as f:
        assert f.read() == EVERY_BYTE
    status, headers, back = download(server, "/home/user/every.bin")
    assert status == 200 and back == EVERY_BYTE
    assert headers["Content-Type"] == "application/octet-stream"
    status, _, back = download(server, "every.bin")  # relative: the same file
    assert status == 200 and back == EVERY_BYTE


def test_an_octet_stream_upload_round_trips_and_makes_its_folders(server):
    status, _, body = upload_raw(server, "raw/nested/deep/every.bin", EVERY_BYTE)
    assert status == 200, body
    assert json.loads(body) == [{"path": "/home/user/raw/nested/deep/every.bin",
                                 "name": "every.bin", "type": "file"}]
    assert os.path.isdir(os.path.join(workspace(server), "raw", "nested", "deep"))
    status, _, back = download(server, "/home/user/raw/nested/deep/every.bin")
    assert status == 200 and back == EVERY_BYTE


def test_an_empty_file_is_a_file(server):
    status, _, body = upload_raw(server, "empty.txt", b"")
    assert status == 200, body
    status, headers, back = download(server, "empty.txt")
    assert status == 200 and back == b"" and headers["Content-Length"] == "0"


def test_a_chunked_upload_round_trips_in_pieces_of_every_size(server):
    framed = chunked(EVERY_BYTE, [1, 2, 255, 256, 510])
    raw = raw_request(server, chunked_head(server, "chunked.bin"), framed,
                      pieces=[1, 3, 7, 100, 1000])
    status, headers, body = parse_answer(raw)
    assert status == 200, raw
    assert json.loads(body) == [{"path": "/home/user/chunked.bin", "name": "chunked.bin",
                                 "type": "file"}]
    assert headers.get("connection") == "close"
    status, _, back = download(server, "chunked.bin")
    assert status == 200 and back == EVERY_BYTE


def test_a_chunked_multipart_upload_round_trips(server):
    body, ctype = multipart([("file", "ignored.bin", EVERY_BYTE)])
    raw = raw_request(server, chunked_head(server, "/home/user/chunked-form.bin", ctype),
                      chunked(body, [len(body) // 2, len(body) - len(body) // 2]))
    status, _, answer = parse_answer(raw)
    assert status == 200, raw
    assert json.loads(answer)[0]["path"] == "/home/user/chunked-form.bin"
    assert download(server, "chunked-form.bin")[2] == EVERY_BYTE


def test_bad_chunked_framing_is_a_400_and_writes_nothing(server):
    for framed in [b"zz\r\nhello\r\n0\r\n\r\n", b"5\nhello\r\n0\r\n\r\n",
                   b"5\r\nhelloXX0\r\n\r\n", b"11111111111111111\r\n"]:
        raw = raw_request(server, chunked_head(server, "badchunk.bin"), framed)
        status, _, body = parse_answer(raw)
        error_of(status, body, 400, route=False)
    assert not os.path.exists(os.path.join(workspace(server), "badchunk.bin"))
    still_serving(server)


def test_an_existing_file_is_replaced_whole(server):
    assert upload_raw(server, "replaced.txt", b"the first, longer version")[0] == 200
    assert upload(server, "replaced.txt", b"second")[0] == 200
    assert download(server, "replaced.txt")[2] == b"second"
    left = [n for n in os.listdir(workspace(server)) if n.startswith(".sandpit-")]
    assert left == []


def test_several_file_parts_each_go_to_their_filename(server):
    body, ctype = multipart([("file", "multi/one.txt", b"1"),
                             ("other", None, b"a field that is not a file"),
                             ("file", "/home/user/multi/two.txt", b"22")])
    status, _, answer = request(server, "POST", "/files", body, {"Content-Type": ctype})
    assert status == 200, answer
    assert [e["path"] for e in json.loads(answer)] == ["/home/user/multi/one.txt",
                                                       "/home/user/multi/two.txt"]
    assert download(server, "multi/two.txt")[2] == b"22"


def test_hostile_multipart_bodies_are_400s(server):
    cases = [
        (b"no boundary here", "multipart/form-data; boundary=abc"),
        (b"--abc\r\nContent-Disposition: form-data; name=\"file\"\r\n\r\nno end",
         "multipart/form-data; boundary=abc"),
        (b"--abc\r\n\r\nx\r\n--abc--", "multipart/form-data; boundary=abc"),
        (b"whatever", "multipart/form-data"),
        (multipart([("notfile", "x", b"x")])[0], multipart([])[1]),
    ]
    for body, ctype in cases:
        status, _, answer = request(server, "POST", files_url("hostile.bin"), body,
                                 {"Content-Type": ctype})
        error_of(status, answer, 400)
    body, ctype = multipart([("file", "a", b"1"), ("file", "b", b"2")])
    status, _, answer = request(server, "POST", files_url("two-to-one.bin"), body,
                             {"Content-Type": ctype})
    assert "several files" in error_of(status, answer, 400)
    status, _, answer = request(server, "POST", files_url("typed.txt"), b"x",
                             {"Content-Type": "text/plain"})
    error_of(status, answer, 415)
    status, _, answer = request(server, "POST", files_url("gz.txt"), b"x",
                             {"Content-Type": "application/octet-stream",
                              "Content-Encoding": "gzip"})
    error_of(status, answer, 415)
    for name in ["hostile.bin", "two-to-one.bin", "a", "b", "typed.txt", "gz.txt"]:
        assert not os.path.exists(os.path.join(workspace(server), name)), name
    still_serving(server)


# --- paths ---------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["../escape.txt", "/etc/sandpit-escape", "/home/userx/a",
                                  "/home/user/../escape.txt", "a/../../escape.txt", "",
                                  "/home/other/a", "/"])
def test_paths_outside_the_workspace_are_400s(server, path):
    error_of(*upload_raw(server, path, b"x")[::2], 400)
    error_of(*download(server, path)[::2], 400)
    parent = os.path.dirname(workspace(server))
    assert not os.path.exists(os.path.join(parent, "escape.txt"))
    assert not os.path.exists("/etc/sandpit-escape")


def test_a_request_without_a_path_is_a_400(server):
    error_of(*request(server, "GET", "/files")[::2], 400)
    error_of(*request(server, "POST", "/files", b"x",
                   {"Content-Type": "application/octet-stream"})[::2], 400)


def test_a_nul_byte_in_the_path_writes_nothing(server):
    body = None
    # lws refuses a %00 in the query itself (it closes the connection); either
    # that or a 400 is a refusal, and nothing named "a" appears.
    try:
        status, _, body = upload_raw(server, "a\0b", b"x")
    except (http.client.HTTPException, OSError):
        status = None
    assert status in (None, 400), (status, body)
    assert not os.path.exists(os.path.join(workspace(server), "a"))
    still_serving(server)


def test_a_link_to_outside_is_refused_and_its_target_untouched(server, tmp_path):
    target = tmp_path / "target.txt"
    target.write_bytes(b"outside, untouched")
    outside_dir = tmp_path / "outside"
    outside_dir.mkdir()
    ws = workspace(server)
    os.symlink(str(target), os.path.join(ws, "link.txt"))
    os.symlink(str(outside_dir), os.path.join(ws, "linkdir"))
    assert "link" in error_of(*upload(server, "link.txt", b"overwritten?")[::2], 400)
    assert "link" in error_of(*upload_raw(server, "linkdir/new.txt", b"x")[::2], 400)
    assert "link" in error_of(*download(server, "link.txt")[::2], 400)
    assert "link" in error_of(*download(server, "/home/user/linkdir/x")[::2], 400)
    assert target.read_bytes() == b"outside, untouched"
    assert os.path.islink(os.path.join(ws, "link.txt"))
    assert os.listdir(outside_dir) == []


def test_a_fifo_is_refused_without_hanging(server):
    fifo = os.path.join(workspace(server), "fifo")
    os.mkfifo(fifo)
    start = time.monotonic()
    assert "FIFO" in error_of(*download(server, "fifo")[::2], 400)
    assert "FIFO" in error_of(*upload_raw(server, "fifo", b"x")[::2], 400)
    assert time.monotonic() - start < 10
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode)


def test_a_folder_is_not_a_file(server):
    os.makedirs(os.path.join(workspace(server), "afolder"), exist_ok=True)
    error_of(*download(server, "afolder")[::2], 400)
    error_of(*download(server, "/home/user")[::2], 400)
    error_of(*upload_raw(server, "afolder", b"x")[::2], 400)
    error_of(*upload_raw(server, "/home/user/", b"x")[::2], 400)
    assert upload_raw(server, "plain.txt", b"x")[0] == 200
    error_of(*upload_raw(server, "plain.txt/under", b"x")[::2], 400)


def test_a_missing_file_is_a_404_json(server):
    msg = error_of(*download(server, "/home/user/no/such/file.txt")[::2], 404)
    assert "/home/user/no/such/file.txt" in msg


# --- bounds, token, prefix -----------------------------------------------------------


def test_uploads_beyond_max_upload_are_413s_and_other_routes_keep_their_bound(tmp_path):
    s = Server("--max-upload", "1000")
    try:
        assert upload_raw(s, "fits.bin", b"x" * 1000)[0] == 200
        assert upload(s, "fits-form.bin", b"x" * 1000)[0] == 200  # framing aside
        # A file past the bound, in a body within the bound and its framing's room
        # (the route refuses it), and in a body past both (http.c refuses it).
        assert "--max-upload" in error_of(*upload_raw(s, "big.bin", b"x" * 1001)[::2], 413)
        error_of(*upload(s, "big.bin", b"x" * 1001)[::2], 413)
        error_of(*upload_raw(s, "big.bin", b"x" * (1000 + 65536 + 1))[::2], 413, route=False)
        raw = raw_request(s, chunked_head(s, "bigchunk.bin"),
                          chunked(b"y" * 1500, [500, 500, 500]))
        error_of(*parse_answer(raw)[::2], 413)
        raw = raw_request(s, chunked_head(s, "bigchunk.bin"),
                          chunked(b"y" * 70000, [35000, 35000]))
        error_of(*parse_answer(raw)[::2], 413, route=False)
        with open(os.path.join(os.path.realpath(s.cwd), "grown.bin"), "wb") as f:
            f.write(b"z" * 1001)
        error_of(*download(s, "grown.bin")[::2], 413)
        assert not os.path.exists(os.path.join(s.cwd, "big.bin"))
        assert not os.path.exists(os.path.join(s.cwd, "bigchunk.bin"))
        still_serving(s)
    finally:
        s.stop()


def test_at_most_four_uploads_are_held_at_once():
    s = Server("--max-upload", "2000000")
    socks = []
    try:
        def begin(name, size=2000000):
            c = socket.create_connection(("127.0.0.1", s.port), timeout=20)
            c.sendall(("POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: token %s\r\n"
                       "Content-Type: application/octet-stream\r\nContent-Length: %d\r\n\r\n"
                       % (files_url(name), s.token, size)).encode())
            c.sendall(b"u" * (size - 1))  # all but the last byte: the body is held
            socks.append(c)
            return c

        def answer(c):
            got = b""
            while b"\r\n\r\n" not in got or len(got.partition(b"\r\n\r\n")[2]) < int(
                    re.search(rb"content-length: (\d+)", got, re.I).group(1)):
                piece = c.recv(65536)
                if not piece:
                    break
                got += piece
            return parse_answer(got)

        held = [begin("held%d.bin" % i) for i in range(4)]
        time.sleep(1)
        fifth = begin("fifth.bin")
        status, _, body = answer(fifth)
        assert "uploads" in error_of(status, body, 503, route=False)
        for c in held:
            c.sendall(b"u")
            assert answer(c)[0] == 200
        assert upload_raw(s, "after.bin", b"v" * 2000000)[0] == 200  # room again
        assert not os.path.exists(os.path.join(s.cwd, "fifth.bin"))
    finally:
        for c in socks:
            c.close()
        s.stop()


def test_max_upload_is_above_the_api_bound_by_default(server):
    big = os.urandom(3 << 20)  # 3 MiB: over the 1 MiB of the other routes
    assert upload_raw(server, "three-mib.bin", big)[0] == 200
    assert download(server, "three-mib.bin")[2] == big
    status, _, _ = request(server, "POST", "/api/sessions", b"{" + b" " * (2 << 20) + b"}",
                        {"Content-Type": "application/json"})
    assert status == 413


def test_without_the_token_or_the_secret_files_are_refused(server):
    assert upload_raw(server, "noauth.txt", b"x", token=False)[0] == 401
    assert download(server, "every.bin", token=False)[0] == 401
    wrong = "/e2b/" + "0" * 48
    assert upload(server, "noauth.txt", b"x", prefix=wrong, token=False)[0] == 401
    assert download(server, "every.bin", prefix=wrong, token=False)[0] == 401
    assert not os.path.exists(os.path.join(workspace(server), "noauth.txt"))


def test_the_e2b_prefix_reaches_the_files_without_the_token(server):
    prefix = e2b_prefix(server)
    status, _, body = upload(server, "/home/user/via-prefix.bin", EVERY_BYTE, prefix=prefix,
                             token=False)
    assert status == 200, body
    assert json.loads(body)[0]["path"] == "/home/user/via-prefix.bin"
    status, _, back = download(server, "via-prefix.bin", prefix=prefix, token=False)
    assert status == 200 and back == EVERY_BYTE


# --- envd's Connect ListDir and Stat -------------------------------------------------


def rpc(server, call, body, token=True):
    status, _, answer = request(server, "POST", "/filesystem.Filesystem/" + call,
                             json.dumps(body).encode(),
                             {"Content-Type": "application/json",
                              "Connect-Protocol-Version": "1"}, token=token)
    return status, json.loads(answer)


def test_listdir_lists_sorted_shows_links_and_does_not_follow_them(server, tmp_path):
    ws = workspace(server)
    base = os.path.join(ws, "listed")
    os.makedirs(os.path.join(base, "sub"))
    for name, data in [("b.txt", b"bb"), ("a.txt", b"a"), ("sub/c.txt", b"ccc")]:
        with open(os.path.join(base, name), "wb") as f:
            f.write(data)
    (tmp_path / "secret.txt").write_text("outside")
    os.symlink(str(tmp_path), os.path.join(base, "out"))
    os.mkfifo(os.path.join(base, "pipe"))
    status, got = rpc(server, "ListDir", {"path": "/home/user/listed", "depth": 2})
    assert status == 200, got
    entries = got["entries"]
    assert [e["path"] for e in entries] == [
        "/home/user/listed/a.txt", "/home/user/listed/b.txt", "/home/user/listed/out",
        "/home/user/listed/sub", "/home/user/listed/sub/c.txt"]
    by = {e["name"]: e for e in entries}
    assert by["b.txt"]["type"] == "FILE_TYPE_FILE" and by["b.txt"]["size"] == 2
    assert by["sub"]["type"] == "FILE_TYPE_DIRECTORY"
    assert by["out"]["type"] == "FILE_TYPE_SYMLINK"
    assert by["out"]["symlinkTarget"] == str(tmp_path)
    assert by["a.txt"]["permissions"].startswith("-r")
    assert re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$", by["a.txt"]["modifiedTime"])
    status, got = rpc(server, "ListDir", {"path": "listed"})
    assert status == 200 and len(got["entries"]) == 4  # depth 1


def test_listdir_errors_are_connect_errors(server):
    status, got = rpc(server, "ListDir", {"path": "no_such_folder", "depth": 1})
    assert status == 404 and got["code"] == "not_found", got
    status, got = rpc(server, "ListDir", {"path": "../x", "depth": 1})
    assert status == 400 and got["code"] == "invalid_argument", got
    status, got = rpc(server, "ListDir", {"path": "listed", "depth": 99})
    assert status == 400 and got["code"] == "invalid_argument", got
    status, got = rpc(server, "ListDir", {"depth": 1})
    assert status == 400 and got["code"] == "invalid_argument", got
    status, got = rpc(server, "MakeDir", {"path": "made"})
    assert status == 501 and got["code"] == "unimplemented", got
    assert not os.path.exists(os.path.join(workspace(server), "made"))
    status, _, _ = request(server, "POST", "/filesystem.Filesystem/ListDir", b"{}",
                        {"Content-Type": "application/json"}, token=False)
    assert status == 401


def test_stat_gives_an_entry_or_not_found(server):
    assert upload_raw(server, "statted.txt", b"12345")[0] == 200
    status, got = rpc(server, "Stat", {"path": "/home/user/statted.txt"})
    assert status == 200, got
    assert got["entry"]["name"] == "statted.txt" and got["entry"]["size"] == 5
    assert got["entry"]["type"] == "FILE_TYPE_FILE"
    status, got = rpc(server, "Stat", {"path": "/home/user"})
    assert status == 200 and got["entry"]["type"] == "FILE_TYPE_DIRECTORY", got
    status, got = rpc(server, "Stat", {"path": "statted-not.txt"})
    assert status == 404 and got["code"] == "not_found", got


# --- E2B's SDK -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sdk(server):
    url = "http://127.0.0.1:%d%s" % (server.port, e2b_prefix(server))
    return run_e2b_client(server, "e2b_files_client.mjs", url)


def test_the_sdk_writes_several_files_at_once(sdk):
    assert sdk["write_files"] == [
        {"path": "/home/user/sdk/a.txt", "name": "a.txt", "type": "file"},
        {"path": "/home/user/sdk/b.txt", "name": "b.txt", "type": "file"}], sdk


def test_the_sdk_writes_from_a_stream_chunked(sdk):
    s = sdk["stream_write"]
    assert s["info"] == {"path": "/home/user/streamed.bin", "name": "streamed.bin",
                         "type": "file"}, s
    assert s["read_length"] == 256 * 1024 and s["same_bytes"] is True


def test_the_sdk_writes_octet_stream(sdk):
    assert sdk["octet_write"]["back"] == "raw bytes", sdk["octet_write"]


def test_the_sdk_lists_and_stats(sdk):
    assert sdk["list"] == [
        {"name": "a.txt", "type": "file", "path": "/home/user/sdk/a.txt", "size": 1},
        {"name": "b.txt", "type": "file", "path": "/home/user/sdk/b.txt", "size": 2}], sdk
    assert "/home/user/sdk/a.txt" in sdk["list_deep"], sdk["list_deep"]
    assert sdk["list_missing"]["name"] == "FileNotFoundError", sdk["list_missing"]
    assert sdk["info"] == {"name": "b.txt", "type": "file", "path": "/home/user/sdk/b.txt",
                           "size": 2}
    assert sdk["exists"] == {"file": True, "folder": True, "missing": False}


def test_the_sdk_meets_clear_errors_for_what_is_left_out(sdk):
    assert "unimplemented" in sdk["make_dir"]["threw"], sdk["make_dir"]
    assert "unimplemented" in sdk["remove"]["threw"], sdk["remove"]
    assert "compressed uploads are not supported" in sdk["gzip"]["threw"], sdk["gzip"]
    assert sdk["outside"]["name"] == "InvalidArgumentError", sdk["outside"]
