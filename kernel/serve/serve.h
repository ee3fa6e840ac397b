/* serve: `sandpit serve`, a kernel gateway: one process serving jupyter_
 * server's kernel API (REST and WebSocket) on one port with libwebsockets,
 * a sandboxed `sandpit kernel` for each kernel it is asked for. The data
 * flow: lws parses a request (http.c) -> routes.c answers it, starting and
 * stopping kernels in the registry (registry.c); a WebSocket (bridge.c)
 * -> codec_decode -> zwire_send on the client's own DEALERs; the kernel's
 * iopub and replies -> zwire_recv -> codec_encode -> the client's queue. */
#ifndef SANDPIT_SERVE_SERVE_H
#define SANDPIT_SERVE_SERVE_H

/* argv[0] is "serve". Returns the exit status. */
int serve_main(int argc, char **argv);

#endif
