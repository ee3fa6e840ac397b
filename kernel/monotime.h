/* monotime: the one monotonic clock of both processes, in seconds.
 * Timers, time limits, start-up deadlines and the pump's gathering window all
 * read it: a duration is never measured with the wall clock, which jumps. */
#ifndef SANDPIT_MONOTIME_H
#define SANDPIT_MONOTIME_H

/* Seconds since an arbitrary start (CLOCK_MONOTONIC). */
double monotime_now(void);

#endif
