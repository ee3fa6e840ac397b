/* The program sandpit-serve, the kernel gateway, which `sandpit serve` runs
 * (kernel/main.c). It is a program of its own so that libwebsockets, and the
 * libraries it brings (libssl, libcap), are loaded by the gateway alone and not
 * by every kernel's supervisor, whose start-up is sandpit's to keep short. The
 * kernels it starts are sandpit's, beside it (kernel/client/launch.h). */
#include "kernel/serve/serve.h"

int main(int argc, char **argv)
{
    return serve_main(argc, argv);
}
