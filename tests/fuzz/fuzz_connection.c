/* Fuzzes connection_parse, which reads the connection file a client writes: any text
 * gives 0 or -EINVAL (or -ENOMEM) with a sentence, and on success every port is in
 * 1..65535, the transport is tcp or ipc, and every endpoint can be written. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "protocol/connection.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct connection c;
    char err[256] = "";
    int rc = connection_parse(&c, (const char *)data, size, err, sizeof err);
    if (rc == -EINVAL && !err[0])
        abort();
    if (rc != 0 && rc != -EINVAL && rc != -ENOMEM)
        abort();
    if (rc == 0) {
        if (strcmp(c.transport, "tcp") != 0 && strcmp(c.transport, "ipc") != 0)
            abort();
        if (strcmp(c.signature_scheme, "hmac-sha256") != 0 || !c.ip || !c.kernel_name ||
            !c.key)
            abort();
        for (int ch = 0; ch < CONNECTION_NCHANNELS; ch++) {
            if (c.ports[ch] < 1 || c.ports[ch] > 65535)
                abort();
            char ep[64];
            int e = connection_endpoint(&c, (enum connection_channel)ch, ep, sizeof ep);
            if (e != 0 && e != -ENAMETOOLONG)
                abort();
            if (e == 0 && strlen(ep) >= sizeof ep)
                abort();
        }
        connection_release(&c);
    }
    return 0;
}
