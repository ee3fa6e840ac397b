"""Writes the seed corpus of the fuzz harnesses into tests/fuzz/corpus/, as files named
seed-* (run it again after changing a harness's input format). The other files there
(named by their SHA-1) are what ten minutes of `make fuzz` per harness found that
adds coverage, merged in with `build-fuzz/fuzz_<name> -merge=1 tests/fuzz/corpus/<name>
build-fuzz/corpus/<name>`; an input that crashed a harness would be kept there too,
as crash-*, once fixed.

    /usr/bin/python3 tests/fuzz/seeds.py
"""

import hashlib
import hmac
import json
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SEP = b"\x1e"  # the frame separator of fuzz_frames.h


def write(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "seed-" + name), "wb") as f:
        f.write(data)


def header(msg_type, msg_id="m1"):
    return json.dumps({"msg_id": msg_id, "msg_type": msg_type, "session": "s",
                       "username": "u", "date": "2024-01-02T03:04:05.000006Z",
                       "version": "5.3"}).encode()


def sign(parts, key=b"k"):
    h = hmac.new(key, digestmod=hashlib.sha256)
    for p in parts:
        h.update(p)
    return h.hexdigest().encode()


def message(parts, idents=(b"client",), buffers=(), signature=None):
    sig = sign(parts) if signature is None else signature
    return SEP.join(list(idents) + [b"<IDS|MSG>", sig] + list(parts) + list(buffers))


execute = [header("execute_request"), b"{}", b"{}",
           json.dumps({"code": "print('hi')", "silent": False}).encode()]
messages = {
    "execute": message(execute),
    "kernel-info": message([header("kernel_info_request"), b"{}", b"{}", b"{}"]),
    "no-idents": message(execute, idents=()),
    "many-idents": message(execute, idents=[b"i%d" % i for i in range(40)]),
    "buffers": message([header("comm_msg"), b"{}", b"{}",
                        b'{"comm_id": "c", "data": {}}'], buffers=[b"\x00\x01", b""]),
    "unicode": message([header("execute_request"), b"{}", b"{}",
                        '{"code": "s = \'\u00e9\u4e2d\U0001f600\'"}'.encode()]),
    "escapes": message([header("execute_request"), b"{}", b"{}",
                        b'{"code": "\\u00e9\\ud83d\\ude00\\n\\t\\"\\\\"}']),
    "nul": message([header("execute_request"), b"{}", b"{}", b'{"code": "\\u0000"}']),
    "surrogate": message([header("execute_request"), b"{}", b"{}",
                          b'{"code": "\\ud800"}']),
    "not-utf8": message([header("execute_request"), b"{}", b"{}", b'{"code": "\xff"}']),
    "deep": message([header("execute_request"), b"{}", b"[" * 300 + b"]" * 300,
                     b"{}"]),
    "deep-string": message([header("execute_request"), b"{}", b"{}",
                            b'{"code": "' + b"[" * 300 + b'\\""}']),
    "compact": message([b'{"msg_id":"m1","msg_type":"x"}', b"{}", b"{}", b"{}"]),
    "parent": message([header("input_reply", "m2"),
                       header("input_request"), b'{"a": [1, 2.5, null, true]}',
                       b'{"value": "x"}']),
    "no-type": message([b'{"msg_id": "m"}', b"{}", b"{}", b"{}"]),
    "not-object": message([b"[]", b"{}", b"{}", b"{}"]),
    "too-few": SEP.join([b"<IDS|MSG>", b"sig", b"{}", b"{}"]),
    "no-delimiter": SEP.join([b"a", b"b", b"{}", b"{}", b"{}", b"{}"]),
    "upper-sig": message(execute, signature=sign(execute).upper()),
    "empty": b"",
}
for name, data in messages.items():
    write("wire", name, data)
    write("msg", "harness-signs-" + name, b"\x01" + data)
for name in ("execute", "kernel-info", "upper-sig", "buffers"):
    write("msg", "as-given-" + name, b"\x00" + messages[name])
write("msg", "unsigned-execute", b"\x02" + message(execute, signature=b""))

conn = {"shell_port": 5001, "iopub_port": 5002, "stdin_port": 5003,
        "control_port": 5004, "hb_port": 5005, "ip": "127.0.0.1", "key": "a0436f6c-1916",
        "transport": "tcp", "signature_scheme": "hmac-sha256", "kernel_name": "sandpit"}
write("connection", "good", json.dumps(conn).encode())
write("connection", "ipc", json.dumps(dict(conn, transport="ipc", ip="/tmp/k")).encode())
write("connection", "ipv6", json.dumps(dict(conn, ip="::1")).encode())
write("connection", "long-ip", json.dumps(dict(conn, ip="x" * 200)).encode())
write("connection", "no-key", json.dumps({k: v for k, v in conn.items() if k != "key"}).encode())
write("connection", "bad-port", json.dumps(dict(conn, hb_port=70000)).encode())
write("connection", "duplicate", b'{"ip": "a", "ip": "b"}')
write("connection", "scheme", json.dumps(dict(conn, signature_scheme="hmac-md5")).encode())
write("connection", "not-object", b"[1, 2]")


def frame(js, buffers=()):
    body = struct.pack("=I", len(js)) + js
    for b in buffers:
        body += struct.pack("=I", len(b)) + b
    return struct.pack("=I", len(body)) + body


stream = frame(b'{"type": "hello"}') + frame(b'{"type": "iopub"}', [b"abc", b""])
write("link", "two-frames-whole", b"\xff" + stream)
write("link", "two-frames-bytewise", b"\x00" + stream)
write("link", "truncated", b"\x07" + stream[:-3])
write("link", "bad-inner-length", b"\xff" + struct.pack("=II", 8, 100) + b"xxxx")
write("link", "too-large", b"\xff" + struct.pack("=I", 0xFFFFFFFF))
write("link", "too-small", b"\xff" + struct.pack("=I", 2) + b"xx")
write("link", "many-buffers", b"\xff" + frame(b"{}", [b"b"] * 70))
# iopub frames with raw text beside the JSON (kernel/link/frames.h)
raw_stream = b'{"type": "iopub", "msg_type": "stream", "content": {"name": "stdout"}, ' \
             b'"raw": [["text"]]}'
raw_display = (b'{"type": "iopub", "msg_type": "display_data", "content": {"data": '
               b'{"text/plain": "x"}, "metadata": {}}, "raw": [["data", "image/png"], '
               b'["data", "text/html"]]}')
write("link", "raw-stream", b"\xff" + frame(raw_stream, ["caf\u00e9 \"q\" \\\n".encode()]))
write("link", "raw-display", b"\xff" + frame(raw_display, [b"comm", b"iVBORw0KGgo=",
                                                          "<b>\u20ac</b>".encode()]))
write("link", "raw-not-utf8", b"\xff" + frame(raw_stream, [b"\xc0\xaf\xed\xa0\x80"]))


# active: the first byte's lowest bit allows remote pictures; the rest is markup.
for name, markup in (("table", b'<table border="1" class="dataframe"><tr><th>a</th>'
                                b'<td style="color: #333">1</td></tr></table>'),
                     ("svg", b'<?xml version="1.0"?><!DOCTYPE svg PUBLIC "-//W3C//DTD SVG 1.1//EN"'
                             b' "x.dtd"><svg xmlns:xlink="http://www.w3.org/1999/xlink"><!-- a -->'
                             b'<defs><style type="text/css">*{stroke: none}</style></defs>'
                             b'<g clip-path="url(#p1)"><use xlink:href="#m1" x="1"/></g></svg>'),
                     ("handler", b'<img src=x onerror=alert(1)>'),
                     ("comment", b'<!--><img src=x onerror=alert(1)>-->'),
                     ("markdown", b'# T\n\n[x](javascript:alert(1)) $\\href{x}{y}$'),
                     ("quotes", b'<b title="a &quot; b">"&amp;"</b><script>x</script>')):
    write("active", name, b"\x00" + markup)
    write("active", name + "-remote", b"\x01" + markup)


# upload: the first byte picks the part of POST /files (tests/fuzz/fuzz_upload.c):
# 0 mod 3 the chunked decoder (its value / 3 + 1 the piece size), 1 mod 3 the
# multipart walker (a Content-Type line, then the body), 2 mod 3 the path mapping.
for name, framed in (("chunked", b"5\r\nhello\r\n1;ext=1\r\n \r\n0\r\nX-T: y\r\n\r\n"),
                     ("chunked-bytes", b"100\r\n" + bytes(range(256)) + b"\r\n0\r\n\r\n"),
                     ("chunked-bare-lf", b"5\nhello\r\n0\r\n\r\n")):
    write("upload", name, b"\x00" + framed)
    write("upload", name + "-pieces", b"\x0c" + framed)
form = (b"multipart/form-data; boundary=----formdata-undici-0\n"
        b"------formdata-undici-0\r\n"
        b"Content-Disposition: form-data; name=\"file\"; filename=\"/home/user/a \\\"b\\\".txt\"\r\n"
        b"Content-Type: application/octet-stream\r\n\r\n"
        b"line\r\n--not it\r\n\r\n------formdata-undici-0\r\n"
        b"Content-Disposition: form-data; name=field\r\n\r\nx\r\n------formdata-undici-0--\r\n")
write("upload", "multipart", b"\x01" + form)
write("upload", "multipart-preamble", b"\x01" + b"multipart/form-data; boundary=b\n"
      b"preamble\r\n--b\r\nContent-Disposition: form-data; name=f\r\n\r\n\r\n--b--")
for name, path in (("home", b"/home/user/a/./b//c.txt"), ("relative", b"a/b"),
                   ("dotdot", b"a/../../etc"), ("tilde", b"~/x"), ("nul", b"a\x00b"),
                   ("outside", b"/etc/passwd")):
    write("upload", "path-" + name, b"\x02" + path)
