"""The command line as a user meets it: every command exits 2 for a wrong
command line and 1 when it fails; --help lists every option; install says
where it wrote and what is missing; `sandpit list` shows the sandpit
kernelspecs Jupyter finds, with their options; `sandpit uninstall` removes one,
and only a sandpit one; a connection file with a bad address says so."""

import json
import os
import re
import subprocess

import pytest

from sandpit_testing import ROOT, SANDPIT


def sandpit(*args, env=None):
    return subprocess.run([SANDPIT, *args], capture_output=True, text=True, env=env,
                          timeout=60, stdin=subprocess.DEVNULL)


def connection_file(path, ip):
    path.write_text(json.dumps({
        "ip": ip, "transport": "tcp", "shell_port": 50101, "iopub_port": 50102,
        "stdin_port": 50103, "control_port": 50104, "hb_port": 50105, "key": "k",
        "signature_scheme": "hmac-sha256"}))
    return str(path)


@pytest.mark.parametrize("args, status, words", [
    ((), 2, "usage:"),
    (("bogus",), 2, "unknown command"),
    (("kernel",), 2, "-f CONNECTION_FILE is required"),
    (("kernel", "-f", "c.json", "--timeout", "soon"), 2, "--timeout needs a number"),
    (("kernel", "-f", "/no/such/connection.json"), 1, "No such file"),
    (("install", "--prefix"), 2, "--prefix needs a folder"),
    (("install", "--name"), 2, "--name needs a name"),
    (("install", "--interrupt-mode"), 2, "--interrupt-mode needs message or signal"),
    (("install", "--user", "--prefix", "/tmp"), 2, "cannot be used together"),
    (("install", "--prefix", "/tmp", "--venv", "/no/such/venv"), 2, "--venv"),
    (("install", "--prefix", "/tmp", "--read", "/no/such/folder"), 2, "--read"),
    (("uninstall", "--bogus"), 2, "unexpected argument"),
    (("uninstall", "--prefix"), 2, "--prefix needs a folder"),
    (("uninstall", "--prefix", "/no/such/prefix"), 1, "there is no kernelspec sandpit"),
    (("list", "extra"), 2, "unexpected argument"),
    (("check-sandbox", "--bogus", "1"), 2, "unknown option"),
    (("start", "--bogus", "1"), 2, "unknown option"),
    (("stop", "--bogus"), 2, "unexpected argument"),
    (("status", "--bogus"), 2, "unexpected argument"),
    (("run", "--timeout"), 2, "--timeout needs a value"),
    (("mcp", "--bogus", "1"), 2, "unknown option"),
])
def test_exit_statuses(args, status, words, tmp_path):
    proc = subprocess.run([SANDPIT, *args], capture_output=True, text=True, timeout=60,
                          cwd=str(tmp_path), stdin=subprocess.DEVNULL)
    assert proc.returncode == status, (args, proc.returncode, proc.stderr)
    assert words in proc.stderr, (args, proc.stderr)


def test_help_lists_every_option():
    text = sandpit("--help").stdout
    table = open(os.path.join(ROOT, "kernel", "options.c")).read()
    # each option of the kernel's table that has a help text (the others are internal)
    options = re.findall(r'\{"([a-z-]+)", OPT_\w+, OFF\(\w+\),\s*"', table)
    assert "seed" in options and "cpus" in options and "max-message" in options
    assert "venv" in options and "read" in options and "history" in options
    for name in options:
        assert "  --%s " % name in text, name
    for word in ("--interrupt-mode message|signal", "--display-name TEXT",
                 "--profile default|agent", "sandpit uninstall [--user | --prefix DIR] "
                 "[--name NAME]", "sandpit list", "--user | --prefix DIR"):
        assert word in text, word
    install_help = sandpit("install", "--help").stdout
    assert "--interrupt-mode message|signal" in install_help and "--venv" in install_help


def test_a_bad_address_says_so(tmp_path):
    for ip, words in (("999.1.1.1", 'address "999.1.1.1" is invalid'),
                      ("not-an-address", 'address "not-an-address" is invalid')):
        proc = sandpit("kernel", "-f", connection_file(tmp_path / "c.json", ip),
                       "--history", "off")
        assert proc.returncode == 1 and words in proc.stderr, proc.stderr


def test_a_bare_install_says_it_wrote_system_wide(tmp_path):
    """A bare install writes for every user: it says so. Run in a mount namespace
    of its own with a temporary folder over /usr/local/share, so that nothing
    is written to this machine's."""
    script = ("mount -t tmpfs sandpit-test /usr/local/share && exec %s install"
              % SANDPIT)
    proc = subprocess.run(["unshare", "--mount", "--map-root-user", "sh", "-c", script],
                          capture_output=True, text=True, timeout=60)
    if proc.returncode != 0 and "install" not in proc.stdout + proc.stderr:
        return print("no mount namespace for this test here: %s" % proc.stderr.strip())
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ("Installed kernelspec sandpit in /usr/local/share/jupyter/"
                           "kernels/sandpit (system-wide: for every user; --user installs "
                           "it for you alone)\n")
    # with --user or --prefix, nothing is said of it
    out = sandpit("install", "--prefix", str(tmp_path)).stdout
    assert "system-wide" not in out


def test_list_and_uninstall(tmp_path):
    prefix, user = tmp_path / "prefix", tmp_path / "user-data"
    env = dict(os.environ, JUPYTER_PATH=str(prefix / "share" / "jupyter"),
               JUPYTER_DATA_DIR=str(user))
    assert sandpit("install", "--prefix", str(prefix), "--name", "sp-plain",
                   env=env).returncode == 0
    assert sandpit("install", "--prefix", str(prefix), "--name", "sp-agent", "--profile",
                   "agent", "--read", str(tmp_path), "--display-name", "Agent's kernel",
                   env=env).returncode == 0
    # the same name in the user's folder comes after JUPYTER_PATH: hidden by it
    assert sandpit("install", "--user", "--name", "sp-plain", env=env).returncode == 0
    other = prefix / "share" / "jupyter" / "kernels" / "python-other"
    other.mkdir(parents=True)
    (other / "kernel.json").write_text(json.dumps({
        "argv": ["python3", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "Python 3", "language": "python"}))

    listed = sandpit("list", env=env)
    assert listed.returncode == 0
    text = listed.stdout
    kernels = prefix / "share" / "jupyter" / "kernels"
    assert "sp-plain: Python 3 (sandpit)\n  folder:         %s\n" % (kernels / "sp-plain") \
        in text
    assert "  options:        none (the defaults)\n" in text
    assert ("sp-agent: Agent's kernel\n  folder:         %s\n  binary:         %s\n"
            "  interrupt mode: message\n  options:        --timeout 30 --memory 2048 "
            "--max-output 1000000 --idle-timeout 3600 --read %s\n" % (kernels / "sp-agent",
                                                os.path.realpath(SANDPIT), tmp_path)) in text
    assert ("sp-plain: Python 3 (sandpit) (hidden by the one of the same name above: "
            "Jupyter uses that one)\n  folder:         %s\n" % (user / "kernels" / "sp-plain")
            ) in text
    assert text.index(str(kernels / "sp-plain")) < text.index(str(user / "kernels"))
    assert "python-other" not in text

    # uninstall: a sandpit kernelspec goes; another kernel's stays
    proc = sandpit("uninstall", "--prefix", str(prefix), "--name", "sp-agent", env=env)
    assert proc.returncode == 0 and "Removed kernelspec sp-agent" in proc.stdout
    assert not (kernels / "sp-agent").exists()
    proc = sandpit("uninstall", "--prefix", str(prefix), "--name", "sp-agent", env=env)
    assert proc.returncode == 1 and "there is no kernelspec sp-agent" in proc.stderr
    proc = sandpit("uninstall", "--prefix", str(prefix), "--name", "python-other", env=env)
    assert proc.returncode == 1 and "not a sandpit kernelspec" in proc.stderr
    assert (other / "kernel.json").exists()
    assert sandpit("uninstall", "--user", "--name", "sp-plain", env=env).returncode == 0
    assert not (user / "kernels" / "sp-plain").exists()
    assert "sp-agent" not in sandpit("list", env=env).stdout


def test_a_command_that_fails_exits_1(tmp_path):
    """The command line is right, but what it needs cannot be had."""
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(blocker / "runtime"))
    for args in (("mcp", "--workspace", str(tmp_path)), ("start", "--workspace",
                                                         str(tmp_path))):
        proc = sandpit(*args, env=env)
        assert proc.returncode == 1 and "cannot use" in proc.stderr, (args, proc.stderr)


def test_install_replaces_a_link_rather_than_writing_through_it(tmp_path):
    """A kernelspec's files are written whole under a fresh name and moved into
    place: a link left at kernel.json is replaced, what it points to kept."""
    prefix = tmp_path / "prefix"
    folder = prefix / "share" / "jupyter" / "kernels" / "sandpit"
    folder.mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text("kept")
    (folder / "kernel.json").symlink_to(elsewhere)
    proc = sandpit("install", "--prefix", str(prefix))
    assert proc.returncode == 0, proc.stderr
    assert elsewhere.read_text() == "kept"
    assert not (folder / "kernel.json").is_symlink()
    assert json.loads((folder / "kernel.json").read_text())["argv"][1] == "kernel"
    assert not [n for n in os.listdir(folder) if n.startswith(".sandpit-")]
