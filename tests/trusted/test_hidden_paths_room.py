"""Every path a worker hides fits its list: the connection file, the history's
two folders (a --history of its own, and the user's default one) and the
private roots of /tmp and $XDG_RUNTIME_DIR when the kernel's own is under
another TMPDIR. The list once had room for one fewer than that, and no end:
under AddressSanitizer (make sanitize-test, or SANITIZE=address with
SANDPIT_BIN on this file) the worker then failed; in any build every one of
them stays hidden from the cell."""
import json
import os

from jupyter_client.manager import KernelManager

from sandpit_testing import TIMEOUT, Kernel, install_spec, stop

PROBE = r"""
import json, os
out = {}
for name in ("tmp_root", "xdg_root"):
    path = PATHS[name]
    try:
        out[name] = os.listdir(path)
    except OSError as e:
        out[name] = "refused: %s" % e.errno
print(json.dumps(out))
"""


def test_every_hidden_path_fits_and_stays_hidden(jupyter_dir, tmp_path):
    uid = os.getuid()
    tmpdir = tmp_path / "tmp"
    xdg = tmp_path / "xdg"
    tmpdir.mkdir()
    xdg.mkdir(mode=0o700)
    ws = tmp_path / "ws"
    ws.mkdir()
    history = tmp_path / "hist" / "history.sqlite"
    history.parent.mkdir()
    name = install_spec(jupyter_dir, "--history", str(history))
    env = dict(os.environ, TMPDIR=str(tmpdir), XDG_RUNTIME_DIR=str(xdg))
    km = KernelManager(kernel_name=name, connection_file=str(ws / "conn.json"))
    km.start_kernel(cwd=str(ws), env=env)
    kc = km.client()
    kc.start_channels()
    k = Kernel(km, kc)
    try:
        kc.wait_for_ready(timeout=TIMEOUT)
        tmp_root = "/tmp/sandpit-user-%d" % uid
        xdg_root = "%s/sandpit-user-%d" % (xdg, uid)
        paths = {"tmp_root": tmp_root, "xdg_root": xdg_root}
        out = json.loads(k.run("PATHS = %r\n" % paths + PROBE))
        for key, path in paths.items():
            if os.path.isdir(path):
                assert out[key] == [] or str(out[key]).startswith("refused"), (key, out)
    finally:
        stop(k)
