"""`sandpit install` writes a kernelspec that jupyter_client finds and starts;
`make install` honours PREFIX and DESTDIR, and the build a packager's CPPFLAGS and
LDFLAGS."""

import json
import os
import subprocess

from jupyter_client.kernelspec import KernelSpecManager
from PIL import Image

from sandpit_testing import ROOT, SANDPIT


def run(*args, env=None):
    return subprocess.run([SANDPIT, "install", *args], check=True, capture_output=True,
                          text=True, env=env, timeout=30)


def test_install_prefix_writes_spec_and_logos(tmp_path):
    out = run("--prefix", str(tmp_path), "--name", "sp-test", "--display-name", "Sandbox test",
              "--timeout", "7", "--interrupt-mode", "signal")
    folder = tmp_path / "share" / "jupyter" / "kernels" / "sp-test"
    assert str(folder) in out.stdout
    spec = json.loads((folder / "kernel.json").read_text())
    assert spec["argv"] == [os.path.realpath(SANDPIT), "kernel", "-f", "{connection_file}",
                            "--timeout", "7"]
    assert spec["display_name"] == "Sandbox test"
    assert spec["language"] == "python"
    assert spec["interrupt_mode"] == "signal"
    for size in (32, 64):
        with Image.open(folder / ("logo-%dx%d.png" % (size, size))) as img:
            assert img.format == "PNG" and img.size == (size, size)
    assert (folder / "logo-svg.svg").read_text().startswith("<svg")
    # jupyter_client finds it, and reads it as written
    ksm = KernelSpecManager(kernel_dirs=[str(tmp_path / "share" / "jupyter" / "kernels")])
    found = ksm.get_kernel_spec("sp-test")
    assert found.display_name == "Sandbox test" and found.interrupt_mode == "signal"


def test_install_user_honours_jupyter_data_dir(tmp_path):
    env = dict(os.environ, JUPYTER_DATA_DIR=str(tmp_path / "data"))
    run("--user", env=env)
    spec = json.loads((tmp_path / "data" / "kernels" / "sandpit" / "kernel.json").read_text())
    assert spec["display_name"] == "Python 3 (sandpit)"
    assert spec["interrupt_mode"] == "message"


def test_install_refuses_bad_input(tmp_path):
    for args, words in ((["--user", "--prefix", str(tmp_path)], "cannot be used together"),
                        (["--prefix", str(tmp_path), "--name", "bad/name"], "kernel name"),
                        (["--prefix", str(tmp_path), "--timeout", "soon"], "--timeout"),
                        (["--prefix", str(tmp_path), "--profile", "fast"], "unknown profile")):
        proc = subprocess.run([SANDPIT, "install", *args], capture_output=True, text=True,
                              timeout=30)
        assert proc.returncode != 0 and words in proc.stderr, (args, proc.stderr)


def test_make_install_honours_prefix_and_destdir(tmp_path):
    build = os.path.dirname(os.path.abspath(SANDPIT))
    proc = subprocess.run(["make", "--no-print-directory", "-C", ROOT, "install",
                           "BUILD=" + os.path.relpath(build, ROOT), "PREFIX=/opt/sp",
                           "DESTDIR=" + str(tmp_path)],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    installed = tmp_path / "opt" / "sp" / "bin" / "sandpit"
    assert os.access(installed, os.X_OK)
    version = subprocess.run([str(installed), "--version"], capture_output=True, text=True)
    assert version.stdout.startswith("sandpit ")


def test_make_passes_a_packagers_flags_to_every_compile_and_link(tmp_path):
    """What dpkg-buildflags or rpm give (CPPFLAGS, LDFLAGS) reaches every command
    that compiles (CPPFLAGS) or links (both): the commands make would run, each
    object and program made again (-B), none of them run (-n)."""
    cppflags, ldflags = "-DSANDPIT_PACKAGER_CPPFLAGS", "-Wl,--sandpit-packager-ldflags"
    build = tmp_path / "build"
    proc = subprocess.run(["make", "--no-print-directory", "-C", ROOT, "-n", "-B", "V=1",
                           "BUILD=" + str(build), "CPPFLAGS=" + cppflags,
                           "LDFLAGS=" + ldflags, "all", str(build / "sandpit-worker"),
                           str(build / "tests" / "test_log"),
                           str(build / "bench-null-kernel"), "build-fuzz/fuzz_wire"],
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    compiles, links = [], []
    for line in proc.stdout.splitlines():
        words = line.split()
        if not words or os.path.basename(words[0]) not in ("cc", "gcc", "clang"):
            continue
        (compiles if "-c" in words else links).append(line)
    assert len(compiles) > 50 and len(links) >= 6, proc.stdout
    for line in compiles:
        assert cppflags in line.split(), line
    for line in links:
        assert cppflags in line.split() and ldflags in line.split(), line
