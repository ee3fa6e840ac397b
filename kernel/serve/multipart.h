/* multipart: the parts of a multipart/form-data body (RFC 7578, RFC 2046
 * 5.1), as E2B's SDKs send files to POST /files: one part per file, the
 * field "file", its path in the filename. The body is whole in memory
 * (http.c gathered it within its bound); the parser walks it part by part
 * and hands back where each part's bytes lie in it, copying nothing of the
 * data. Hostile input: the boundary is checked as RFC 2046 says (1 to 70
 * characters of its alphabet), a part's headers are bounded in size and
 * count, names and filenames in length, the parts in number; anything
 * malformed is -EINVAL with a sentence. Pure: no I/O, no allocation. */
#ifndef SANDPIT_SERVE_MULTIPART_H
#define SANDPIT_SERVE_MULTIPART_H

#include <stdbool.h>
#include <stddef.h>

#define MULTIPART_MAX_BOUNDARY 70
#define MULTIPART_MAX_HEADERS  8192 /* bytes of one part's header block */
#define MULTIPART_MAX_NAME     256  /* bytes of a field's name */
#define MULTIPART_MAX_FILENAME 4096 /* bytes of a filename (a path, for E2B) */
#define MULTIPART_MAX_PARTS    256

/* Copies the boundary parameter of a Content-Type value (case-insensitive
 * "multipart/form-data; boundary=..." with the boundary quoted or not) into
 * out (MULTIPART_MAX_BOUNDARY + 1 bytes). 0, or -EINVAL when the type is
 * not multipart/form-data or the boundary is missing or not valid. */
int multipart_boundary(const char *content_type, char *out, size_t outlen);

/* A part: its field name and filename (decoded from quoted strings; empty
 * when absent, has_filename says which) and its data, borrowed from the body. */
struct multipart_part {
    char name[MULTIPART_MAX_NAME + 1];
    char filename[MULTIPART_MAX_FILENAME + 1];
    bool has_filename;
    const char *data;
    size_t len;
};

/* The walk over one body (borrowed: it must outlive the walk). */
struct multipart {
    const char *body;
    size_t len, pos;
    char delim[MULTIPART_MAX_BOUNDARY + 5]; /* "\r\n--" boundary */
    size_t dlen;
    int parts;
    bool started, done;
    const char *error; /* why the body was refused (static) */
};

/* Starts a walk of body with boundary (as multipart_boundary gave it). */
void multipart_init(struct multipart *m, const char *boundary, const char *body,
                    size_t len);

/* The next part into *p: 1, or 0 after the last part (the closing
 * delimiter seen), or -EINVAL with m->error (a body that ends without its
 * closing delimiter is malformed). */
int multipart_next(struct multipart *m, struct multipart_part *p);

#endif
