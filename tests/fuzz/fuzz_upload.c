/* Fuzzes what an upload to E2B's POST /files goes through before any file is
 * touched: the chunked body's decoder, the multipart walker and the mapping of
 * a path beneath the workspace. The first byte picks which (and, for the
 * decoder, how the input is cut into pieces); the rest is the input.
 *   chunked:   the data never outgrows its framing, every piece is consumed
 *              until the end, nothing after the end is;
 *   multipart: every part lies within the body and within the bounds;
 *   e2b_path:  a path that maps is relative, of plain components (no "..",
 *              no ".", no empty one), without a NUL, within E2B_PATH_MAX. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/serve/chunked.h"
#include "kernel/serve/e2b_path.h"
#include "kernel/serve/multipart.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void fuzz_chunked(const char *in, size_t len, size_t step)
{
    struct chunked c;
    chunked_init(&c);
    char *out = malloc(len + 1);
    if (!out)
        return;
    size_t total = 0, i = 0;
    while (i < len) {
        size_t n = len - i < step ? len - i : step, got, used;
        int rc = chunked_decode(&c, in + i, n, out + total, &got, &used);
        if (used > n || got > used || (rc && rc != -EINVAL) || (rc && !c.error))
            abort();
        if (!rc && used < n && !chunked_done(&c))
            abort(); /* only the end stops it short */
        total += got;
        i += used;
        if (rc || chunked_done(&c))
            break;
    }
    if (total > len)
        abort();
    free(out);
}

static void fuzz_multipart(const char *in, size_t len)
{
    const char *nl = memchr(in, '\n', len);
    if (!nl)
        return;
    char ctype[256];
    size_t hl = (size_t)(nl - in);
    if (hl >= sizeof ctype)
        return;
    memcpy(ctype, in, hl);
    ctype[hl] = 0;
    char boundary[MULTIPART_MAX_BOUNDARY + 1];
    if (multipart_boundary(ctype, boundary, sizeof boundary))
        return;
    const char *body = nl + 1;
    size_t blen = len - hl - 1;
    struct multipart m;
    struct multipart_part *p = malloc(sizeof *p);
    if (!p)
        return;
    multipart_init(&m, boundary, body, blen);
    int rc, parts = 0;
    while ((rc = multipart_next(&m, p)) == 1) {
        if (++parts > MULTIPART_MAX_PARTS)
            abort();
        if (p->data < body || p->data + p->len > body + blen)
            abort();
        if (strlen(p->name) > MULTIPART_MAX_NAME ||
            strlen(p->filename) > MULTIPART_MAX_FILENAME)
            abort();
    }
    if (rc != 0 && (rc != -EINVAL || !m.error))
        abort();
    free(p);
}

static void fuzz_path(const char *in, size_t len)
{
    char rel[E2B_PATH_MAX + 1];
    const char *why = NULL;
    int rc = e2b_path_map(in, len, rel, sizeof rel, &why);
    if (rc) {
        if (rc != -EINVAL || !why)
            abort();
        return;
    }
    size_t n = strlen(rel);
    if (n > E2B_PATH_MAX || rel[0] == '/' || (n && rel[n - 1] == '/'))
        abort();
    for (const char *c = rel; *c;) {
        size_t k = strcspn(c, "/");
        if (k == 0 || (k == 1 && c[0] == '.') || (k == 2 && c[0] == '.' && c[1] == '.'))
            abort();
        c += k + (c[k] == '/');
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    const char *in = (const char *)data + 1;
    size_t len = size - 1;
    switch (data[0] % 3) {
    case 0:
        fuzz_chunked(in, len, (size_t)(data[0] / 3) + 1);
        break;
    case 1:
        fuzz_multipart(in, len);
        break;
    default:
        fuzz_path(in, len);
        break;
    }
    return 0;
}
