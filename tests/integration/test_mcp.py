"""`sandpit mcp` driven by the official MCP TypeScript SDK
(@modelcontextprotocol/sdk), spawned over stdio as a coding assistant spawns
it (tests/node/mcp_client.mjs), and by hand for the protocol's edges."""

import base64
import glob
import json
import os
import subprocess

import pytest

from sandpit_testing import ROOT, SANDPIT

NODE_DIR = os.path.join(ROOT, "tests", "node")


@pytest.fixture(scope="module")
def sdk_run(jupyter_dir, tmp_path_factory):
    """One run of the SDK client's script against a fresh workspace."""
    if not os.path.isdir(os.path.join(NODE_DIR, "node_modules", "@modelcontextprotocol",
                                      "sdk")):
        pytest.fail("@modelcontextprotocol/sdk is not installed in tests/node: run make deps")
    base = tmp_path_factory.mktemp("mcp")
    ws = base / "ws"
    ws.mkdir()
    (ws / "notes.txt").write_text("some notes\n")
    (base / "outside.txt").write_text("a secret outside the workspace\n")
    os.symlink(base / "outside.txt", ws / "link-out")
    proc = subprocess.run(["node", "mcp_client.mjs", SANDPIT, str(ws)], cwd=NODE_DIR,
                          capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout), ws


def text_of(result):
    return "".join(c["text"] for c in result["content"] if c["type"] == "text")


def test_tools_are_listed_with_schemas(sdk_run):
    out, _ = sdk_run
    assert out["server"]["name"] == "sandpit"
    tools = {t["name"]: t for t in out["tools"]}
    assert set(tools) == {"python_exec", "python_reset", "workspace_list", "workspace_read"}
    assert tools["python_exec"]["inputSchema"]["required"] == ["code"]
    assert "timeout" in tools["python_exec"]["inputSchema"]["properties"]
    assert tools["workspace_read"]["inputSchema"]["required"] == ["path"]


def test_python_exec_returns_output_result_and_errors(sdk_run):
    out, _ = sdk_run
    assert out["print"]["isError"] is False
    assert text_of(out["print"]) == "[stdout]\nx is 42\n42"
    assert out["error"]["isError"] is True
    err = text_of(out["error"])
    assert "ZeroDivisionError: division by zero" in err and "\x1b[" not in err
    assert out["ping"] == {}


def test_charts_come_back_as_png_images(sdk_run):
    out, ws = sdk_run
    images = [c for c in out["chart"]["content"] if c["type"] == "image"]
    assert len(images) == 1 and images[0]["mimeType"] == "image/png"
    assert base64.b64decode(images[0]["data"]).startswith(b"\x89PNG\r\n\x1a\n")
    # The code ran in the workspace, which workspace_list and workspace_read show.
    assert (ws / "chart.png").exists()
    assert "chart.png" in text_of(out["list"]) and "notes.txt" in text_of(out["list"])
    read = out["read_png"]["content"]
    assert read[0]["type"] == "image" and read[0]["mimeType"] == "image/png"
    assert base64.b64decode(read[0]["data"]) == (ws / "chart.png").read_bytes()
    assert text_of(out["read_text"]) == "some notes\n"


def test_cancellation_interrupts_the_running_cell(sdk_run):
    out, _ = sdk_run
    assert "cell is sleeping\n" in out["progress"]
    assert out["cancel"].startswith("rejected"), out["cancel"]
    # The cell got KeyboardInterrupt (not left to finish its 20 s), and the
    # interpreter kept its state.
    assert text_of(out["after_cancel"]) == "[stdout]\ninterrupted 42\n"


def test_workspace_tools_stay_in_the_workspace(sdk_run):
    out, _ = sdk_run
    assert out["read_up"]["isError"] and ".." in text_of(out["read_up"])
    assert out["read_link"]["isError"]
    assert "outside the workspace" in text_of(out["read_link"])
    assert "secret" not in json.dumps(out)


def test_reset_gives_a_fresh_seeded_interpreter(sdk_run):
    out, _ = sdk_run
    assert out["reset"]["isError"] is False
    label, flag, number = text_of(out["after_reset"]).split()
    assert label == "[stdout]"
    assert flag == "False"
    import random
    assert float(number) == random.Random(3).random(), "--seed 3 seeds the new worker"
    assert "unknown tool" in out["unknown"]


def test_the_kernel_goes_with_the_server(sdk_run):
    """The private connection file is removed when the client disconnects."""
    runtime = os.environ["JUPYTER_RUNTIME_DIR"]
    assert glob.glob(os.path.join(runtime, "sandpit-mcp-*.json")) == []


def test_protocol_edges_by_hand(jupyter_dir, tmp_path):
    """What the SDK never sends: bad JSON, unknown methods, bad arguments, a
    version we do not know; and stdin closing with calls still queued."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "1999-01-01", "capabilities": {},
                    "clientInfo": {"name": "t", "version": "0"}}},
        "this is not json",
        {"jsonrpc": "2.0", "id": 2, "method": "no/such/method"},
        {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
         "params": {"name": "python_exec", "arguments": {"code": 5}}},
        {"jsonrpc": "2.0", "id": 4, "method": "tools/call",
         "params": {"name": "workspace_read", "arguments": {"path": "/etc/passwd"}}},
        {"jsonrpc": "2.0", "id": "five", "method": "tools/call",
         "params": {"name": "python_exec", "arguments": {"code": "print('last')"}}},
    ]
    text = "".join((json.dumps(x) if not isinstance(x, str) else x) + "\n" for x in lines)
    proc = subprocess.run([SANDPIT, "mcp", "--workspace", str(tmp_path)], input=text,
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    replies = [json.loads(line) for line in proc.stdout.splitlines()]
    by_id = {r.get("id"): r for r in replies}
    assert by_id[1]["result"]["protocolVersion"] == "2025-06-18"
    assert by_id[None]["error"]["code"] == -32700
    assert by_id[2]["error"]["code"] == -32601
    assert by_id[3]["error"]["code"] == -32602
    assert by_id[4]["result"]["isError"] and "absolute" in text_of(by_id[4]["result"])
    assert text_of(by_id["five"]["result"]) == "[stdout]\nlast\n"
