/* sandpit-worker: the worker as a program of its own, with CPython linked in,
 * for the sanitizers' builds (elsewhere the worker is sandpit-worker.so in
 * Python's own program: kernel/worker_preload.c), started by the supervisor
 * (`sandpit kernel`) beside which it is installed, never by hand. Apart from
 * `sandpit`, as the library is, so that each process loads only
 * the libraries it uses: the worker links CPython but not ZeroMQ, OpenSSL or
 * SQLite, and the supervisor the other way round. Each starts sooner and holds
 * less memory, and the worker's exec gives it an address space that owes
 * nothing to the supervisor's. */
#include "kernel/worker/worker.h"

int main(int argc, char **argv)
{
    return worker_main(argc, argv);
}
