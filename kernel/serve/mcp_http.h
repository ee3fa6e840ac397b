/* mcp_http: the Model Context Protocol's Streamable HTTP transport (protocol
 * 2025-06-18, and 2025-03-26 and 2024-11-05 that clients still negotiate) at
 * /mcp, for coding assistants on other machines. It is only a transport:
 * the tools are `sandpit mcp`'s, one process a session (mcp_session.h).
 * POST carries the client's messages (initialize starts a session and its
 * answer names it in Mcp-Session-Id, which every later request carries),
 * answered as JSON or as an SSE stream with a call's progress; DELETE ends
 * a session and its kernel; GET (a stream for the server's own requests,
 * which it never makes) is 405. The server's token is checked by http.c;
 * here the Origin, the Accept, the protocol version and the session. */
#ifndef SANDPIT_SERVE_MCP_HTTP_H
#define SANDPIT_SERVE_MCP_HTTP_H

#include "kernel/serve/request.h"
#include "kernel/serve/resp.h"

struct serve;

/* Answers a request for /mcp. */
void mcp_http_handle(struct serve *s, const struct serve_request *rq,
                     struct routes_resp *out);

#endif
