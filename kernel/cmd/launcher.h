/* launcher: `sandpit kernel` started by Jupyter Enterprise Gateway, as its own
 * kernel launcher (no Python launcher runs beside it). Before the supervisor
 * starts: the gateway's options, the five ports and the communication port
 * picked within the port range, a fresh key, the connection file in a
 * private folder of the kernel's own (supervisor/tmpdir.h), which the worker
 * is never given. Once the supervisor has bound the five ports:
 * launcher_report seals the connection info (protocol/seal.h) and sends it to
 * the gateway's response address; the supervisor's loop then serves the
 * communication port (supervisor/commport.h). The struct owns its strings, the
 * key, the listening socket until it is taken, and the connection file and its
 * folder, which launcher_release removes. */
#ifndef SANDPIT_LAUNCHER_H
#define SANDPIT_LAUNCHER_H

#include <stdbool.h>
#include <stddef.h>

#include "protocol/connection.h"

/* How long the report may take to reach the gateway's response address. */
#define LAUNCHER_REPORT_TIMEOUT_S 10

struct seal_key;

struct launcher {
    bool enabled; /* one of the gateway's options was given */
    char *kernel_id;
    char *response_address; /* host:port */
    char *public_key;       /* as given: base64 of DER */
    char *port_range;       /* LOW..HIGH as given; NULL or 0..0: any port */
    int port_low, port_high;
    struct seal_key *key;
    char *private_dir;     /* made by launcher_prepare: the connection file's folder */
    char *connection_file; /* written by launcher_prepare, in private_dir */
    int ports[CONNECTION_NCHANNELS];
    int comm_fd; /* the communication port, listening; -1 once taken */
    int comm_port;
    bool reported; /* launcher_report sent the connection */
};

void launcher_init(struct launcher *g);
/* Closes what was not taken and removes the connection file. */
void launcher_release(struct launcher *g);

/* Takes the gateway's options out of argv (argv[0] is the subcommand), as
 * `--RemoteProcessProxy.NAME VALUE` (the form the gateway's kernelspecs use),
 * `--RemoteProcessProxy.NAME=VALUE` or the launchers' newer `--NAME VALUE`,
 * for NAME kernel-id, response-address, public-key, port-range and
 * spark-context-initialization-mode (which must be none: sandpit has no Spark
 * context). What is left, in order, is for options_parse; *argc is updated.
 * 0, or -EINVAL (-ENOMEM) with a sentence in err. */
int launcher_take_options(struct launcher *g, int *argc, char **argv, char *err,
                          size_t errlen);

/* Checks the options together: the kernel id, the response address, the public
 * key (parsed here, so that a bad one stops the kernel before it binds
 * anything) and the port range. 0, or -EINVAL with a sentence in err. */
int launcher_check(struct launcher *g, char *err, size_t errlen);

/* Picks six free ports in the range (five for the channels, held until the last
 * is found so that they differ, and the communication port, which is kept
 * bound and listening), and writes the connection file (tcp on 0.0.0.0, a
 * fresh key, hmac-sha256; mode 0600) as kernel-<kernel id>.json in a folder of
 * its own, TMPDIR/sandpit-<pid>-gateway-XXXXXX (mode 0700): not a folder the
 * worker is given, and one that a later kernel removes if this one is killed
 * before launcher_release does. 0, or -errno with a sentence in err. */
int launcher_prepare(struct launcher *g, char *err, size_t errlen);

/* Sends the connection file's contents with pid, pgid, comm_port and
 * kernel_id, sealed, to the response address over one TCP connection, then
 * closes it (the gateway reads to the end). Blocks for at most
 * LAUNCHER_REPORT_TIMEOUT_S. 0, or -errno with a sentence in err naming the
 * address. */
int launcher_report(struct launcher *g, char *err, size_t errlen);

/* For a kernel that ends before launcher_report succeeded: one line in the
 * log that says so, how the gateway shows it (it has no message for a
 * launcher's failure: it waits out its launch timeout) and that the reason is
 * in the lines before. */
void launcher_log_unreported(const struct launcher *g);

/* Hands the listening communication port over (the caller closes it); -1 when
 * there is none. */
int launcher_take_listener(struct launcher *g);

/* Parses "LOW..HIGH" (0..0: any port). 0, or -EINVAL with a sentence in err. */
int launcher_parse_port_range(const char *text, int *low, int *high, char *err,
                              size_t errlen);

#endif
