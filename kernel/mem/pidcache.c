/* pidcache: getpid() answered from memory in the supervisor's program.
 *
 * glibc has not cached the process id since 2.25, so every getpid() is a
 * system call, and libzmq calls it at each operation on a mailbox, to find
 * out whether the process has forked under it: about twenty times per cell,
 * a microsecond or more each on a virtual machine. This definition takes the
 * place of libc's for the program and the libraries it loads (an executable's
 * symbols come first), and asks the kernel once per process.
 *
 * What is hard: a child of fork() must not keep its parent's number, so the
 * cache is dropped in the child (pthread_atfork); a child of vfork() shares
 * the parent's memory until it execs and must not write the cache, and does
 * not: the parent fills it before it forks (worker_process.c asks for its own pid
 * first), so the child only reads. Nothing here calls clone() directly. */
#include <pthread.h>
#include <sys/syscall.h>
#include <unistd.h>

static pid_t cached;

static void forget(void)
{
    __atomic_store_n(&cached, 0, __ATOMIC_RELAXED);
}

__attribute__((constructor)) static void pidcache_init(void)
{
    pthread_atfork(NULL, NULL, forget);
    __atomic_store_n(&cached, (pid_t)syscall(SYS_getpid), __ATOMIC_RELAXED);
}

pid_t getpid(void)
{
    pid_t pid = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (!pid) {
        pid = (pid_t)syscall(SYS_getpid);
        __atomic_store_n(&cached, pid, __ATOMIC_RELAXED);
    }
    return pid;
}
