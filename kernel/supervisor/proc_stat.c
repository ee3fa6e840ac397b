/* proc_stat: what the supervisor reads of a process from outside, in
 * /proc/<pid>/stat. The file is the kernel's, but the command's name in it is
 * the process's own (it may hold spaces and parentheses), so fields are counted
 * from the last ')'. */
#include "kernel/supervisor/proc_stat.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

double proc_stat_cpu_seconds(pid_t pid)
{
    if (pid <= 0)
        return -1;
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    /* The command's name, in parentheses, may hold spaces: count fields after the
     * last ')', which is followed by field 3. utime and stime are fields 14 and 15,
     * for the whole process. */
    const char *p = strrchr(buf, ')');
    if (!p)
        return -1;
    p++;
    for (int field = 3; field < 14 && p; field++) {
        p += strspn(p, " ");
        p = strchr(p, ' ');
    }
    if (!p)
        return -1;
    char *end;
    unsigned long long utime = strtoull(p, &end, 10);
    if (end == p)
        return -1;
    p = end;
    unsigned long long stime = strtoull(p, &end, 10);
    if (end == p)
        return -1;
    long hz = sysconf(_SC_CLK_TCK);
    return (double)(utime + stime) / (double)(hz > 0 ? hz : 100);
}
