"""The agent examples in examples/ run as their README says: the tool loop on
jupyter_client, the same loop with `sandpit run --json` from a shell, and the
MCP configuration snippet's command."""

import json
import os
import shutil
import subprocess

from sandpit_testing import ROOT, SANDPIT

EXAMPLES = os.path.join(ROOT, "examples")


def copy_examples(tmp_path):
    """The examples in a folder of their own: they write outputs/ beside them."""
    ws = tmp_path / "examples"
    shutil.copytree(EXAMPLES, ws, ignore=shutil.ignore_patterns("outputs"))
    return ws


def check_digest(text, ws):
    lines = text.splitlines()
    assert lines[0:2] == ["[cell 1] ok", "stdout: 6 months of harvest"]
    assert "[cell 2] error" in lines and "error: KeyError: 'tomatoes'" in lines
    assert "stdout: tomatoes: 20.6 kg" in lines
    images = [line.split()[1] for line in lines if line.startswith("image: ")]
    assert len(images) == 1 and images[0] == str(ws / "outputs" / "cell-4-1.png")
    assert open(images[0], "rb").read(8) == b"\x89PNG\r\n\x1a\n"
    assert lines[-1] == "4 cells, 1 failed (and corrected)"


def test_agent_loop_on_jupyter_client(jupyter_dir, tmp_path):
    ws = copy_examples(tmp_path)
    p = subprocess.run(["/usr/bin/python3", str(ws / "agent_loop.py"), "--workspace", str(ws)],
                       capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stdout + p.stderr
    check_digest(p.stdout, ws)


def test_agent_loop_with_sandpit_run(jupyter_dir, tmp_path):
    ws = copy_examples(tmp_path)
    env = dict(os.environ, SANDPIT=SANDPIT)
    p = subprocess.run(["sh", str(ws / "agent_loop.sh")], cwd=str(tmp_path), env=env,
                       capture_output=True, text=True, timeout=180)
    assert p.returncode == 0, p.stdout + p.stderr
    check_digest(p.stdout, ws)
    # Its kernel was stopped on the way out.
    s = subprocess.run([SANDPIT, "status", "--json", "--workspace", str(ws)],
                       capture_output=True, text=True, timeout=60)
    assert json.loads(s.stdout)["live"] is False


def test_mcp_configuration_snippet_starts_a_server(jupyter_dir, tmp_path):
    with open(os.path.join(EXAMPLES, "mcp.json")) as f:
        server = json.load(f)["mcpServers"]["sandpit"]
    assert server["command"] == "sandpit"
    args = [tmp_path if a == "/path/to/your/project" else a for a in server["args"]]
    requests = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                    "clientInfo": {"name": "assistant", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "python_exec", "arguments": {"code": "import os; os.getcwd()"}}},
    ]
    p = subprocess.run([SANDPIT, *map(str, args)],
                       input="".join(json.dumps(r) + "\n" for r in requests),
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    replies = {r["id"]: r for r in map(json.loads, p.stdout.splitlines())}
    assert replies[1]["result"]["serverInfo"]["name"] == "sandpit"
    text = replies[2]["result"]["content"][0]["text"]
    assert text == repr(str(tmp_path.resolve())), "the kernel runs in the workspace given"


def test_containerfile_builds_what_make_needs():
    """No container engine here: check what can drift without one. The image's
    build stage installs the Debian packages `make` needs (the Makefile's
    DEB_BUILD, but for the formatter), and installs the kernelspec; the
    README points to the page that explains it."""
    import re
    make = open(os.path.join(ROOT, "Makefile")).read()
    build = re.search(r"^DEB_BUILD := (.*?)(?<!\\)\n", make, re.S | re.M).group(1)
    needed = set(build.replace("\\", " ").split()) - {"clang-format"}
    text = open(os.path.join(ROOT, "Containerfile")).read()
    stage = text.split("FROM debian:12 AS build", 1)[1].split("\nFROM ", 1)[0]
    installed = set(re.search(r"--no-install-recommends(.*?)&&", stage, re.S).group(1)
                    .replace("\\", " ").split())
    assert needed <= installed, needed - installed
    assert "RUN sandpit install" in text and "make -C /src all" in text
    assert "](docs/scale.md)" in open(os.path.join(ROOT, "README.md")).read()
