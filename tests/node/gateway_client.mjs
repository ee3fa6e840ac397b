// JupyterLab's own client library, @jupyterlab/services, against a kernel
// gateway directly (`sandpit serve`): KernelManager starts a kernel, runs
// cells over its WebSocket, completes, inspects, interrupts, restarts and
// shuts it down; SessionManager makes a notebook's session, runs a cell in its
// kernel, lists it, renames it and shuts it down. It writes one JSON object to
// OUT for tests/gateway/test_gateway_jupyterlab_services.py to check (to a
// file: the library logs its connection's life on stdout).
//
//   node gateway_client.mjs BASE_URL TOKEN KERNEL_NAME OUT
import { writeFileSync } from "node:fs";
import { KernelManager, ServerConnection, SessionManager } from "@jupyterlab/services";
import WebSocket from "ws";

const [baseUrl, token, kernelName, outPath] = process.argv.slice(2);
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
const out = { steps: [] };
function step(name) {
  out.steps.push(name);
}

// Runs code in kernel; onOutput may act on each iopub message (to interrupt).
async function run(kernel, code, onOutput) {
  const future = kernel.requestExecute({ code });
  const iopub = [];
  future.onIOPub = (msg) => {
    iopub.push({ type: msg.header.msg_type, content: msg.content });
    if (onOutput) onOutput(msg);
  };
  const reply = await future.done;
  return { reply: reply.content, iopub };
}

// Resolves when the kernel's connection is up and it is idle (after a restart).
async function ready(kernel) {
  for (let i = 0; i < 600; i++) {
    if (kernel.connectionStatus === "connected" && kernel.status === "idle") return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error("the kernel was not connected and idle in 60 s: " + kernel.status);
}

async function main() {
  const kernels = new KernelManager({ serverSettings });
  await kernels.ready;
  step("kernel manager ready");
  const kernel = await kernels.startNew({ name: kernelName });
  step("kernel started");
  out.info = (await kernel.info).implementation;
  out.protocol = kernel._ws ? kernel._ws.protocol : null;
  out.stream = await run(kernel, "print('hello from sandpit')");
  out.result = await run(kernel, "x = 6 * 7\nx");
  out.error = await run(kernel, "1 / 0");
  out.image = await run(kernel, "import matplotlib.pyplot as plt\nplt.plot([1, 2, 3])\nplt.show()");
  out.complete = (await kernel.requestComplete({ code: "import o", cursor_pos: 8 })).content;
  out.inspect = (await kernel.requestInspect({ code: "len", cursor_pos: 3, detail_level: 0 }))
    .content;
  step("executed, completed, inspected");
  let interrupted = false;
  out.interrupt = await run(
    kernel,
    "import time\nprint('sleeping', flush=True)\ntime.sleep(60)",
    (msg) => {
      if (!interrupted && msg.header.msg_type === "stream" && msg.content.text.includes("sleeping")) {
        interrupted = true;
        kernel.interrupt();
      }
    },
  );
  out.survived = await run(kernel, "print(x)");
  step("interrupted");
  await kernel.restart();
  await ready(kernel);
  out.after_restart = await run(kernel, "print('x' in globals())");
  step("restarted");
  await kernels.refreshRunning();
  out.running_before_shutdown = Array.from(kernels.running()).map((m) => m.id);
  out.kernel_id = kernel.id;
  await kernel.shutdown();
  await kernels.refreshRunning();
  out.running_after_shutdown = Array.from(kernels.running()).map((m) => m.id);
  step("kernel shut down");

  const sessions = new SessionManager({ serverSettings, kernelManager: kernels });
  await sessions.ready;
  const session = await sessions.startNew({
    path: "work/analysis.ipynb",
    type: "notebook",
    name: "analysis.ipynb",
    kernel: { name: kernelName },
  });
  step("session started");
  out.session = { id: session.id, path: session.path, kernel_id: session.kernel.id };
  out.session_info = (await session.kernel.info).implementation;
  out.session_run = await run(session.kernel, "print(sum(range(10)))");
  await sessions.refreshRunning();
  out.sessions_listed = Array.from(sessions.running()).map((m) => ({ id: m.id, path: m.path }));
  await session.setPath("work/renamed.ipynb");
  await sessions.refreshRunning();
  out.sessions_renamed = Array.from(sessions.running()).map((m) => m.path);
  step("session renamed");
  await session.shutdown();
  await sessions.refreshRunning();
  out.sessions_after_shutdown = Array.from(sessions.running()).map((m) => m.id);
  await kernels.refreshRunning();
  out.kernels_at_end = Array.from(kernels.running()).map((m) => m.id);
  step("session shut down");
  sessions.dispose();
  kernels.dispose();
}

try {
  await main();
} catch (e) {
  out.failure = String((e && e.stack) || e);
  writeFileSync(outPath, JSON.stringify(out));
  process.exit(1);
}
writeFileSync(outPath, JSON.stringify(out));
process.exit(0);
