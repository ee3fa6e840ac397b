/* mcp: `sandpit mcp`, a Model Context Protocol server on standard input and
 * output that gives a coding assistant a persistent, sandboxed Python: the
 * tools python_exec, python_reset, workspace_list and workspace_read. It
 * starts and supervises a kernel of its own (`sandpit kernel` as a child
 * process, on a private connection file) and talks to it as any Jupyter
 * client would. Returns the process's exit status. */
#ifndef SANDPIT_MCP_H
#define SANDPIT_MCP_H

/* argv[0] is the subcommand; version is sandpit's, for serverInfo. */
int mcp_main(int argc, char **argv, const char *version);

#endif
