/* sandpit-worker: the program that runs the user's code, started by the
 * supervisor (`sandpit kernel`) beside which it is installed, never by hand.
 * A program of its own, apart from `sandpit`, so that each process loads only
 * the libraries it uses: the worker links CPython but not ZeroMQ, OpenSSL or
 * SQLite, and the supervisor the other way round. Each starts sooner and holds
 * less memory, and the worker's exec gives it an address space that owes
 * nothing to the supervisor's. */
#include "kernel/worker/worker.h"

int main(int argc, char **argv)
{
    return worker_main(argc, argv);
}
