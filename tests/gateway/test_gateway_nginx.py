"""Two `sandpit serve` instances behind nginx (Debian's nginx-light), with the
configuration docs/gateway.md gives: new kernels spread over the instances,
every later request of a kernel (REST and its WebSocket) reaches the instance
that has it, and a full instance (--max-kernels) hands a new kernel to the
next. The configuration is read out of docs/gateway.md, so that the page and
the test cannot drift apart."""

import os
import re
import shutil
import subprocess

import pytest

from .gateway_testing import LIMIT, ROOT, SandpitServe, Server, free_port, wait_for

NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
DOC = os.path.join(ROOT, "docs", "gateway.md")


def doc_config():
    """The nginx configuration in docs/gateway.md (its ```nginx block)."""
    with open(DOC) as f:
        text = f.read()
    m = re.search(r"```nginx\n(.*?)```", text, re.S)
    assert m, "docs/gateway.md has no nginx block"
    return m.group(1)


class Nginx(Server):
    kind = "nginx"

    def __init__(self, root, backends, token):
        port = free_port()
        conf = doc_config()
        for i, b in enumerate(backends):
            conf = conf.replace("server 127.0.0.1:%d " % (8890 + i),
                                "server 127.0.0.1:%d " % b.port)
        conf = conf.replace("listen 127.0.0.1:8888;", "listen 127.0.0.1:%d;" % port)
        assert all(":%d " % b.port in conf for b in backends) and ":%d;" % port in conf, conf
        prefix = os.path.join(str(root), "nginx")
        os.makedirs(os.path.join(prefix, "logs"), exist_ok=True)
        head = ("user root;\n" if os.geteuid() == 0 else "") + (
            "worker_processes 1;\npid %s/nginx.pid;\nerror_log %s/logs/error.log;\n"
            "events { worker_connections 256; }\nhttp {\naccess_log %s/logs/access.log;\n"
            "client_body_temp_path %s/body;\nproxy_temp_path %s/proxy;\n"
            % (prefix, prefix, prefix, prefix, prefix))
        with open(os.path.join(prefix, "nginx.conf"), "w") as f:
            f.write(head + conf + "}\n")
        argv = [NGINX, "-p", prefix, "-c", os.path.join(prefix, "nginx.conf"),
                "-g", "daemon off;"]
        super().__init__(argv, root, port, token)

    def log(self):
        text = super().log()
        for name in ("error.log", "access.log"):
            try:
                with open(os.path.join(str(self.root), "nginx", "logs", name)) as f:
                    text += "\n--- %s ---\n%s" % (name, f.read()[-5000:])
            except OSError:
                pass
        return text


@pytest.fixture
def cluster(jupyter_dir, tmp_path_factory):
    if not os.path.exists(NGINX):
        pytest.fail("nginx is not installed: run make deps (nginx-light)")
    started = []

    def make(*args):
        token = "t" + os.urandom(16).hex()
        backends = [SandpitServe(tmp_path_factory.mktemp("serve"), *args, token=token)
                    for _ in range(2)]
        started.extend(backends)
        lb = Nginx(tmp_path_factory.mktemp("nginx"), backends, token)
        started.append(lb)
        return lb, backends
    yield make
    for server in reversed(started):
        if isinstance(server, Nginx):
            server.proc.terminate()
            try:
                server.proc.wait(10)
            except subprocess.TimeoutExpired:
                server.proc.kill()
        else:
            server.stop()


def owner(backends, kid):
    return [i for i, b in enumerate(backends) if kid in [k["id"] for k in b.kernels()]]


def test_kernels_stick_to_their_instance(cluster):
    lb, backends = cluster()
    # POSTs only (nginx's round robin counts every request, GETs too).
    kids = [lb.ok("POST", "/api/kernels", {"name": "sandpit"}, status=201)["id"]
            for _ in range(4)]
    homes = {kid: owner(backends, kid) for kid in kids}
    assert all(len(h) == 1 for h in homes.values()), homes
    assert {h[0] for h in homes.values()} == {0, 1}, "new kernels all went to one instance"
    for i, kid in enumerate(kids):
        assert lb.ok("GET", "/api/kernels/" + kid)["id"] == kid
        ws = lb.ws(kid)
        try:
            ws.wait_ready()
            ws.run("n = %d" % i)
            msg_id = ws.send("shell", "execute_request", {
                "code": "import time\nprint('sleeping', flush=True)\ntime.sleep(60)",
                "silent": False, "store_history": True, "user_expressions": {},
                "allow_stdin": False, "stop_on_error": True})
            ws.next(lambda m: m["msg_type"] == "stream" and "sleeping" in m["content"]["text"])
            assert lb.request("POST", "/api/kernels/%s/interrupt" % kid)[0] == 204
            assert ws.reply(msg_id)["content"]["ename"] == "KeyboardInterrupt"
            assert ws.run("print(n)") == "%d\n" % i
        finally:
            ws.close()
    # A restart through the balancer keeps the kernel on its instance.
    status, _, model = lb.request("POST", "/api/kernels/%s/restart" % kids[0])
    assert status == 200 and model["id"] == kids[0]
    assert owner(backends, kids[0]) == homes[kids[0]]
    for kid in kids:
        assert lb.request("DELETE", "/api/kernels/" + kid)[0] == 204
    assert wait_for("every kernel gone", lambda: all(b.kernels() == [] for b in backends),
                    timeout=LIMIT)
    status, _, _ = lb.request("GET", "/api/kernels/" + kids[0])
    assert status == 404


def test_a_full_instance_hands_over(cluster):
    lb, backends = cluster("--max-kernels", "2")
    kids = [lb.ok("POST", "/api/kernels", {"name": "sandpit"}, status=201)["id"]
            for _ in range(4)]
    assert sorted(len(b.kernels()) for b in backends) == [2, 2]
    status, _, body = lb.request("POST", "/api/kernels", {"name": "sandpit"})
    assert status == 403, (status, body)
    for kid in kids:
        assert lb.request("DELETE", "/api/kernels/" + kid)[0] == 204
    assert all(b.kernels() == [] for b in backends)
