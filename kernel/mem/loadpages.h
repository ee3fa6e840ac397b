/* loadpages: the pages that the dynamic loader read to load a program's
 * libraries, given back once the program has started.
 *
 * Each library's first segment holds what the loader reads to link it: its
 * symbol and string tables, their hash table, and its relocation tables. The
 * loader reads every page of the relocation tables at start (OpenSSL's alone
 * are 490 kB), and they stay mapped in every process, as part of its memory,
 * for as long as it runs, though it never reads them again. Calls bound
 * lazily, and a library opened later, read the symbol tables again: a page
 * given back is read again from the page cache when that happens, as it was
 * the first time.
 *
 * The segment is the one at the start of the file, readable only: the loader
 * never writes it (a library with text relocations is left alone), so the
 * pages hold the file's bytes, and giving them back loses nothing. */
#ifndef SANDPIT_LOADPAGES_H
#define SANDPIT_LOADPAGES_H

#include <stddef.h>

/* Gives back the resident pages of every loaded library's first segment (the
 * program's own too when it is a file). Returns the bytes advised. */
size_t loadpages_release(void);

#endif
