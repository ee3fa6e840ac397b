// A JupyterLab-style client: @jupyterlab/services, the library JupyterLab
// itself talks to Jupyter Server with, run from node. It starts a sandpit
// kernel through the server's REST API, runs cells over the kernel's
// WebSocket, completes, inspects, interrupts, restarts and shuts it down, and
// writes one JSON object to OUT for tests/integration/test_remote_cells.py to
// check (to a file: the library logs its connection's life on stdout).
//
//   node jlab_client.mjs BASE_URL TOKEN OUT
import { writeFileSync } from "node:fs";
import { KernelManager, ServerConnection } from "@jupyterlab/services";
import WebSocket from "ws";

const [baseUrl, token, outPath] = process.argv.slice(2);
const serverSettings = ServerConnection.makeSettings({
  baseUrl,
  wsUrl: baseUrl.replace(/^http/, "ws"),
  token,
  appendToken: true,
  WebSocket,
  fetch,
  Request,
  Headers,
});
const manager = new KernelManager({ serverSettings });
await manager.ready;
const kernel = await manager.startNew({ name: "sandpit" });

// Runs code; onOutput may act on each iopub message (to interrupt, say).
async function run(code, onOutput) {
  const future = kernel.requestExecute({ code });
  const iopub = [];
  future.onIOPub = (msg) => {
    iopub.push({ type: msg.header.msg_type, content: msg.content });
    if (onOutput) onOutput(msg);
  };
  const reply = await future.done;
  return { reply: reply.content, iopub };
}

const out = {};
out.info = (await kernel.info).implementation;
out.stream = await run("print('hello from sandpit')");
out.result = await run("x = 6 * 7\nx");
out.error = await run("1 / 0");
out.image = await run(
  "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()",
);
out.complete = (await kernel.requestComplete({ code: "import o", cursor_pos: 8 })).content;
out.inspect = (await kernel.requestInspect({ code: "len", cursor_pos: 3, detail_level: 0 }))
  .content;
let interrupted = false;
out.interrupt = await run(
  "import time\nprint('sleeping', flush=True)\ntime.sleep(30)",
  (msg) => {
    if (!interrupted && msg.header.msg_type === "stream" && msg.content.text.includes("sleeping")) {
      interrupted = true;
      kernel.interrupt();
    }
  },
);
out.survived = await run("print(x)");
await kernel.restart();
out.after_restart = await run("print('x' in globals())");
await kernel.shutdown();
manager.dispose();
writeFileSync(outPath, JSON.stringify(out));
process.exit(0);
