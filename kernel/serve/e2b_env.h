/* e2b_env: the env_vars of an E2B POST /execute, for that cell alone. E2B
 * sets them around the cell and puts the old values back after it; here
 * the route sends the kernel three requests in order: a silent cell that
 * sets them (keeping the old values), the user's cell, and a silent cell
 * that restores them, whatever the user's cell did. The kernel runs a
 * shell's requests in order, and the route asks it not to skip the rest
 * after an error (stop_on_error false). The names and values are checked
 * here and reach Python as data (json.loads of a string literal), never as
 * code. Pure: no I/O; the strings returned are new (caller frees). */
#ifndef SANDPIT_SERVE_E2B_ENV_H
#define SANDPIT_SERVE_E2B_ENV_H

#include <jansson.h>
#include <stddef.h>

#define E2B_ENV_MAX       64   /* variables a cell may set */
#define E2B_ENV_NAME_MAX  128  /* bytes of a name */
#define E2B_ENV_VALUE_MAX 4096 /* bytes of a value */

/* Checks env (NULL or JSON null: none; else an object of strings within
 * the bounds above, names of letters, digits and '_' not starting with a
 * digit, values without NUL). 0 with *set and *restore the two silent
 * cells' code (both NULL when env has no variable); -EINVAL with a
 * sentence in err; -ENOMEM. */
int e2b_env_code(const json_t *env, char **set, char **restore, char *err, size_t errlen);

#endif
