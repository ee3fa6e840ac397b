"""What the kernel says about its sandbox (issue #4): kernel_info's "sandpit"
section, `sandpit check-sandbox`, the kernel with --sandbox off and with
--network on, and the agent profile of `sandpit install`.

A layer the kernel reports "active" is checked against what the worker itself can
observe (its namespaces, capabilities, seccomp mode, rlimits, and what it may read
and write), so that the report never claims a layer that is not in force; and
against check-sandbox, which probes what this machine gives.
"""

import json
import os
import socket
import subprocess

import pytest

from jupyter_client.manager import KernelManager

from sandbox_helpers import (LAYERS, SANDPIT, STATES, TIMEOUT, assert_layer_evidence, boot,
                             check_sandbox, host_evidence, kernel_info,
                             memory_limit_applies, stop, worker_evidence)
from sandpit_testing import Kernel, install_spec, start, stdout_of


@pytest.fixture(scope="module")
def places(tmp_path_factory):
    """A world-readable file and a folder outside every kernel's workspace."""
    outside = tmp_path_factory.mktemp("outside")
    readable = outside / "readable.txt"
    readable.write_text("outside\n")
    readable.chmod(0o644)
    return readable, outside / ("written-%d.txt" % os.getpid())


def layers_of(info):
    layers = info["sandpit"]["layers"]
    assert isinstance(layers, list), layers
    assert [l["name"] for l in layers] == LAYERS
    for l in layers:
        assert l["state"] in STATES, l
        assert isinstance(l["detail"], str)
    return {l["name"]: (l["state"], l["detail"]) for l in layers}


# --- check-sandbox ---------------------------------------------------------------------------


@pytest.mark.parametrize("args", [(), ("--network", "on"), ("--sandbox", "off")],
                         ids=["default", "network-on", "sandbox-off"])
def test_check_sandbox_prints_a_line_per_layer(args):
    layers = check_sandbox(*args)
    assert list(layers) == LAYERS
    for name, (state, detail) in layers.items():
        assert state in STATES - {"pending"}, (name, state)
        assert detail, name
    if args == ("--sandbox", "off"):
        assert all(state == "disabled" for state, _ in layers.values())
    if args == ("--network", "on"):
        assert layers["network-namespace"][0] == "disabled"
        assert "network on" in layers["network-namespace"][1]
        assert "TCP and UDP" in layers["seccomp"][1]
    if args == ():
        assert layers["network-namespace"][0] != "disabled"
        assert "sockets: none" in layers["seccomp"][1]


# --- kernel_info -----------------------------------------------------------------------------


def test_kernel_info_reports_the_layers_in_force(jupyter_dir, tmp_path, places):
    k = boot(jupyter_dir, cwd=tmp_path)
    try:
        k.run("pass")  # the worker is up: its report has reached the supervisor
        info = kernel_info(k)
        s = info["sandpit"]
        assert s["enabled"] is True and s["network"] is False
        assert s["workspace"] == os.path.realpath(tmp_path)
        assert "WARNING" not in info["banner"]
        layers = layers_of(info)
        machine = check_sandbox()
        # the same policy on the same machine: the same states as check-sandbox
        assert {n: st for n, (st, _) in layers.items()} == \
            {n: st for n, (st, _) in machine.items()}
        # and every layer claimed active can be seen from inside the worker
        ev = worker_evidence(k, *places)
        host = host_evidence()
        active = [n for n, (st, _) in layers.items() if st == "active"]
        for name in active:
            assert_layer_evidence(name, ev, host)
        assert not os.path.exists(places[1])
    finally:
        stop(k)


def test_kernel_info_before_the_worker_is_ready(jupyter_dir, tmp_path):
    """Clients ask kernel_info first (jupyter_client's wait_for_ready does), which
    the supervisor answers before the worker has started. The answer must still
    list the layers (as "pending", or once known), never claim one, and not be
    null. A slow preload keeps the worker from being ready for a while."""
    name = install_spec(jupyter_dir, "--preload", "pandas,matplotlib.pyplot")
    km = KernelManager(kernel_name=name)
    km.start_kernel(cwd=str(tmp_path))
    kc = km.client()
    kc.start_channels()
    k = Kernel(km, kc)
    try:
        kc.wait_for_ready(timeout=TIMEOUT)  # itself a kernel_info request
        first = kernel_info(k)
        early = layers_of(first)
        assert all(st in ("pending", "active", "unavailable", "disabled")
                   for st, _ in early.values())
        k.run("pass")
        later = layers_of(kernel_info(k))
        for name, (st, _) in early.items():
            if st == "active":
                assert later[name][0] == "active", name
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)


def test_sandbox_off_reports_every_layer_disabled_and_warns(jupyter_dir, tmp_path, places):
    k = boot(jupyter_dir, "--sandbox", "off", cwd=tmp_path)
    try:
        k.run("pass")
        info = kernel_info(k)
        assert info["sandpit"]["enabled"] is False
        layers = layers_of(info)
        assert all(st == "disabled" for st, _ in layers.values()), layers
        assert "WARNING: the sandbox is off" in info["banner"]
        # and it is so: the worker sees what the test sees (only harmless checks)
        ev = worker_evidence(k, places[0], tmp_path / "inside.txt")
        host = host_evidence()
        assert ev["ns"] == host["ns"]
        assert ev["caps"]["CapEff"] == host["caps"]["CapEff"]
        assert ev["seccomp"] == 0 and ev["read_outside"] == 0
    finally:
        stop(k)


def test_network_on(jupyter_dir, tmp_path, places):
    """--network on: a TCP connection to a local listener works, the report says
    the network namespace is disabled, and the rest of the sandbox stays."""
    k = boot(jupyter_dir, "--network", "on", cwd=tmp_path)
    try:
        with socket.create_server(("127.0.0.1", 0)) as listener:
            listener.settimeout(TIMEOUT)
            port = listener.getsockname()[1]
            msg_id = k.kc.execute("import socket\n"
                                  "s = socket.create_connection(('127.0.0.1', %d), timeout=10)\n"
                                  "s.sendall(b'hello from the worker')\n"
                                  "print(s.recv(100).decode())\ns.close()" % port)
            conn, _ = listener.accept()
            with conn:
                assert conn.recv(100) == b"hello from the worker"
                conn.sendall(b"hello from the test")
            reply = k.shell_reply(msg_id)
            assert reply["content"]["status"] == "ok", reply["content"]
            assert stdout_of(k.iopub_until_idle(msg_id)) == "hello from the test\n"
        info = kernel_info(k)
        assert info["sandpit"]["network"] is True
        layers = layers_of(info)
        assert layers["network-namespace"][0] == "disabled"
        machine = check_sandbox("--network", "on")
        assert {n: st for n, (st, _) in layers.items()} == \
            {n: st for n, (st, _) in machine.items()}
        ev = worker_evidence(k, *places)
        host = host_evidence()
        assert ev["ns"]["net"] == host["ns"]["net"]
        for name, (st, _) in layers.items():
            if st == "active":
                assert_layer_evidence(name, ev, host)
        # TCP and UDP only: no raw, packet or local sockets even with the network on
        for family, kind in (("AF_INET", "SOCK_RAW"), ("AF_PACKET", "SOCK_RAW"),
                             ("AF_UNIX", "SOCK_STREAM"), ("AF_NETLINK", "SOCK_RAW")):
            reply, _ = k.execute("import socket\nsocket.socket(socket.%s, socket.%s, 0)"
                                 % (family, kind))
            assert reply["content"]["ename"] == "PermissionError", (family, reply["content"])
        assert k.run("import socket\nu = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
                     "u.close()\nprint('udp')") == "udp\n"
    finally:
        stop(k)


# --- the agent profile -----------------------------------------------------------------------


def argv_options(argv):
    """The --name value pairs of a kernelspec's argv after `kernel -f {connection_file}`."""
    i = argv.index("{connection_file}") + 1
    rest = argv[i:]
    assert len(rest) % 2 == 0, rest
    return dict(zip(rest[::2], rest[1::2]))


def test_install_profile_agent(jupyter_dir, tmp_path):
    subprocess.run([SANDPIT, "install", "--prefix", str(tmp_path), "--profile", "agent"],
                   check=True, stdout=subprocess.DEVNULL, timeout=TIMEOUT)
    spec = tmp_path / "share" / "jupyter" / "kernels" / "sandpit-agent" / "kernel.json"
    with open(spec) as f:
        kj = json.load(f)
    assert kj["argv"][:4] == [os.path.realpath(SANDPIT), "kernel", "-f", "{connection_file}"]
    opts = argv_options(kj["argv"])
    assert float(opts["--timeout"]) == 30
    assert int(opts["--max-output"]) == 1000000
    assert int(opts["--memory"]) == 2048
    assert opts.get("--network", "off") == "off"
    assert opts.get("--sandbox", "on") == "on"
    # a kernel from that profile runs with those limits
    name = install_spec(jupyter_dir, "--profile", "agent")
    k = start(name, cwd=str(tmp_path))
    try:
        s = kernel_info(k)["sandpit"]
        assert (s["timeout"], s["max_output_bytes"], s["memory_mib"], s["network"],
                s["enabled"]) == (30, 1000000, 2048, False, True)
        # what the supervisor enforces on its own: charts count apart from the text,
        # completion has its short limit, threads in the background a CPU budget
        assert s["max_image_output_bytes"] == 16 << 20
        assert s["introspection_timeout"] == 5
        assert s["background_cpu"] == {"burst_s": 30, "average_cpus": 0.1}
        assert s["max_worker_message_bytes"] == 6 * 1000000 + (16 << 20) + (4 << 20)
        if memory_limit_applies(k):
            assert k.run("import resource\n"
                         "print(resource.getrlimit(resource.RLIMIT_DATA)[0] >> 20)") == \
                "2048\n"
    finally:
        stop(k)


# --- the report's source --------------------------------------------------------------------


FORGE_HELLO = r"""
import _sandpit, json
names = %r
_sandpit.send(json.dumps({"type": "hello", "python_version": "9.9.9", "pid": 1,
                          "sandbox": [{"name": n, "state": "disabled", "detail": "forged"}
                                      for n in names]}).encode())
"""


def test_a_cell_cannot_rewrite_the_report(jupyter_dir, tmp_path):
    """The worker's report arrives in its hello, before any cell runs. A cell can
    write to the worker's end of the link too (the supervisor treats the link as
    untrusted): a second hello from it must not replace what kernel_info says."""
    k = boot(jupyter_dir, cwd=tmp_path)
    try:
        k.run("pass")
        before = kernel_info(k)
        assert layers_of(before)["seccomp"][0] == "active"
        k.run(FORGE_HELLO % (LAYERS,))
        after = kernel_info(k)
        # what the kernel counts (cells run) moves with every cell; the rest stays
        moving = ("counts", "running")
        assert {key: v for key, v in after["sandpit"].items() if key not in moving} == \
            {key: v for key, v in before["sandpit"].items() if key not in moving}
        assert after["sandpit"]["counts"]["cells"] == before["sandpit"]["counts"]["cells"] + 1
        assert after["banner"] == before["banner"]
        assert after["language_info"]["version"] == before["language_info"]["version"]
    finally:
        stop(k)
