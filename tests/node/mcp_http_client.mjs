// An MCP client as a coding assistant on another machine runs one: the
// official TypeScript SDK's Streamable HTTP transport against `sandpit serve`
// at /mcp, the server's token as a bearer token. It lists the tools, calls
// them, cancels a long call, and ends the session. Before it ends the
// session it prints "session SESSION_ID" and waits for a line on stdin, so
// that tests/serve/test_serve_mcp.py can see the session's processes; then
// it prints one JSON object with what each step returned.
//
//   node mcp_http_client.mjs URL TOKEN
import { createInterface } from "node:readline";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: "Bearer " + token } },
});
const client = new Client({ name: "sandpit-http-test", version: "1.0.0" });
await client.connect(transport);

const out = {};
const call = (name, args, options) =>
  client.callTool({ name, arguments: args }, undefined, options);
const message = (e) => String(e && e.message ? e.message : e);

out.session = transport.sessionId;
out.protocol = transport.protocolVersion;
out.server = client.getServerVersion();
out.tools = (await client.listTools()).tools;
out.first = await call("python_exec", { code: "x = 6 * 7\nprint('x is', x)" });
out.second = await call("python_exec", { code: "x + 1" });
out.chart = await call("python_exec", {
  code: "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.title('squares')",
});
out.error = await call("python_exec", { code: "1 / 0" });
out.ping = await client.ping();

// Progress: a cell that prints over time; each print comes as a progress
// notification on the call's stream, before the result.
out.progress = [];
out.printer = await call(
  "python_exec",
  { code: "import time\nfor i in range(3):\n    print('tick', i, flush=True)\n    time.sleep(0.4)" },
  { onprogress: (p) => out.progress.push(p.message) },
);

// Cancellation: the cell says it is sleeping, then the client aborts the
// call, which sends notifications/cancelled; the cell must be interrupted,
// and the interpreter keep its variables.
const controller = new AbortController();
out.cancel_progress = [];
const started = Date.now();
const sleeper = call(
  "python_exec",
  {
    code:
      "import time\nstate = 'before'\nprint('cell is sleeping', flush=True)\n" +
      "try:\n    time.sleep(30)\n    state = 'finished'\n" +
      "except KeyboardInterrupt:\n    state = 'interrupted'\n    raise\n",
  },
  {
    signal: controller.signal,
    onprogress: (p) => {
      out.cancel_progress.push(p.message);
      if (p.message && p.message.includes("cell is sleeping")) controller.abort("test");
    },
  },
);
try {
  await sleeper;
  out.cancel = "completed";
} catch (e) {
  out.cancel = "rejected: " + message(e);
}
out.after_cancel = await call("python_exec", { code: "print(state, x)" });
out.cancel_s = (Date.now() - started) / 1000;

// The test looks at the session's processes, then lets the client end it.
console.log("session " + transport.sessionId);
const lines = createInterface({ input: process.stdin });
await new Promise((resolve) => lines.once("line", resolve));
lines.close();
await transport.terminateSession();
out.terminated = transport.sessionId === undefined;
try {
  await call("python_exec", { code: "x" });
  out.after_end = "accepted";
} catch (e) {
  out.after_end = "rejected: " + message(e);
}
await client.close();
console.log(JSON.stringify(out));
