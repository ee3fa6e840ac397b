/* version: sandpit's own version, as `sandpit --version` and kernel_info_reply
 * give it. */
#ifndef SANDPIT_VERSION_H
#define SANDPIT_VERSION_H

#define SANDPIT_VERSION "0.1.0"

#endif
