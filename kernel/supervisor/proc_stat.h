/* proc_stat: a process's figures from /proc/<pid>/stat (proc_stat.c). */
#ifndef SANDPIT_PROC_STAT_H
#define SANDPIT_PROC_STAT_H

#include <sys/types.h>

/* The CPU time the process pid has used, all its threads together, in seconds,
 * or -1 when pid is not above 0 or its stat cannot be read. */
double proc_stat_cpu_seconds(pid_t pid);

#endif
