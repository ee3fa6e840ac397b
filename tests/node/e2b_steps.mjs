// What the E2B clients (e2b_client.mjs, e2b_files_client.mjs) share: the
// check of the two environment variables of E2B's local mode, and steps that
// record what they saw, or what they threw, in one object printed at the end.

export function requireLocalMode(name) {
  if (process.env.E2B_DEBUG !== "true" || !process.env.E2B_SANDBOX_URL) {
    console.error(`${name}: set E2B_DEBUG=true and E2B_SANDBOX_URL`);
    process.exit(2);
  }
}

export const failure = (e) => ({
  threw: String(e && e.message ? e.message : e),
  name: e && e.name ? e.name : null,
});

// step(name, fn) runs fn and keeps its value (or {threw, name}) as out[name].
export function stepper(out) {
  return async function step(name, fn) {
    try {
      out[name] = await fn();
    } catch (e) {
      out[name] = failure(e);
    }
  };
}
