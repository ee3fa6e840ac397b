/* monotime: the one monotonic clock of both processes and of the client
 * commands, in seconds. Timers, time limits, start-up deadlines, the pump's
 * gathering window and a client's waits all read it: a duration is never
 * measured with the wall clock, which jumps. */
#ifndef SANDPIT_MONOTIME_H
#define SANDPIT_MONOTIME_H

/* Seconds since an arbitrary start (CLOCK_MONOTONIC). */
double monotime_now(void);

#endif
