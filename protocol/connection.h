/* connection: the connection file a Jupyter client writes for the kernel.
 * First step of start-up: it gives the transport, address, five ports, the
 * HMAC key and its scheme. The struct owns its strings; release frees them. */
#ifndef SANDPIT_CONNECTION_H
#define SANDPIT_CONNECTION_H

#include <stddef.h>

enum connection_channel {
    CONNECTION_SHELL,
    CONNECTION_IOPUB,
    CONNECTION_STDIN,
    CONNECTION_CONTROL,
    CONNECTION_HB,
    CONNECTION_NCHANNELS
};

struct connection {
    char *transport; /* "tcp" or "ipc" */
    char *ip;        /* tcp: an address; ipc: a path prefix */
    int ports[CONNECTION_NCHANNELS];
    unsigned char *key; /* may be empty: no signing */
    size_t key_len;
    char *signature_scheme; /* "hmac-sha256" */
    char *kernel_name;      /* may be "" */
};

void connection_init(struct connection *c);
void connection_release(struct connection *c);

/* Parses the JSON text of a connection file into c (initialised by the call).
 * Returns 0, or -EINVAL with a sentence in err naming the field at fault. */
int connection_parse(struct connection *c, const char *text, size_t len, char *err,
                     size_t errlen);

/* Reads and parses the file at path; -errno from the read, or as connection_parse. */
int connection_load(struct connection *c, const char *path, char *err, size_t errlen);

/* Writes the ZeroMQ endpoint of a channel into buf ("tcp://127.0.0.1:5555",
 * "ipc:///tmp/x-5555"). Returns 0 or -ENAMETOOLONG. */
int connection_endpoint(const struct connection *c, enum connection_channel ch, char *buf,
                        size_t len);

/* The channel's name as the connection file spells it without "_port". */
const char *connection_channel_name(enum connection_channel ch);

#endif
