/* connfile: write a fresh connection file for a kernel we launch ourselves.
 * `sandpit start` and `sandpit mcp` play the part a Jupyter client plays for
 * kernel.json kernels: they pick the ports and the key, then start the kernel
 * with -f pointing at the file. */
#ifndef SANDPIT_CONNFILE_H
#define SANDPIT_CONNFILE_H

#include <stddef.h>

#include "protocol/connection.h"

/* Writes a connection file at path (mode 0600, replacing any file there):
 * tcp on 127.0.0.1, five ports that were free when bound, a random key,
 * hmac-sha256. 0 or -errno with a sentence in err. */
int connfile_write(const char *path, char *err, size_t errlen);

/* As connfile_write, with the address and the five ports (by enum
 * connection_channel) chosen by the caller. */
int connfile_write_ports(const char *path, const char *ip,
                         const int ports[CONNECTION_NCHANNELS], char *err, size_t errlen);

/* Writes a connection file at path for the ipc transport: its sockets are
 * files in a folder of mode 0700 beside it (connfile_ipc_dir), so that no
 * other user's process can connect (on TCP, every local process can, and
 * iopub needs no key). Returns 0; 1 when the folder's path is too long for a
 * socket's address, and the file was written for tcp on 127.0.0.1 instead;
 * or -errno with a sentence in err. */
int connfile_write_ipc(const char *path, char *err, size_t errlen);

/* The ipc folder of the connection file at path: path with ".ipc" for its
 * ".json". 0, or -ENAMETOOLONG. */
int connfile_ipc_dir(const char *path, char *out, size_t len);

/* Removes the connection file at path and its ipc folder, if any (the sockets
 * a kernel killed outright left there). */
void connfile_remove(const char *path);

#endif
