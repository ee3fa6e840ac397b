/* kernelspecs: `sandpit list` and `sandpit uninstall`, the kernelspecs of
 * sandpit that Jupyter would find, as `jupyter kernelspec list` and `remove`
 * do for any kernel (Debian packages no `jupyter kernelspec` command).
 * `sandpit install` writes them (install.h). */
#ifndef SANDPIT_KERNELSPECS_H
#define SANDPIT_KERNELSPECS_H

/* argv[0] is "list": every sandpit kernelspec on Jupyter's path, in the order
 * Jupyter looks, with its options. Returns the exit status (0, or 2 for a
 * wrong command line). */
int kernelspecs_list_main(int argc, char **argv);

/* argv[0] is "uninstall": [--user | --prefix DIR] [--name NAME] removes the
 * sandpit kernelspec NAME ("sandpit") from where `install` with the same
 * options writes it. Returns the exit status: 0, 1 when there is none (or
 * not sandpit's) or it cannot be removed, 2 for a wrong command line. */
int kernelspecs_uninstall_main(int argc, char **argv);

#endif
