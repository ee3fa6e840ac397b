// Code written for E2B, run against `sandpit serve`: E2B's own JavaScript SDK
// (@e2b/code-interpreter) in its local mode, pointed at the server by the two
// environment variables a user sets, E2B_DEBUG=true and E2B_SANDBOX_URL (the
// URL `sandpit serve` prints, with its secret). In that mode Sandbox.create()
// asks E2B's cloud nothing: every request goes to E2B_SANDBOX_URL, runCode's
// to <url>/execute and <url>/contexts, files' to <url>/files.
//
// It prints one JSON object with what each step saw, for the pytest test to
// check; a step that throws records {"threw": message} and the others still
// run.
//
//   E2B_DEBUG=true E2B_SANDBOX_URL=http://127.0.0.1:PORT/e2b/SECRET node e2b_client.mjs
//
// With E2B_REFUSED_URL also set (the same server without the secret, or with a
// wrong one), a second sandbox is pointed there and what runCode and
// files.read met is recorded as "refused".
import { Sandbox } from "@e2b/code-interpreter";

import { failure, requireLocalMode, stepper } from "./e2b_steps.mjs";

const out = { sandbox_url: process.env.E2B_SANDBOX_URL, debug: process.env.E2B_DEBUG };
requireLocalMode("e2b_client");
const step = stepper(out);
const summary = (execution) => ({
  text: execution.text ?? null,
  stdout: execution.logs.stdout,
  stderr: execution.logs.stderr,
  results: execution.results.map((r) => ({
    is_main_result: r.isMainResult,
    formats: r.formats(),
    text: r.text ?? null,
  })),
  error: execution.error
    ? { name: execution.error.name, value: execution.error.value, traceback: execution.error.traceback }
    : null,
  execution_count: execution.executionCount ?? null,
});

const sbx = await Sandbox.create();
out.sandbox_id = sbx.sandboxId;

// State kept between two cells of the default context.
await step("first", async () => summary(await sbx.runCode("x = 41\nprint('x set')")));
await step("second", async () => summary(await sbx.runCode("x + 1")));

// A chart arrives as a display result with a PNG (base64).
await step("chart", async () => {
  const ex = await sbx.runCode(
    "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])\nplt.title('squares')\nplt.show()",
  );
  const png = ex.results.length ? ex.results[0].png : undefined;
  const bytes = typeof png === "string" ? Buffer.from(png, "base64") : Buffer.alloc(0);
  return {
    ...summary(ex),
    png_type: typeof png,
    png_bytes: bytes.length,
    png_magic: bytes.subarray(0, 8).toString("hex"),
  };
});

// An exception arrives as execution.error, with onError called once.
await step("error", async () => {
  const seen = [];
  const ex = await sbx.runCode("def f():\n    return 1 / 0\nf()", {
    onError: (e) => seen.push(e.name),
  });
  return { ...summary(ex), on_error: seen };
});

// onStdout is called as the cell prints, not at its end: the cell prints
// "ready" and then waits (at most 30 s) for a file that this client writes
// only once its onStdout has seen "ready". A server that held the output
// back until the cell ended would have the cell give up and print "timeout".
await step("streaming", async () => {
  const lines = [];
  const stderr = [];
  let wrote = null;
  const ex = await sbx.runCode(
    "import os, sys, time\nif os.path.exists('e2b_go.txt'):\n    os.remove('e2b_go.txt')\n" +
      "print('ready', flush=True)\nprint('to stderr', file=sys.stderr, flush=True)\n" +
      "for _ in range(300):\n    if os.path.exists('e2b_go.txt'):\n        break\n" +
      "    time.sleep(0.1)\nprint('go' if os.path.exists('e2b_go.txt') else 'timeout')",
    {
      onStdout: async (m) => {
        lines.push({ line: m.line, error: m.error });
        if (m.line.includes("ready") && wrote === null) {
          wrote = "pending";
          try {
            await sbx.files.write("e2b_go.txt", "go");
            wrote = "written";
          } catch (e) {
            wrote = failure(e);
          }
        }
      },
      onStderr: (m) => stderr.push({ line: m.line, error: m.error }),
      timeoutMs: 60_000,
    },
  );
  return { ...summary(ex), on_stdout: lines, on_stderr: stderr, wrote };
});

// files.write then files.read of the same bytes: every byte value, and a
// text under the prefix the SDK's users write (/home/user).
await step("files", async () => {
  const bytes = new Uint8Array(256 * 4);
  for (let i = 0; i < bytes.length; i++) bytes[i] = i % 256;
  const info = await sbx.files.write("e2b_bytes.bin", bytes);
  const back = await sbx.files.read("e2b_bytes.bin", { format: "bytes" });
  const text = "héllo from E2B\nline two\n";
  const textInfo = await sbx.files.write("/home/user/e2b_text.txt", text);
  const textBack = await sbx.files.read("/home/user/e2b_text.txt");
  const seen = await sbx.runCode(
    "open('e2b_bytes.bin', 'rb').read() == bytes(range(256)) * 4",
  );
  return {
    write_info: info,
    read_type: back instanceof Uint8Array ? "Uint8Array" : typeof back,
    same_bytes: Buffer.from(back).equals(Buffer.from(bytes)),
    read_length: back.length,
    text_info: textInfo,
    same_text: textBack === text,
    kernel_sees: seen.text ?? null,
  };
});

// A file that is not there: the SDK's FileNotFoundError (a 404 from envd).
await step("missing", async () => {
  await sbx.files.read("e2b_no_such_file.txt");
  return { threw: null };
});

// A second context is a second interpreter: its own variables, and the
// default context's x is left alone.
await step("context", async () => {
  const ctx = await sbx.createCodeContext();
  const fresh = await sbx.runCode("x", { context: ctx });
  const own = await sbx.runCode("y = 'mine'\ny", { context: ctx });
  const back = await sbx.runCode("x, 'y' in globals()");
  const list = await sbx.listCodeContexts();
  return {
    ctx,
    fresh: summary(fresh),
    own: summary(own),
    default_after: summary(back),
    listed: Array.isArray(list) ? list.map((c) => c.id) : list,
  };
});

if (process.env.E2B_REFUSED_URL) {
  await step("refused", async () => {
    const other = await Sandbox.create({ sandboxUrl: process.env.E2B_REFUSED_URL });
    const res = {};
    try {
      await other.runCode("1 + 1");
      res.run = { threw: null };
    } catch (e) {
      res.run = failure(e);
    }
    try {
      await other.files.read("e2b_bytes.bin");
      res.read = { threw: null };
    } catch (e) {
      res.read = failure(e);
    }
    return res;
  });
}

await step("kill", async () => sbx.kill());
console.log(JSON.stringify(out));
// The SDK leaves a request timer running after a refused runCode (60 s):
// the observations are out, so end here rather than wait for it.
process.exit(0);
