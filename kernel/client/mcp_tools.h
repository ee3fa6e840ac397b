/* mcp_tools: the pieces of `sandpit mcp`'s tool results (kernel/client/mcp.c):
 * the tool list, text items cut to --max-chars, results and errors, and the two workspace
 * tools, workspace_list and workspace_read, that need no kernel. */
#ifndef SANDPIT_MCP_TOOLS_H
#define SANDPIT_MCP_TOOLS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "kernel/client/workspace.h"

#define MCP_DEFAULT_MAX_CHARS 20000
#define MCP_READ_DEFAULT      100000      /* bytes of text workspace_read returns */
#define MCP_READ_MAX          1000000     /* the largest "length" it takes */
#define MCP_READ_IMAGE_MAX    (10u << 20) /* the largest image it returns */

/* The tools, as tools/list answers them ({"tools": [...]}). New; NULL when
 * out of memory. */
json_t *mcp_tool_list(void);

/* The characters a text item keeps (0: all), from --max-chars. */
void mcp_set_max_chars(size_t max_chars);

/* Takes --max-chars N (or --max-chars=N), the server's own option, out of
 * argv and sets the bound. 0, or -EINVAL with a sentence in err. */
int mcp_take_max_chars(int *argc, char **argv, char *err, size_t errlen);

/* A text item {"type": "text", "text"}, cut to the --max-chars bound (its
 * beginning and end, with a line saying how much was cut). NULL: no memory. */
json_t *mcp_text_item(const char *text);

/* Appends item to content; false (and item dropped) when either is NULL or
 * the append fails, so that no failure goes unseen. */
bool mcp_append(json_t *content, json_t *item);

/* A tool's result: content, and isError. Takes over *content. */
json_t *mcp_tool_result(json_t **content, bool is_error);

/* A failed tool call: "what: detail" (detail may be NULL). */
json_t *mcp_tool_error(const char *what, const char *detail);

/* The tools workspace_list (args: optional "path") and workspace_read (args:
 * "path", optional "offset" and "length" in bytes). Results, never NULL but
 * for want of memory. */
json_t *mcp_list_files(const struct workspace *ws, json_t *args);
json_t *mcp_read_file(const struct workspace *ws, json_t *args);

/* Whether workspace_read's optional arguments are right; else a sentence. */
const char *mcp_read_args_error(json_t *args);

#endif
