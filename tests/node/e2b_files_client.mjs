// E2B's files API on `sandpit serve`, driven by E2B's own JavaScript SDK
// (@e2b/code-interpreter) in its local mode, as e2b_client.mjs is: the parts
// of sbx.files beyond one write and one read. Several files in one multipart
// body, a write from a stream (the SDK then sends application/octet-stream
// with chunked transfer encoding), files.list (envd's Connect ListDir),
// files.getInfo and files.exists (Stat), and the calls this server leaves
// out (makeDir, remove, gzip uploads), which must fail with a clear error.
//
// It prints one JSON object with what each step saw, for the pytest test to
// check; a step that throws records {"threw": message, "name"}.
//
//   E2B_DEBUG=true E2B_SANDBOX_URL=http://127.0.0.1:PORT/e2b/SECRET node e2b_files_client.mjs
import { Sandbox } from "@e2b/code-interpreter";

import { requireLocalMode, stepper } from "./e2b_steps.mjs";

const out = {};
requireLocalMode("e2b_files_client");
const step = stepper(out);
const entry = (e) => ({ name: e.name, type: e.type, path: e.path, size: e.size });

const sbx = await Sandbox.create();

// Two files in one multipart body, each named by its part's filename.
await step("write_files", async () =>
  sbx.files.write([
    { path: "sdk/a.txt", data: "A" },
    { path: "/home/user/sdk/b.txt", data: "BB" },
  ]),
);

// A write from a stream: octet-stream, chunked, 256 KiB of every byte value.
await step("stream_write", async () => {
  const total = 256 * 1024;
  let sent = 0;
  const stream = new ReadableStream({
    pull(controller) {
      if (sent >= total) {
        controller.close();
        return;
      }
      const piece = new Uint8Array(8192);
      for (let i = 0; i < piece.length; i++) piece[i] = (sent + i) % 256;
      sent += piece.length;
      controller.enqueue(piece);
    },
  });
  const info = await sbx.files.write("streamed.bin", stream);
  const back = await sbx.files.read("streamed.bin", { format: "bytes" });
  let same = back.length === total;
  for (let i = 0; same && i < total; i++) same = back[i] === i % 256;
  return { info, read_length: back.length, same_bytes: same };
});

// The raw body without a stream: useOctetStream.
await step("octet_write", async () => {
  const info = await sbx.files.write("octet.txt", "raw bytes", { useOctetStream: true });
  return { info, back: await sbx.files.read("octet.txt") };
});

await step("list", async () => (await sbx.files.list("/home/user/sdk")).map(entry));
await step("list_deep", async () =>
  (await sbx.files.list("/home/user", { depth: 2 })).map((e) => e.path).sort(),
);
await step("list_missing", async () => (await sbx.files.list("no_such_folder")).map(entry));
await step("info", async () => entry(await sbx.files.getInfo("sdk/b.txt")));
await step("exists", async () => ({
  file: await sbx.files.exists("sdk/a.txt"),
  folder: await sbx.files.exists("/home/user/sdk"),
  missing: await sbx.files.exists("sdk/nope.txt"),
}));

// What this server leaves out: each a clear error, not a hang.
await step("make_dir", async () => ({ made: await sbx.files.makeDir("made") }));
await step("remove", async () => ({ removed: await sbx.files.remove("sdk/a.txt") }));
await step("gzip", async () => ({ info: await sbx.files.write("g.txt", "x", { gzip: true }) }));
await step("outside", async () => ({ info: await sbx.files.write("/etc/e2b_outside", "x") }));

console.log(JSON.stringify(out));
process.exit(0);
