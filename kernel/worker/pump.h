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

/* Replaces fds 1 and 2 with pipes and starts the reading thread. 0 or -errno. */
int pump_start(void);

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

/* Sets the cap for the next cell (0: none) and resets the count; returns the
 * bytes that the previous cell had dropped past its cap. */
unsigned long pump_reset(unsigned long max_bytes);

#endif
