/* frames: the typed link. Every frame between supervisor and worker is a JSON
 * object whose "type" names its kind; this header lists the kinds, with the
 * wire names that the worker's Python runtime mirrors, and has one builder and
 * one parser per kind. A builder returns a new JSON object (caller releases);
 * a parser checks a received object's shape (fields, types, lengths) and
 * fills a struct whose strings and objects are borrowed from it. The
 * supervisor acts on nothing from the worker that has not passed a parser. */
#ifndef SANDPIT_FRAMES_H
#define SANDPIT_FRAMES_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "protocol/wire.h"

#define LINK_ID_MAX 127 /* longest shell id or msg_id a frame may carry */
/* The worker's numbers for its history queries: whole numbers JSON keeps exact. */
#define LINK_HISTORY_ID_MAX ((1LL << 53) - 1)
#define LINK_ERROR_MAX      1024 /* longest sentence in a history_reply */

enum link_kind {
    /* supervisor to worker */
    LINK_REQUEST,       /* "request": a client's request for the worker to run */
    LINK_INTERRUPT,     /* "interrupt": stop the request it names (and why) */
    LINK_SUBSHELL,      /* "subshell": op create or delete */
    LINK_INPUT_REPLY,   /* "input_reply": the client's answer to input() */
    LINK_HISTORY_REPLY, /* "history_reply": the answer to a history frame */
    /* worker to supervisor */
    LINK_HELLO,         /* "hello": ready, with the sandbox's report */
    LINK_IOPUB,         /* "iopub": output or an event for the client */
    LINK_REPLY,         /* "reply": the answer to the request a shell runs */
    LINK_INPUT_REQUEST, /* "input_request": ask the client for a line */
    LINK_HISTORY,       /* "history": ask for the history (%history) */
    LINK_LOG,           /* "log": a line for the kernel's log */
    LINK_KINDS
};

/* The wire name of a kind ("request", ...): static storage. */
const char *link_kind_name(enum link_kind kind);
/* Whether the worker may send this kind. */
bool link_kind_from_worker(enum link_kind kind);

/* Reads a frame's JSON text: *obj is the new object, *kind its kind. 0, or
 * -EBADMSG with a sentence in err (not JSON, not an object, no "type", or an
 * unknown one); *obj is then NULL. */
int link_decode(const char *json, size_t len, enum link_kind *kind, json_t **obj,
                char *err, size_t errlen);

/* The text of a frame (new, caller frees), or NULL when out of memory. */
char *link_encode_text(const json_t *obj);

/* --- supervisor to worker -------------------------------------------------- */

struct link_request {
    const char *shell;                   /* "" for the main shell */
    const char *msg_type;                /* the client's msg_type */
    json_t *header, *content, *metadata; /* the client's message, objects */
    int execution_count;
    bool silent, store_history;
    double timeout;           /* the request's time limit in s; 0: none */
    unsigned long max_output; /* its output cap in bytes; 0: none */
};

struct link_interrupt {
    const char *shell;  /* the shell that runs it */
    const char *parent; /* msg_id of the request to stop */
    bool timeout;       /* reason "timeout" rather than "interrupt" */
    double limit;       /* the time limit it reached, in s */
};

enum link_subshell_op { LINK_SUBSHELL_CREATE, LINK_SUBSHELL_DELETE };

struct link_subshell {
    enum link_subshell_op op;
    const char *id;
};

struct link_input_reply {
    const char *parent; /* msg_id of the request that asked */
    json_t *content;    /* the client's input_reply content */
};

struct link_history_reply {
    long long id;      /* the id of the history frame it answers */
    json_t *history;   /* [[session, line, source], ...]; NULL when refused */
    const char *error; /* why it was refused; NULL when history is given */
    long long session; /* the current session's number (0: not said) */
};

/* --- worker to supervisor -------------------------------------------------- */

struct link_hello {
    const char *python_version;
    long pid;
    json_t *sandbox; /* array of {"name", "state", "detail"} strings */
};

/* Raw text: large strings of an iopub frame's content (a stream's "text", a
 * display's "data" values) may travel as buffers beside the JSON, as UTF-8,
 * so that neither end escapes and parses them as JSON. The frame's "raw"
 * lists where each goes in content, a path of one or two keys ([key] or
 * [member, key]); they are the frame's last buffers, in that order. */
#define LINK_MAX_RAW 16
#define LINK_RAW_MIN (64u << 10) /* shorter strings stay in the JSON */

struct link_iopub {
    const char *msg_type; /* stream, display_data, ... (the kinds a worker may publish) */
    const char *parent;   /* msg_id of the request it belongs to; NULL: not named */
    json_t *content;      /* object */
    json_t *metadata;     /* object or NULL */
    json_t *raw;          /* array of paths (checked), or NULL: no raw text */
};

struct link_reply {
    const char *shell;  /* the shell whose running request it answers */
    const char *parent; /* that request's msg_id (required) */
    json_t *content;    /* object */
    json_t *metadata;   /* object or NULL */
};

struct link_input_request {
    const char *parent; /* msg_id of the request that asks; NULL: not named */
    json_t *content;    /* {"prompt", "password"} */
};

struct link_history {
    long long id;  /* the worker's number for it, 0 to LINK_HISTORY_ID_MAX */
    json_t *query; /* object: the fields of a history_request's content, whose
                    * values the supervisor's history module checks */
};

/* A line of the worker's log: it goes over the link once cells run, because
 * the log pipe is then closed (the user's code could write to it). */
#define LINK_LOG_MAX 1024 /* longest line */

struct link_log {
    const char *text; /* the line, without its newline */
};

/* Builders: a new frame object, or NULL when out of memory (or a field is
 * missing). The struct's pointers are borrowed (objects are copied by
 * reference). */
json_t *link_request_build(const struct link_request *f);
json_t *link_interrupt_build(const struct link_interrupt *f);
json_t *link_subshell_build(const struct link_subshell *f);
json_t *link_input_reply_build(const struct link_input_reply *f);
json_t *link_hello_build(const struct link_hello *f);
json_t *link_iopub_build(const struct link_iopub *f);
json_t *link_reply_build(const struct link_reply *f);
json_t *link_input_request_build(const struct link_input_request *f);
json_t *link_history_build(const struct link_history *f);
json_t *link_history_reply_build(const struct link_history_reply *f);
json_t *link_log_build(const struct link_log *f);

/* Puts an iopub frame's raw text (the last json_array_size(f->raw) of its
 * nbuffers buffers, borrowed) into f->content where f->raw says, as strings;
 * *left is then the number of buffers that are the message's own. 0, or
 * -EBADMSG with a sentence in err (too few buffers, text that is not UTF-8 or
 * holds a NUL, a path whose place is taken or whose member is not an object);
 * content may then hold some of the text. */
int link_iopub_take_raw(struct link_iopub *f, const struct wire_frame *buffers,
                        size_t nbuffers, size_t *left, char *err, size_t errlen);

/* Parsers: 0 with *out filled (borrowed from obj), or -EBADMSG with a sentence
 * in err. obj must be a frame of that kind (see link_decode). */
int link_request_parse(const json_t *obj, struct link_request *out, char *err,
                       size_t errlen);
int link_interrupt_parse(const json_t *obj, struct link_interrupt *out, char *err,
                         size_t errlen);
int link_subshell_parse(const json_t *obj, struct link_subshell *out, char *err,
                        size_t errlen);
int link_input_reply_parse(const json_t *obj, struct link_input_reply *out, char *err,
                           size_t errlen);
int link_hello_parse(const json_t *obj, struct link_hello *out, char *err, size_t errlen);
int link_iopub_parse(const json_t *obj, struct link_iopub *out, char *err, size_t errlen);
int link_reply_parse(const json_t *obj, struct link_reply *out, char *err, size_t errlen);
int link_input_request_parse(const json_t *obj, struct link_input_request *out, char *err,
                             size_t errlen);
int link_history_parse(const json_t *obj, struct link_history *out, char *err,
                       size_t errlen);
int link_history_reply_parse(const json_t *obj, struct link_history_reply *out, char *err,
                             size_t errlen);
int link_log_parse(const json_t *obj, struct link_log *out, char *err, size_t errlen);

#endif
