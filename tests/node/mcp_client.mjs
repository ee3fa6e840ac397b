// An MCP client as coding assistants run one: the official TypeScript SDK
// spawns `sandpit mcp` over stdio (StdioClientTransport), lists its tools and
// calls them. It prints one JSON object with what each step returned, for
// tests/integration/test_mcp.py to check.
//
//   node mcp_client.mjs SANDPIT_BINARY WORKSPACE
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [bin, workspace] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: bin,
  args: ["mcp", "--workspace", workspace, "--seed", "3"],
  env: { ...process.env },
  stderr: "inherit",
});
const client = new Client({ name: "sandpit-test", version: "1.0.0" });
await client.connect(transport);

const out = {};
const call = (name, args, options) =>
  client.callTool({ name, arguments: args }, undefined, options);

out.server = client.getServerVersion();
out.tools = (await client.listTools()).tools;
out.print = await call("python_exec", { code: "x = 6 * 7\nprint('x is', x)\nx" });
out.chart = await call("python_exec", {
  code:
    "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.title('squares')\n" +
    "plt.savefig('chart.png')",
});
out.error = await call("python_exec", { code: "1 / 0" });
out.ping = await client.ping();

// Cancellation: the cell says it is sleeping (a progress notification
// carries its output), then the client aborts the call, which sends
// notifications/cancelled. The cell must be interrupted, not left to finish.
const controller = new AbortController();
out.progress = [];
const sleeper = call(
  "python_exec",
  {
    code:
      "import time\nstate = 'before'\nprint('cell is sleeping', flush=True)\n" +
      "try:\n    time.sleep(20)\n    state = 'finished'\n" +
      "except KeyboardInterrupt:\n    state = 'interrupted'\n    raise\n",
  },
  {
    signal: controller.signal,
    onprogress: (p) => {
      out.progress.push(p.message);
      if (p.message && p.message.includes("cell is sleeping")) controller.abort("test");
    },
  },
);
try {
  await sleeper;
  out.cancel = "completed";
} catch (e) {
  out.cancel = "rejected: " + String(e && e.message ? e.message : e);
}
out.after_cancel = await call("python_exec", { code: "print(state, x)" });

out.list = await call("workspace_list", {});
out.read_png = await call("workspace_read", { path: "chart.png" });
out.read_text = await call("workspace_read", { path: "notes.txt" });
out.read_up = await call("workspace_read", { path: "../outside.txt" });
out.read_link = await call("workspace_read", { path: "link-out" });
out.reset = await call("python_reset", {});
out.after_reset = await call("python_exec", {
  code: "import random\nprint('x' in globals(), random.random())",
});
try {
  await call("no_such_tool", {});
  out.unknown = "accepted";
} catch (e) {
  out.unknown = "rejected: " + String(e && e.message ? e.message : e);
}
await client.close();
console.log(JSON.stringify(out));
