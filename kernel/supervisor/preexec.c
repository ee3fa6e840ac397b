/* preexec: the first steps of a process the supervisor starts, before it execs.
 *
 * The supervisor has ZeroMQ's threads running, so the new process may only make
 * async-signal-safe calls until it execs. It leaves the supervisor's process
 * group, so that a SIGINT sent to the whole group (interrupt_mode "signal")
 * reaches it once, forwarded by the supervisor, not twice; and it asks to be
 * killed if the supervisor dies, so that it does not outlive its kernel. */
#include "kernel/supervisor/preexec.h"

#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "kernel/link/worker_exit.h"

void preexec_setup(pid_t parent)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    signal(SIGINT, SIG_DFL);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != parent)
        _exit(WORKER_EXIT_EXEC);
}
