#!/usr/bin/python3
"""An agent's tool loop on jupyter_client, against the sandpit kernel.

A model proposes cells; the loop runs each in one persistent, sandboxed
kernel and hands back a short digest of what happened (stdout, the error if
any, the charts as files), which is what an agent feeds to its model as the
tool's result. Here the "model" is a fixed list of cells, one of which fails
and is then corrected, as a model's often are.

    examples/agent_loop.py [--kernel sandpit] [--workspace DIR] [--outdir DIR]

The kernel's workspace is DIR (default: this folder, where garden.csv is):
the cells can read and write files there and nowhere else.
"""

import argparse
import base64
import os
import queue
import re
import sys

from jupyter_client.manager import start_new_kernel

HERE = os.path.dirname(os.path.abspath(__file__))

CELLS = [
    "import csv\n"
    "rows = list(csv.DictReader(open('garden.csv')))\n"
    "print(len(rows), 'months of harvest')",
    # A mistake, as a model makes them: the column is called tomatoes_kg.
    "total = sum(float(r['tomatoes']) for r in rows)",
    "total = sum(float(r['tomatoes_kg']) for r in rows)\n"
    "print(f'tomatoes: {total:.1f} kg')",
    "import matplotlib.pyplot as plt\n"
    "plt.bar([r['month'] for r in rows], [float(r['tomatoes_kg']) for r in rows])\n"
    "plt.title('Tomatoes per month (kg)')",
]

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
MAX_CHARS = 2000  # what a digest may say about one stream


def cut(text, limit=MAX_CHARS):
    if len(text) <= limit:
        return text
    return text[:limit // 2] + "\n[... %d characters cut ...]\n" % (len(text) - limit) + \
        text[-limit // 2:]


def run_cell(kc, code, outdir, timeout=60):
    """Runs code; returns a dict: status, count, stdout, stderr, result,
    error (one line), images (paths)."""
    msg_id = kc.execute(code, allow_stdin=False)
    out = {"stdout": "", "stderr": "", "result": None, "error": None, "images": []}
    while True:
        try:
            msg = kc.get_iopub_msg(timeout=timeout)
        except queue.Empty:
            raise TimeoutError("no output from the kernel for %d s" % timeout)
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        kind, content = msg["msg_type"], msg["content"]
        if kind == "execute_input":
            out["count"] = content["execution_count"]
        elif kind == "stream":
            out[content["name"]] += content["text"]
        elif kind in ("execute_result", "display_data"):
            data = content["data"]
            if "image/png" in data:
                path = os.path.join(outdir, "cell-%d-%d.png" % (out["count"],
                                                                len(out["images"]) + 1))
                with open(path, "wb") as f:
                    f.write(base64.b64decode(data["image/png"]))
                out["images"].append(path)
            elif kind == "execute_result":
                out["result"] = data.get("text/plain")
        elif kind == "error":
            out["error"] = ANSI.sub("", "%s: %s" % (content["ename"], content["evalue"]))
        elif kind == "status" and content["execution_state"] == "idle":
            break
    reply = kc.get_shell_msg(timeout=timeout)
    out["status"] = reply["content"]["status"]
    return out


def digest(n, out):
    """The few lines a model gets back for one cell."""
    head = "[cell %d] %s" % (n, "ok" if out["status"] == "ok" else "error")
    lines = [head]
    if out["stdout"]:
        lines.append("stdout: " + cut(out["stdout"]).rstrip("\n"))
    if out["stderr"]:
        lines.append("stderr: " + cut(out["stderr"]).rstrip("\n"))
    if out["result"] is not None:
        lines.append("result: " + cut(out["result"]))
    if out["error"]:
        lines.append("error: " + out["error"])
    for path in out["images"]:
        lines.append("image: %s (%d bytes)" % (path, os.path.getsize(path)))
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kernel", default="sandpit", help="kernelspec name (default sandpit)")
    ap.add_argument("--workspace", default=HERE, help="the kernel's folder")
    ap.add_argument("--outdir", default=None, help="where charts go (default: WORKSPACE/outputs)")
    args = ap.parse_args()
    outdir = args.outdir or os.path.join(args.workspace, "outputs")
    os.makedirs(outdir, exist_ok=True)
    km, kc = start_new_kernel(kernel_name=args.kernel, cwd=args.workspace)
    failed = 0
    try:
        for n, code in enumerate(CELLS, 1):
            out = run_cell(kc, code, outdir)
            failed += out["status"] != "ok"
            print(digest(n, out))
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=False)
    print("%d cells, %d failed (and corrected)" % (len(CELLS), failed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
