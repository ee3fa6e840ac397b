/* pump: the worker's stdout and stderr, as stream messages.
 * Python's sys.stdout and sys.stderr hand their text to pump_write (no system
 * call per print); file descriptors 1 and 2 become pipes that a thread reads,
 * so output from C extensions and os.write arrives too, while the cell runs.
 * Output is gathered for a few milliseconds into one message; pump_flush
 * sends everything written so far, before a result, a display or a reply goes
 * out, so the order the cell produced is the order sent. */
#ifndef SANDPIT_PUMP_H
#define SANDPIT_PUMP_H

#include <stddef.h>

/* Replaces fds 1 and 2 with pipes and starts the reading thread. cap is the
 * output cap (in bytes, 0: none) of a request the pump has no account for.
 * 0 or -errno. */
int pump_start(unsigned long cap);

/* Adds output of stream 1 (stdout) or 2 (stderr) from Python, belonging to
 * the request whose msg_id is tag (NULL: the default). Thread-safe; never
 * waits long (it sends inline only past a large batch). */
void pump_write(int stream, const char *data, size_t len, const char *tag);

/* The request that output from C code (fds 1 and 2) belongs to: the main
 * shell's. NULL or "" for none. */
void pump_set_default_tag(const char *tag);

/* Sends what has been written to fds 1 and 2 up to now. Blocks (briefly): call
 * it without holding Python's GIL. */
void pump_flush(void);

/* Output is counted per request, by its tag, so that requests that run at
 * once (the main shell's and the subshells') each have their own cap and
 * count. pump_begin opens the account of tag with a cap of max_bytes (0:
 * none) and a count of 0. pump_end sends what is pending, closes it and
 * returns the bytes it dropped past its cap; output that comes later for tag
 * (from a thread the cell started) still counts against the same cap. */
void pump_begin(const char *tag, unsigned long max_bytes);
unsigned long pump_end(const char *tag);

#endif
