/* mcp_tools: the tool list, text items, results, and the workspace tools of
 * `sandpit mcp`.
 *
 * workspace_read returns a file's text as text and PNG, JPEG and GIF images as
 * images. Text is a byte range (offset, length: by default the first 100,000
 * bytes, at most 1,000,000 at a time), moved to whole characters at both ends,
 * with a line saying which bytes of how many were read when that is not all
 * of the file. A file that is not UTF-8 (RFC 3629, protocol/utf8.h) or holds a
 * NUL is refused with an error saying where, never sent as an empty text:
 * every item that cannot be made is an error, not a silent gap. */
#include "kernel/client/mcp_tools.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/util/base64.h"
#include "kernel/client/outcome.h"
#include "kernel/util/flags.h"
#include "protocol/errbuf.h"
#include "protocol/utf8.h"

#define MAX_LIST_ENTRIES 1000

static size_t max_text_chars = MCP_DEFAULT_MAX_CHARS; /* set once, at start */

void mcp_set_max_chars(size_t max_chars)
{
    max_text_chars = max_chars;
}

static int set_max_chars(void *base, const struct flag *f, const char *v, char *err,
                         size_t errlen)
{
    char *end;
    (void)base, (void)f;
    errno = 0;
    unsigned long long n = strtoull(v, &end, 10);
    if (!*v || *end || errno || *v == '-' || n > 1000000000ULL)
        return errbuf_set(-EINVAL, err, errlen,
                          "--max-chars needs a number of characters (0: no limit)");
    mcp_set_max_chars((size_t)n);
    return 0;
}

static const struct flag mcp_flags[] = {
    {.name = "max-chars",
     .kind = FLAG_CALL,
     .needs = "a number of characters",
     .call = set_max_chars},
};

int mcp_take_max_chars(int *argc, char **argv, char *err, size_t errlen)
{
    const struct flags fl = FLAGS_OF("sandpit mcp", mcp_flags, true);
    return flags_parse(&fl, NULL, argc, argv, err, errlen);
}

json_t *mcp_text_item(const char *text)
{
    char *cut = outcome_cut(text, max_text_chars);
    json_t *item = cut ? json_pack("{s:s, s:s}", "type", "text", "text", cut) : NULL;
    free(cut);
    return item;
}

bool mcp_append(json_t *content, json_t *item)
{
    if (!content || !item) {
        json_decref(item);
        return false;
    }
    return json_array_append_new(content, item) == 0;
}

json_t *mcp_tool_result(json_t **content, bool is_error)
{
    json_t *r = json_pack("{s:o, s:b}", "content", *content ? *content : json_array(),
                          "isError", is_error);
    *content = NULL;
    return r;
}

json_t *mcp_tool_error(const char *what, const char *detail)
{
    char text[2048];
    snprintf(text, sizeof text, "%s%s%s", what, detail ? ": " : "", detail ? detail : "");
    text[utf8_valid_prefix(text, strlen(text))] = 0; /* snprintf may split a character */
    /* bounded by text's size, and never cut: the reason is the point */
    json_t *content = json_pack("[{s:s, s:s}]", "type", "text", "text", text);
    return mcp_tool_result(&content, true);
}

json_t *mcp_list_files(const struct workspace *ws, json_t *args)
{
    const char *path = json_string_value(json_object_get(args, "path"));
    char err[1024];
    int truncated = 0;
    json_t *entries = workspace_list(ws, path ? path : "", MAX_LIST_ENTRIES, &truncated,
                                     err, sizeof err);
    if (!entries)
        return mcp_tool_error(err, NULL);
    size_t cap = 4096, len = 0;
    char *text = malloc(cap);
    size_t i;
    json_t *e;
    json_array_foreach(entries, i, e) {
        char line[PATH_MAX + 64];
        const char *type = json_string_value(json_object_get(e, "type"));
        const char *p = json_string_value(json_object_get(e, "path"));
        long long size = (long long)json_integer_value(json_object_get(e, "size"));
        int n = strcmp(type, "folder") == 0 ? snprintf(line, sizeof line, "%s/\n", p)
                : strcmp(type, "file") == 0
                    ? snprintf(line, sizeof line, "%s  (%lld bytes)\n", p, size)
                    : snprintf(line, sizeof line, "%s  (%s)\n", p, type);
        if (text && len + (size_t)n + 1 > cap) {
            char *nt = realloc(text, cap = (cap + (size_t)n) * 2);
            if (!nt) {
                free(text);
                text = NULL;
            }
            text = nt;
        }
        if (text) {
            memcpy(text + len, line, (size_t)n);
            len += (size_t)n;
        }
    }
    json_decref(entries);
    if (!text)
        return mcp_tool_error("out of memory", NULL);
    text[len] = 0;
    json_t *content = json_array();
    json_array_append_new(content, mcp_text_item(len ? text : "(no files)\n"));
    if (truncated) {
        char note[128];
        snprintf(note, sizeof note, "(the first %d entries; list a folder for more)",
                 MAX_LIST_ENTRIES);
        json_array_append_new(content, mcp_text_item(note));
    }
    free(text);
    return mcp_tool_result(&content, false);
}

static const char *image_type(const unsigned char *d, size_t n)
{
    if (n >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0)
        return "image/png";
    if (n >= 3 && memcmp(d, "\xff\xd8\xff", 3) == 0)
        return "image/jpeg";
    if (n >= 6 && (memcmp(d, "GIF87a", 6) == 0 || memcmp(d, "GIF89a", 6) == 0))
        return "image/gif";
    return NULL;
}

const char *mcp_read_args_error(json_t *args)
{
    json_t *off = json_object_get(args, "offset"), *len = json_object_get(args, "length");
    if (off && (!json_is_integer(off) || json_integer_value(off) < 0))
        return "\"offset\" must be a whole number of bytes, 0 or more";
    if (len && (!json_is_integer(len) || json_integer_value(len) < 1 ||
                json_integer_value(len) > MCP_READ_MAX))
        return "\"length\" must be a whole number of bytes from 1 to 1000000";
    return NULL;
}

static json_t *image_result(const struct workspace *ws, const char *path,
                            const char *mime)
{
    char err[1024], *data = NULL;
    size_t len = 0;
    if (workspace_read(ws, path, MCP_READ_IMAGE_MAX, &data, &len, err, sizeof err))
        return mcp_tool_error(err, NULL);
    char *b64 = base64_encode((const unsigned char *)data, len);
    free(data);
    json_t *content = json_array();
    bool ok = b64 && mcp_append(content, json_pack("{s:s, s:s, s:s}", "type", "image",
                                                   "data", b64, "mimeType", mime));
    free(b64);
    if (!ok) {
        json_decref(content);
        return mcp_tool_error("out of memory", NULL);
    }
    return mcp_tool_result(&content, false);
}

/* Moves [*start, *end) of data (bytes from offset of a file of size bytes) to
 * whole characters: continuation bytes at the start are skipped, a character
 * the end cuts off is left for the next range. */
static void whole_characters(const char *data, size_t *start, size_t *end, size_t offset,
                             size_t size)
{
    const unsigned char *d = (const unsigned char *)data;
    while (offset > 0 && *start < *end && *start < 3 && (d[*start] & 0xC0) == 0x80)
        (*start)++;
    if (offset + *end >= size)
        return;
    for (size_t back = 1; back <= 3 && back <= *end - *start; back++) {
        size_t i = *end - back;
        if ((d[i] & 0xC0) != 0x80) {
            if (utf8_seq(d + i, back) < 0)
                *end = i;
            break;
        }
    }
}

json_t *mcp_read_file(const struct workspace *ws, json_t *args)
{
    const char *path = json_string_value(json_object_get(args, "path"));
    json_t *joff = json_object_get(args, "offset"),
           *jlen = json_object_get(args, "length");
    size_t offset = joff ? (size_t)json_integer_value(joff) : 0;
    size_t want = jlen ? (size_t)json_integer_value(jlen) : MCP_READ_DEFAULT;
    char err[1024], *data = NULL;
    size_t len = 0, size = 0;
    if (workspace_read_range(ws, path, offset, want, &data, &len, &size, err, sizeof err))
        return mcp_tool_error(err, NULL);
    const char *mime = offset == 0 ? image_type((const unsigned char *)data, len) : NULL;
    if (mime) {
        free(data);
        return image_result(ws, path, mime);
    }
    size_t start = 0, end = len;
    whole_characters(data, &start, &end, offset, size);
    size_t valid = utf8_valid_prefix(data + start, end - start);
    const char *nul = memchr(data + start, 0, end - start);
    size_t nul_at = nul ? (size_t)(nul - data) - start : (size_t)-1;
    char detail[PATH_MAX + 160];
    if (offset > size) {
        snprintf(detail, sizeof detail,
                 "\"offset\" %zu is past the end of \"%s\" (%zu bytes)", offset, path,
                 size);
        free(data);
        return mcp_tool_error(detail, NULL);
    }
    if (valid < end - start || nul) {
        bool is_nul = nul_at < valid;
        snprintf(detail, sizeof detail,
                 "\"%s\" is not UTF-8 text: byte %zu of its %zu is %s", path,
                 offset + start + (is_nul ? nul_at : valid), size,
                 is_nul ? "a NUL" : "not part of a valid UTF-8 character");
        free(data);
        return mcp_tool_error(detail, "only UTF-8 text and PNG, JPEG and GIF images "
                                      "can be read");
    }
    data[end] = 0;
    json_t *content = json_array();
    bool ok = mcp_append(content,
                         json_pack("{s:s, s:s}", "type", "text", "text", data + start));
    if (ok && (offset + start > 0 || offset + end < size)) {
        int n = snprintf(detail, sizeof detail, "(bytes %zu to %zu of %zu",
                         offset + start, offset + end, size);
        if (offset + end < size)
            snprintf(detail + n, sizeof detail - (size_t)n,
                     "; read on with \"offset\": %zu)", offset + end);
        else
            snprintf(detail + n, sizeof detail - (size_t)n, ")");
        ok = mcp_append(content, json_pack("{s:s, s:s}", "type", "text", "text", detail));
    }
    free(data);
    if (!ok) {
        json_decref(content);
        return mcp_tool_error("the file's text could not be sent", "out of memory");
    }
    return mcp_tool_result(&content, false);
}

json_t *mcp_tool_list(void)
{
    return json_pack(
        "{s:[{s:s, s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, s:s}}, s:[s]}},"
        "{s:s, s:s, s:s, s:{s:s, s:{}}},"
        "{s:s, s:s, s:s, s:{s:s, s:{s:{s:s, s:s}}}, s:{s:b}},"
        "{s:s, s:s, s:s, s:{s:s, s:{s:{s:s, s:s}, s:{s:s, s:i, s:s}, s:{s:s, s:i, s:i, "
        "s:s}}, s:[s]}, s:{s:b}}]}",
        "tools",
        /* python_exec */
        "name", "python_exec", "title", "Run Python", "description",
        "Runs Python code in a persistent, sandboxed interpreter: variables, imports and "
        "functions stay from one call to the next. Returns what the code printed, the "
        "value of its last expression, the traceback of an error, and each matplotlib "
        "chart as a PNG image. The code can read and write files in the workspace "
        "folder only; it has no network and cannot start programs.",
        "inputSchema", "type", "object", "properties", "code", "type", "string",
        "description", "the Python code of one cell", "timeout", "type", "number",
        "description",
        "a time limit for this call in seconds (it can only tighten the "
        "kernel's own limit)",
        "required", "code",
        /* python_reset */
        "name", "python_reset", "title", "Restart Python", "description",
        "Restarts the interpreter: every variable, import and function defined by "
        "earlier calls is gone. Files in the workspace stay.",
        "inputSchema", "type", "object", "properties",
        /* workspace_list */
        "name", "workspace_list", "title", "List workspace files", "description",
        "Lists the files and folders of the workspace (or of one folder in it), with "
        "their sizes: what the code wrote.",
        "inputSchema", "type", "object", "properties", "path", "type", "string",
        "description", "a folder relative to the workspace (default: all of it)",
        "annotations", "readOnlyHint", 1,
        /* workspace_read */
        "name", "workspace_read", "title", "Read a workspace file", "description",
        "Reads a file of the workspace: UTF-8 text as text (a range of its bytes: by "
        "default the first 100000), PNG, JPEG and GIF images as images.",
        "inputSchema", "type", "object", "properties", "path", "type", "string",
        "description", "the file's path relative to the workspace", "offset", "type",
        "integer", "minimum", 0, "description",
        "the first byte of text to read (default 0)", "length", "type", "integer",
        "minimum", 1, "maximum", MCP_READ_MAX, "description",
        "how many bytes of text to read (default 100000)", "required", "path",
        "annotations", "readOnlyHint", 1);
}
