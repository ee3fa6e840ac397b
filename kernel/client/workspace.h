/* workspace: read-only access to the files of a workspace for MCP clients
 * (the workspace_list and workspace_read tools), confined to it: a path is
 * relative to the workspace, has no "..", and no symbolic link may lead out
 * of it. The Jupyter runtime folder, where connection files keep their keys,
 * is out of reach even when it lies inside the workspace. */
#ifndef SANDPIT_WORKSPACE_H
#define SANDPIT_WORKSPACE_H

#include <jansson.h>
#include <stddef.h>

struct workspace {
    char root[4096];   /* real path */
    char hidden[4096]; /* real path of a folder kept out of reach, or "" */
};

/* Sets the root (which must exist) and the folder to hide (may be NULL). 0 or
 * -errno. */
int workspace_init(struct workspace *w, const char *root, const char *hidden);

/* Opens rel (relative to the root) for reading: a file, or with directory a
 * folder. Returns the descriptor (caller closes) or -errno with a sentence in
 * err: -EINVAL (absolute, or with ".."), -EXDEV (leads out of the workspace),
 * -EACCES (the hidden folder), or what open says. */
int workspace_open(const struct workspace *w, const char *rel, int directory, char *err,
                   size_t errlen);

/* Lists rel (a folder, "" or "." for the root) and what is below it, up to
 * max_entries, without following symbolic links: a new array of {path,
 * type: "file"|"folder"|"link"|"other", size}, in name order folder by folder;
 * *truncated says whether entries were left out. NULL with err on failure. */
json_t *workspace_list(const struct workspace *w, const char *rel, size_t max_entries,
                       int *truncated, char *err, size_t errlen);

/* Reads up to max_bytes of rel from byte offset (none past its end), and
 * sets *size to the file's size. *data is new (caller frees), with a NUL
 * after its *len bytes. 0, or as workspace_open. */
int workspace_read_range(const struct workspace *w, const char *rel, size_t offset,
                         size_t max_bytes, char **data, size_t *len, size_t *size,
                         char *err, size_t errlen);

/* Reads rel whole, up to max_bytes. *data is new (caller frees), with a NUL
 * after its *len bytes. 0, -EFBIG (larger than max_bytes), or as
 * workspace_open. */
int workspace_read(const struct workspace *w, const char *rel, size_t max_bytes,
                   char **data, size_t *len, char *err, size_t errlen);

#endif
