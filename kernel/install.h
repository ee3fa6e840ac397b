/* install: `sandpit install`, which writes a kernelspec (kernel.json and the
 * logos) naming the absolute path of the binary that ran the command. */
#ifndef SANDPIT_INSTALL_H
#define SANDPIT_INSTALL_H

/* argv[0] is "install". Returns the exit status. */
int install_main(int argc, char **argv);

#endif
