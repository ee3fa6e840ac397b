/* install: `sandpit install`, which writes a kernelspec (kernel.json and the
 * logos) naming the absolute path of the binary that ran the command. */
#ifndef SANDPIT_INSTALL_H
#define SANDPIT_INSTALL_H

#include <stdbool.h>
#include <stddef.h>

#define INSTALL_SYSTEM_DIR "/usr/local/share/jupyter" /* where a bare install writes */

/* argv[0] is "install". Returns the exit status: 0, 1 when the kernelspec
 * could not be written, 2 for a wrong command line. */
int install_main(int argc, char **argv);

/* The Jupyter data folder a kernelspec goes in: DIR/share/jupyter for a
 * prefix, the user's Jupyter data folder for user, else the system-wide
 * INSTALL_SYSTEM_DIR. 0 or -errno. */
int install_data_dir(bool user, const char *prefix, char *out, size_t len);

/* Whether name may name a kernelspec: letters, digits, -, _ and ., at most 64. */
bool install_valid_name(const char *name);

#endif
