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

#endif
