/* status_all: `sandpit status --all`, every sandpit kernel of this user. */
#ifndef SANDPIT_STATUS_ALL_H
#define SANDPIT_STATUS_ALL_H

/* argv as for status (--all and --json are read). Returns the exit status:
 * 0, or 2 when the runtime folder cannot be read. */
int status_all_main(int argc, char **argv);

#endif
