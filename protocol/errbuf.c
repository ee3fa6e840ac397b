/* errbuf: one place that formats the sentences that go with error returns. */
#include "protocol/errbuf.h"

#include <stdarg.h>
#include <stdio.h>

int errbuf_set(int rc, char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return rc;
}
