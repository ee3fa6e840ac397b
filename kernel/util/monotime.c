/* monotime: CLOCK_MONOTONIC as a double. A double holds nanoseconds exactly
 * for over a hundred days of uptime and microseconds for centuries, which is
 * all the precision a time limit or a 20 ms window needs. */
#include "kernel/util/monotime.h"

#include <time.h>

double monotime_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
