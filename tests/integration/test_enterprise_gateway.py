"""sandpit started by Jupyter Enterprise Gateway, with the gateway's side played
from its own code (the gateway is not packaged in Debian, so its behaviour is
written here from its sources, file by file):

- the kernelspec is the one `sandpit install --enterprise-gateway distributed`
  writes, its placeholders filled in as RemoteKernelManager.format_kernel_cmd
  fills them (services/kernels/remotemanager.py: a regular expression over
  each argument, unknown names left alone), and run as the
  DistributedProcessProxy runs it on a remote host (distributed.py,
  _build_startup_command: exports, then `nohup ARGV >> LOG 2>&1 & echo $!`
  through SSH's shell, which then exits);
- the public key is made and passed as ResponseManager makes it (1024-bit RSA,
  the PEM body without header, footer and line breaks), and the payload is read
  from the response address to the end of the stream and opened as
  ResponseManager._decode_payload opens it (services/processproxies/processproxy.py);
- the client connects to the reported ports on the host's address (the
  gateway replaces "ip" with it), and the communication port gets what
  RemoteProcessProxy._send_listener_request sends: one connection per request,
  json.dumps of it, then close (after shutdown(SHUT_WR) for a shutdown);
- for Kubernetes, the pod template that install writes is rendered as
  launch_kubernetes.py renders it (Jinja2, trim_blocks and lstrip_blocks, its
  yaml_safe filter), and the container's command is run with the environment
  that launcher gives the pod, $(NAME) expanded as Kubernetes expands it.
"""

import base64
import glob
import json
import os
import random
import re
import select
import shlex
import signal
import socket
import stat
import subprocess
import time
import uuid

import pytest
from cryptography.hazmat.primitives import padding as sym_padding
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import padding, rsa
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from jupyter_client import BlockingKernelClient

from sandpit_testing import SANDPIT, Kernel, private_base

LIMIT = 30
DISTRIBUTED = "enterprise_gateway.services.processproxies.distributed.DistributedProcessProxy"
KUBERNETES = "enterprise_gateway.services.processproxies.k8s.KubernetesProcessProxy"
LAUNCHER_OPTIONS = ["--RemoteProcessProxy.kernel-id", "{kernel_id}",
                   "--RemoteProcessProxy.response-address", "{response_address}",
                   "--RemoteProcessProxy.public-key", "{public_key}",
                   "--RemoteProcessProxy.port-range", "{port_range}"]


class Gateway:
    """The gateway's response manager: a key pair and a response address."""

    def __init__(self):
        self.private_key = rsa.generate_private_key(public_exponent=65537, key_size=1024)
        pem = self.private_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        self.public_key = (pem.decode().replace("-----BEGIN PUBLIC KEY-----", "")
                           .replace("-----END PUBLIC KEY-----", "").replace("\n", ""))
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.response_address = "127.0.0.1:%d" % self.sock.getsockname()[1]

    def close(self):
        self.sock.close()

    def receive(self, proc, timeout=LIMIT):
        """The connection info the kernel process proc reports, opened; fails if
        proc ends first."""
        deadline = time.monotonic() + timeout
        while not select.select([self.sock], [], [], 0.2)[0]:
            assert proc.poll() is None, "the kernel exited (%s) before reporting" % proc.returncode
            assert time.monotonic() < deadline, "no report within %d s" % timeout
        conn, _ = self.sock.accept()
        conn.settimeout(timeout)
        data = b""
        with conn:
            while True:
                chunk = conn.recv(1024)
                if not chunk:
                    break
                data += chunk
        return self.decode(data)

    def decode(self, data):
        payload = json.loads(base64.b64decode(data))
        assert payload["version"] == 1 and type(payload["version"]) is int, payload
        aes_key = self.private_key.decrypt(base64.b64decode(payload["key"]),
                                           padding.PKCS1v15())
        assert len(aes_key) == 16
        decryptor = Cipher(algorithms.AES(aes_key), modes.ECB()).decryptor()
        padded = decryptor.update(base64.b64decode(payload["conn_info"])) + decryptor.finalize()
        unpadder = sym_padding.PKCS7(128).unpadder()
        return json.loads(unpadder.update(padded) + unpadder.finalize())


def format_kernel_cmd(argv, ns):
    pat = re.compile(r"\{([A-Za-z0-9_]+)\}")
    return [pat.sub(lambda m: ns.get(m.group(1), m.group()), arg) for arg in argv]


def send_listener_request(port, request, shutdown_socket=False):
    with socket.socket() as s:
        s.settimeout(LIMIT)
        s.connect(("127.0.0.1", port))
        s.send(json.dumps(request).encode("utf-8"))
        if shutdown_socket:
            s.shutdown(socket.SHUT_WR)


def port_range():
    """A range of 1,000 ports (the gateway's smallest) somewhere high."""
    low = random.randrange(20000, 59000)
    return low, low + 999


def install(jupyter_dir, *args):
    name = "sandpit-eg-" + uuid.uuid4().hex[:8]
    subprocess.run([SANDPIT, "install", "--prefix", str(jupyter_dir), "--name", name, *args],
                   check=True, stdout=subprocess.DEVNULL)
    folder = os.path.join(str(jupyter_dir), "share", "jupyter", "kernels", name)
    with open(os.path.join(folder, "kernel.json")) as f:
        return folder, json.load(f)


def connect(info):
    """A client on the reported ports, on the host's address as the gateway does."""
    kc = BlockingKernelClient()
    kc.load_connection_info(dict(info, ip="127.0.0.1"))
    kc.start_channels()
    kc.wait_for_ready(timeout=LIMIT)
    return kc


def end(proc):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(LIMIT)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def alive(pid):
    """Whether pid runs (a zombie no longer does)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def wait_gone(pid, timeout=LIMIT):
    deadline = time.monotonic() + timeout
    while alive(pid):
        assert time.monotonic() < deadline, "process %d still runs after %d s" % (pid, timeout)
        time.sleep(0.05)


class Detached:
    """A kernel started as the DistributedProcessProxy starts one over SSH: the
    shell that starts it has exited, so it is nobody's child here."""

    def __init__(self, argv, cwd, log, username="alice"):
        # The gateway's environment may hold JPY_PARENT_PID (it is a Jupyter
        # application); exported over SSH it names a process that is not the
        # kernel's parent, and the kernel must not end because of it. The
        # client's KERNEL_* variables are exported too (KERNEL_USERNAME always).
        cmd = "export JPY_PARENT_PID=%d;" % os.getpid()
        if username is not None:
            cmd += "export KERNEL_USERNAME=%s;" % shlex.quote(username)
        cmd += "nohup"
        cmd += "".join(" " + shlex.quote(a) for a in argv)
        cmd += " >> %s 2>&1 & echo $!" % shlex.quote(str(log))
        out = subprocess.run(["sh", "-c", cmd], cwd=cwd, capture_output=True, text=True,
                             timeout=LIMIT, check=True).stdout
        self.pid = int(out.strip().splitlines()[-1])

    def poll(self):
        return None if alive(self.pid) else 0

    def end(self):
        if alive(self.pid):
            os.kill(self.pid, signal.SIGTERM)
            try:
                wait_gone(self.pid)
            except AssertionError:
                os.kill(self.pid, signal.SIGKILL)


class Remote:
    pass


@pytest.fixture(scope="module")
def remote(jupyter_dir, tmp_path_factory):
    """A kernel started from the distributed kernelspec, as the gateway starts
    one, and a client on it."""
    gw = Gateway()
    _, spec = install(jupyter_dir, "--enterprise-gateway", "distributed", "--timeout", "120",
                      "--log-level", "info")
    low, high = port_range()
    r = Remote()
    r.gateway, r.range, r.kernel_id = gw, (low, high), str(uuid.uuid4())
    r.argv = format_kernel_cmd(spec["argv"], {
        "kernel_id": r.kernel_id, "response_address": gw.response_address,
        "public_key": gw.public_key, "port_range": "%d..%d" % (low, high)})
    r.log = tmp_path_factory.mktemp("log") / "kernel.log"
    r.proc = Detached(r.argv, str(tmp_path_factory.mktemp("ws")), r.log)
    r.kc = None
    try:
        r.info = gw.receive(r.proc)
        r.folder, r.connection_file = connection_file_of(r)
        r.kc = connect(r.info)
        r.kernel = Kernel(None, r.kc)
        yield r
    finally:
        if r.kc:
            r.kc.stop_channels()
        r.proc.end()
        gw.close()


def log_of(r):
    with open(r.log) as f:
        return f.read()


def connection_file_of(r):
    """The folder of the kernel's own that holds its connection file, and the
    file: TMPDIR/sandpit-user-<uid>/sandpit-<pid>-gateway-XXXXXXXX/kernel-<kernel
    id>.json."""
    folders = glob.glob(os.path.join(private_base(), "sandpit-%d-gateway-*" % r.proc.pid))
    assert len(folders) == 1, folders
    path = os.path.join(folders[0], "kernel-%s.json" % r.kernel_id)
    assert "the connection file is %s" % path in log_of(r)
    return folders[0], path


def test_the_report_is_what_the_gateway_reads(remote):
    info, (low, high) = remote.info, remote.range
    assert info["kernel_id"] == remote.kernel_id
    assert info["pid"] == remote.proc.pid
    assert info["pgid"] == os.getpgid(remote.proc.pid)
    assert info["transport"] == "tcp" and info["ip"] == "0.0.0.0"
    assert info["signature_scheme"] == "hmac-sha256" and len(info["key"]) >= 32
    ports = [info[n + "_port"] for n in ("shell", "iopub", "stdin", "control", "hb", "comm")]
    assert len(set(ports)) == 6
    assert all(low <= p <= high for p in ports), (ports, low, high)
    # The connection file is in a folder of the kernel's own, both for the owner
    # only, and not in the shared runtime folder.
    folder, path = remote.folder, remote.connection_file
    assert stat.S_IMODE(os.stat(folder).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert os.stat(folder).st_uid == os.stat(path).st_uid == os.getuid()
    assert os.listdir(folder) == [os.path.basename(path)]
    with open(path) as f:
        assert json.load(f)["key"] == info["key"]
    runtime = os.environ["JUPYTER_RUNTIME_DIR"]
    assert not glob.glob(os.path.join(runtime, "*%s*" % remote.kernel_id))


def test_cells_run_and_cannot_read_the_connection_file(remote):
    """The worker is not given the connection file's folder: a cell can neither
    read the file nor remove, replace or add to it; its own temporary folder
    is another."""
    k = remote.kernel
    assert k.run("x = 6 * 7\nprint(x)") == "42\n"
    folder, path = remote.folder, remote.connection_file
    for code in ("open(%r).read()" % path, "open(%r, 'rb').read(1)" % path,
                 "import os\nos.unlink(%r)" % path,
                 "open(%r, 'w').write('{}')" % path,
                 "open(%r, 'w').write('x')" % os.path.join(folder, "planted.json")):
        reply, _ = k.execute(code)
        assert reply["content"]["status"] == "error", code
        assert reply["content"]["ename"] in ("FileNotFoundError", "PermissionError",
                                             "OSError"), (code, reply["content"])
    with open(path) as f:
        assert json.load(f)["key"] == remote.info["key"], "the file is as it was"
    assert os.listdir(folder) == [os.path.basename(path)]
    tmp = k.run("import tempfile\nprint(tempfile.gettempdir())").strip()
    assert os.path.realpath(tmp) != os.path.realpath(folder)


def test_a_poll_changes_nothing(remote):
    send_listener_request(remote.info["comm_port"], {"signum": 0})
    assert remote.kernel.run("print(x)") == "42\n"
    # A cell that outlasts the second after which a kernel started by a Jupyter
    # client looks at its parent: a gateway's kernel must not.
    assert remote.kernel.run("import time\ntime.sleep(1.5)\nprint(x)") == "42\n"
    assert remote.proc.poll() is None


def test_signal_2_interrupts_the_running_cell_and_keeps_state(remote):
    k = remote.kernel
    msg_id = k.kc.execute("import time\nprint('started', flush=True)\n"
                          "for _ in range(1200):\n    time.sleep(0.1)")
    k.wait_for_line(msg_id, "started")
    send_listener_request(remote.info["comm_port"], {"signum": 2})
    reply = k.shell_reply(msg_id, timeout=LIMIT)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    k.iopub_until_idle(msg_id)
    assert k.run("print(x)") == "42\n"


def test_garbage_on_the_port_does_not_disturb_the_kernel(remote):
    port = remote.info["comm_port"]
    idle = socket.create_connection(("127.0.0.1", port), timeout=LIMIT)
    for junk in (b"hello", b"\xff" * 10000, b'{"signum": "two"}', b"[]"):
        with socket.create_connection(("127.0.0.1", port), timeout=LIMIT) as s:
            try:
                s.sendall(junk)
            except OSError:
                pass  # the kernel may close a flood before it is all sent
    assert remote.kernel.run("print(x + 1)") == "43\n"
    send_listener_request(port, {"signum": 0})
    idle.close()
    assert remote.proc.poll() is None
    assert "dropped" in log_of(remote)


def test_shutdown_ends_the_kernel(remote):
    port = remote.info["comm_port"]
    send_listener_request(port, {"shutdown": 1}, shutdown_socket=True)
    wait_gone(remote.proc.pid)
    with pytest.raises(ConnectionRefusedError):
        send_listener_request(port, {"signum": 0})
    assert not os.path.exists(remote.connection_file)
    assert not os.path.exists(remote.folder), "the folder goes with its file"
    log = log_of(remote)
    assert "the gateway asked the kernel to shut down" in log
    assert "kernel stopped" in log


def run_failing(args, timeout=LIMIT, env=None):
    p = subprocess.run([SANDPIT, "kernel", *args], capture_output=True, text=True,
                       timeout=timeout, env=env)
    return p.returncode, p.stderr


def test_an_unreachable_response_address_is_a_clear_error(jupyter_dir, tmp_path):
    gw = Gateway()
    gw.close()  # nothing listens there now
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    rc, err = run_failing(["--RemoteProcessProxy.kernel-id", "k-1",
                           "--RemoteProcessProxy.response-address", gw.response_address,
                           "--RemoteProcessProxy.public-key", gw.public_key,
                           "--RemoteProcessProxy.spark-context-initialization-mode", "none"],
                          env=dict(os.environ, TMPDIR=str(tmp)))
    assert rc != 0
    assert "cannot reach the gateway's response address %s" % gw.response_address in err
    assert "Connection refused" in err
    assert os.listdir(private_base(str(tmp))) == [], "the connection file and its folder are removed"


@pytest.mark.parametrize("key, why", [
    ("not a key!", "is not base64"),
    (base64.b64encode(b"\x30\x82" + os.urandom(160)).decode(), "not an RSA public key"),
])
def test_a_malformed_public_key_is_a_clear_error(jupyter_dir, key, why):
    gw = Gateway()
    try:
        rc, err = run_failing(["--RemoteProcessProxy.kernel-id", "k-2",
                               "--RemoteProcessProxy.response-address", gw.response_address,
                               "--RemoteProcessProxy.public-key", key])
        assert rc == 2, err
        assert "sandpit kernel: the gateway's public key" in err and why in err, err
        assert not select.select([gw.sock], [], [], 0)[0]  # nothing was sent
    finally:
        gw.close()


def test_spark_modes_other_than_none_are_refused(jupyter_dir):
    rc, err = run_failing(["--RemoteProcessProxy.spark-context-initialization-mode", "eager"])
    assert rc == 2
    assert "takes only none" in err and "sandpit has no Spark context" in err


def test_the_kernelspecs_name_the_process_proxies_and_placeholders(jupyter_dir):
    _, dist = install(jupyter_dir, "--enterprise-gateway", "distributed", "--memory", "512")
    assert dist["metadata"]["process_proxy"] == {"class_name": DISTRIBUTED}
    assert dist["argv"][:2] == [SANDPIT, "kernel"]
    assert dist["argv"][2:10] == LAUNCHER_OPTIONS
    assert dist["argv"][10:] == ["--memory", "512"]
    assert "{connection_file}" not in dist["argv"]

    folder, k8s = install(jupyter_dir, "--enterprise-gateway", "kubernetes")
    proxy = k8s["metadata"]["process_proxy"]
    assert proxy["class_name"] == KUBERNETES
    assert proxy["config"] == {"image_name": "sandpit:latest"}
    assert k8s["argv"] == ["python", "{resource_dir}/scripts/launch_kubernetes.py",
                           *LAUNCHER_OPTIONS]
    assert os.path.isfile(os.path.join(folder, "scripts", "kernel-pod.yaml.j2"))
    _, named = install(jupyter_dir, "--enterprise-gateway", "kubernetes",
                       "--image", "registry.example/sandpit:1.0")
    assert named["metadata"]["process_proxy"]["config"]["image_name"] == \
        "registry.example/sandpit:1.0"

    for bad in (["--enterprise-gateway", "yarn"],
                ["--enterprise-gateway", "distributed", "--image", "x"],
                ["--image", "x"]):
        p = subprocess.run([SANDPIT, "install", "--prefix", str(jupyter_dir), *bad],
                           capture_output=True, text=True)
        assert p.returncode != 0 and "--enterprise-gateway" in p.stderr, (bad, p.stderr)


def yaml_safe(value):
    """launch_kubernetes.py's yaml_safe filter."""
    import yaml
    if isinstance(value, str):
        return yaml.dump(value, default_style='"', width=10000).strip()
    if isinstance(value, (dict, list)):
        return yaml.dump(value, default_flow_style=True, width=10000).strip()
    return yaml.dump(value, width=10000).replace("\n...", "").strip()


def render_pod(folder, keywords, with_yaml_safe=True):
    """As launch_kubernetes.py renders it: 3.3.0 and later define yaml_safe, 3.2
    does not."""
    import yaml
    from jinja2 import Environment, FileSystemLoader, select_autoescape
    env = Environment(loader=FileSystemLoader(os.path.join(folder, "scripts")),
                      trim_blocks=True, lstrip_blocks=True,
                      autoescape=select_autoescape(disabled_extensions=("j2", "yaml"),
                                                   default_for_string=True, default=True))
    if with_yaml_safe:
        env.filters["yaml_safe"] = yaml_safe
    return yaml.safe_load(env.get_template("/kernel-pod.yaml.j2").render(**keywords))


POD_KEYWORDS = {
    "kernel_pod_name": "alice-k1", "kernel_namespace": "kernels",
    "kernel_service_account_name": "default", "kernel_image": "registry.example/sandpit:1.0",
    "kernel_memory_limit": "2Gi", "kernel_cpus": "500m", "kernel_working_dir": "/workspace",
    "kernel_volume_mounts": [{"name": "work", "mountPath": "/workspace"}],
    "kernel_volumes": [{"name": "work", "persistentVolumeClaim": {"claimName": "w"}}]}


def test_the_pod_template_renders_with_the_launchers_of_3_2_and_3_3(jupyter_dir):
    """Enterprise Gateway 3.2.3's launch_kubernetes.py has no yaml_safe filter,
    3.3.0's has: the template renders the same pod with both, values with
    YAML's special characters stay strings, and the pod's volumes belong to the
    kernel's group (fsGroup)."""
    folder, _ = install(jupyter_dir, "--enterprise-gateway", "kubernetes")
    keywords = dict(POD_KEYWORDS, kernel_id="k1: {x} # 'y' \"z\" <&>",
                    kernel_pod_name="alice-k1")
    old = render_pod(folder, keywords, with_yaml_safe=False)
    new = render_pod(folder, keywords)
    assert old == new
    assert old["metadata"]["labels"]["kernel_id"] == keywords["kernel_id"]
    container = old["spec"]["containers"][0]
    assert container["resources"] == {"requests": {"cpu": "500m"},
                                      "limits": {"memory": "2Gi"}}
    assert container["workingDir"] == "/workspace"
    assert container["volumeMounts"] == keywords["kernel_volume_mounts"]
    assert old["spec"]["volumes"] == keywords["kernel_volumes"]
    assert old["spec"]["securityContext"]["fsGroup"] == 1000
    assert "runAsGroup" not in old["spec"]["securityContext"]
    given = render_pod(folder, dict(keywords, kernel_uid=1234, kernel_gid=4321),
                       with_yaml_safe=False)
    sc = given["spec"]["securityContext"]
    assert (sc["runAsUser"], sc["runAsGroup"], sc["fsGroup"]) == (1234, 4321, 4321)


def test_the_pod_template_starts_a_kernel_that_reports(jupyter_dir, tmp_path):
    """What Kubernetes would run in the kernel's pod, run here: the image's
    binary is this one."""
    folder, spec = install(jupyter_dir, "--enterprise-gateway", "kubernetes", "--image",
                           "registry.example/sandpit:1.0", "--timeout", "60", "--preload",
                           "{{ not jinja }}")
    kernel_id = str(uuid.uuid4())
    pod = render_pod(folder, {
        "kernel_id": kernel_id, "kernel_pod_name": "alice-" + kernel_id,
        "kernel_namespace": "kernels", "kernel_service_account_name": "default",
        "kernel_image": spec["metadata"]["process_proxy"]["config"]["image_name"],
        "kernel_memory_limit": "2Gi", "kernel_working_dir": "/workspace",
        "kernel_volume_mounts": [{"name": "work", "mountPath": "/workspace"}],
        "kernel_volumes": [{"name": "work", "persistentVolumeClaim": {"claimName": "w"}}]})
    assert pod["kind"] == "Pod" and pod["metadata"]["labels"]["kernel_id"] == kernel_id
    container = pod["spec"]["containers"][0]
    assert container["image"] == "registry.example/sandpit:1.0"
    assert container["resources"] == {"limits": {"memory": "2Gi"}}
    assert container["volumeMounts"] == [{"name": "work", "mountPath": "/workspace"}]
    # The sandbox's needs: no privilege, no capability, a seccomp profile that lets
    # the worker make namespaces and install its own filter, no root.
    sc = container["securityContext"]
    assert sc["privileged"] is False and sc["allowPrivilegeEscalation"] is False
    assert sc["capabilities"] == {"drop": ["ALL"]}
    assert pod["spec"]["securityContext"]["runAsNonRoot"] is True
    assert pod["spec"]["securityContext"]["seccompProfile"] == {
        "type": "Localhost", "localhostProfile": "profiles/sandpit.json"}

    gw = Gateway()
    low, high = port_range()
    env = {"KERNEL_ID": kernel_id, "RESPONSE_ADDRESS": gw.response_address,
           "PUBLIC_KEY": gw.public_key, "PORT_RANGE": "%d..%d" % (low, high)}
    command = [re.sub(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)",
                      lambda m: env.get(m.group(1), m.group()), a)
               for a in container["command"] + container["args"]]
    assert command[0] == "/usr/local/bin/sandpit"
    assert "{{ not jinja }}" in command  # the options are kept out of Jinja's reach
    command = [SANDPIT] + command[1:]
    command[command.index("{{ not jinja }}")] = "json"
    proc = subprocess.Popen(command, cwd=str(tmp_path), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    kc = None
    try:
        info = gw.receive(proc)
        assert info["kernel_id"] == kernel_id
        assert low <= info["comm_port"] <= high
        kc = connect(info)
        assert Kernel(None, kc).run("import json\nprint(json.dumps([1]))") == "[1]\n"
        send_listener_request(info["comm_port"], {"shutdown": 1}, shutdown_socket=True)
        assert proc.wait(LIMIT) == 0
    finally:
        if kc:
            kc.stop_channels()
        end(proc)
        gw.close()


LOG_HEAD = r"\[sandpit kernel \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \w+ kernel_id=%s user=%s\] "


def test_every_log_line_names_the_gateways_kernel_and_user(remote):
    """The log the gateway keeps per kernel (EG_KERNEL_LOG_DIR/kernel-ID.log on
    the host) names the gateway's kernel id, the user and the date on every
    line, and the kernel's own session id nowhere as its name (the module's
    kernel has run its cells and shut down by now)."""
    lines = [l for l in log_of(remote).splitlines() if l.strip()]
    assert lines
    head = re.compile(LOG_HEAD % (re.escape(remote.kernel_id), "alice"))
    relayed = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ kernel_id=%s user=alice worker\| "
                         % re.escape(remote.kernel_id))
    for line in lines:
        assert head.match(line) or relayed.match(line), line
    assert any("kernel %s listening on" % remote.kernel_id in l for l in lines), lines


def start_detached(jupyter_dir, tmp_path, workspace, username, extra=()):
    gw = Gateway()
    _, spec = install(jupyter_dir, "--enterprise-gateway", "distributed", "--workspace",
                      workspace, "--log-level", "info", *extra)
    assert workspace in spec["argv"], "install keeps the placeholder"
    kernel_id = str(uuid.uuid4())
    argv = format_kernel_cmd(spec["argv"], {
        "kernel_id": kernel_id, "response_address": gw.response_address,
        "public_key": gw.public_key, "port_range": "0..0"})
    log = tmp_path / ("kernel-%s.log" % kernel_id)
    cwd = tmp_path / ("cwd-" + kernel_id)
    cwd.mkdir()
    return gw, kernel_id, Detached(argv, str(cwd), log, username=username), log


def wait_ended(proc, gw, timeout=LIMIT):
    """Waits for a detached kernel to end; it must not have reported."""
    deadline = time.monotonic() + timeout
    while proc.poll() is None:
        assert time.monotonic() < deadline, "the kernel still runs"
        assert not select.select([gw.sock], [], [], 0.05)[0], "the kernel reported"
    assert not select.select([gw.sock], [], [], 0)[0], "the kernel reported"


def test_each_user_of_one_remote_account_has_a_workspace_and_history_of_their_own(
        jupyter_dir, tmp_path):
    """Over SSH every kernel runs as the one remote user: with --workspace
    DIR/{username}, each of the gateway's users gets DIR/<user>, made 0700,
    with its own files and its own history."""
    base = tmp_path / "notebooks"
    base.mkdir()
    workspace = str(base) + "/{username}"
    kernels = {}
    try:
        for user in ("alice", "bob"):
            gw, kid, proc, log = start_detached(jupyter_dir, tmp_path, workspace, user)
            kernels[user] = (gw, proc, None)
            kc = connect(gw.receive(proc))
            kernels[user] = (gw, proc, kc)
        for user in ("alice", "bob"):
            folder = base / user
            st = os.stat(folder)
            assert stat.S_ISDIR(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o700
            assert st.st_uid == os.getuid()
        alice, bob = Kernel(None, kernels["alice"][2]), Kernel(None, kernels["bob"][2])
        assert bob.run("secret_of_bob = 1\nopen('bob.txt', 'w').write('b')\nprint('ok')") \
            == "ok\n"
        assert (base / "bob" / "bob.txt").read_text() == "b"
        assert os.listdir(base / "alice") == [] or "bob.txt" not in os.listdir(base / "alice")
        reply, _ = alice.execute("open(%r).read()" % str(base / "bob" / "bob.txt"))
        assert reply["content"]["status"] == "error"
        found = alice.run("%history -g secret_of_bob")
        assert "secret_of_bob = 1" not in found, found
        assert "secret_of_bob = 1" in bob.run("%history -g secret_of_bob")
    finally:
        for gw, proc, kc in kernels.values():
            if kc:
                kc.stop_channels()
            proc.end()
            gw.close()


@pytest.mark.parametrize("username", ["../x", "a/b", ".hidden", "", "x" * 65, "al ice",
                                      "é"])
def test_a_hostile_user_name_is_refused_and_makes_no_folder(jupyter_dir, tmp_path,
                                                            username):
    base = tmp_path / "notebooks"
    base.mkdir()
    gw, kid, proc, log = start_detached(jupyter_dir, tmp_path, str(base) + "/{username}",
                                        username)
    try:
        wait_ended(proc, gw)
    finally:
        proc.end()
        gw.close()
    text = log.read_text()
    assert os.listdir(base) == [] and not (tmp_path / "x").exists(), os.listdir(base)
    assert "KERNEL_USERNAME" in text, text
    assert ("cannot name a workspace" in text or "is not set" in text), text
    assert re.search(r"\[sandpit kernel \d{4}-\d\d-\d\dT[^\]]* error kernel_id=%s\] "
                     % re.escape(kid), text), text
    assert "ended before it reported to the gateway" in text, text


def test_a_missing_workspace_is_logged_with_how_the_gateway_shows_it(jupyter_dir, tmp_path):
    """The gateway has no message for a launcher's failure: the kernel exits
    at once, sends nothing, and its log says why, with the gateway's kernel
    id, the user and the date, and what the gateway will show."""
    missing = str(tmp_path / "not-on-this-host")
    for workspace in (missing, missing + "/{username}"):
        gw, kid, proc, log = start_detached(jupyter_dir, tmp_path, workspace, "carol")
        try:
            wait_ended(proc, gw)
        finally:
            proc.end()
            gw.close()
        text = log.read_text()
        head = LOG_HEAD % (re.escape(kid), "carol")
        assert re.search(head + r".*(workspace|workspaces' folder) %s" % re.escape(missing),
                         text), text
        assert re.search(head + r"the kernel ended before it reported to the gateway at "
                         + re.escape(gw.response_address) + r".*launch timeout", text), text
        assert not os.path.exists(missing)
