/* fake_kernel: the supervisor's request handling (dispatch, shells, limits,
 * route, outbox) with fakes around it, as xeus tests its dispatcher with a
 * mock interpreter. The clients' sockets record every message the kernel
 * sends; the worker records every frame it is sent (after a trip through the
 * link's text) and the signals; its state is the test's to set; a restart
 * answers what ran, as worker_lifecycle.c does. The loop is real, with a clock that the
 * test moves by hand. One fake per test process. */
#ifndef SANDPIT_FAKE_KERNEL_H
#define SANDPIT_FAKE_KERNEL_H

#include <jansson.h>
#include <stdbool.h>

#include "kernel/link/frames.h"
#include "kernel/options.h"
#include "kernel/supervisor/kernel.h"

#define FAKE_MAX 512

/* A message the kernel sent to clients. */
struct fake_sent {
    enum connection_channel ch;
    char label[64];   /* msg_type, or "busy"/"idle" for a status */
    char parent[128]; /* msg_id of its parent, "" for none */
    char id[128];     /* its own msg_id */
    json_t *content;  /* owned */
};

/* A frame the kernel sent to the worker. */
struct fake_frame {
    enum link_kind kind;
    json_t *obj; /* owned */
};

struct fake {
    struct kernel k;
    struct options opts;
    struct loop *loop;
    enum kernel_worker worker; /* what io.worker answers */
    struct fake_sent sent[FAKE_MAX];
    size_t nsent;
    struct fake_frame frames[FAKE_MAX];
    size_t nframes;
    int signals[FAKE_MAX];
    size_t nsignals;
    char restarts[8][512]; /* the reasons given for restarts */
    size_t nrestarts;
    double cpu; /* the worker's CPU time, in seconds, as io.worker_cpu says */
    /* Bytes of frames sent to the worker, and of those, taken by it: all at
     * once, unless not_reading (io.worker_queued, io.worker_written). */
    unsigned long long queued, written;
    bool not_reading;
};

/* Sets up f with default options (the caller may change f->opts before the
 * first request) and a ready worker. */
void fake_init(struct fake *f);
void fake_release(struct fake *f);

/* A client sends msg_type with content (JSON text; NULL: {}) on ch, in the
 * subshell sub (NULL: the main shell). Returns the message's msg_id (static
 * storage: copy it before the next call). */
const char *fake_request(struct fake *f, enum connection_channel ch, const char *msg_type,
                         const char *content, const char *sub);
/* The same, with metadata (JSON text). */
const char *fake_request_md(struct fake *f, enum connection_channel ch,
                            const char *msg_type, const char *content,
                            const char *metadata, const char *sub);
/* A client makes a subshell (create_subshell_request on control); its id goes
 * into sub. */
void fake_subshell(struct fake *f, char *sub, size_t len);
/* A client sends an input_reply on stdin, answering the input_request whose
 * msg_id is parent. */
void fake_input_reply(struct fake *f, const char *parent, const char *value);

/* The worker sends a frame (JSON text, or a built object taken over). */
void fake_worker_text(struct fake *f, const char *json);
void fake_worker_frame(struct fake *f, json_t *frame);
/* The worker replies for shell to parent with status (and the content's other
 * fields as JSON text, NULL: none). */
void fake_worker_reply(struct fake *f, const char *shell, const char *parent,
                       const char *status);

/* Moves the clock on by seconds, then lets the loop run what is due. */
void fake_advance(struct fake *f, double seconds);
/* Turns the loop until the history's queries are answered (a few seconds at
 * most). */
void fake_history_wait(struct fake *f);

/* Holds the kernel to each request's begin and end: for every parent, at most
 * one status busy and one idle, the busy first, and the kernel's counts of
 * requests begun and ended agree with them (a failure is the test's). Returns
 * how many requests have had both. fake_release checks it too. */
size_t fake_check_status(const struct fake *f);

/* The labels of the messages sent to clients for the request parent ("" for
 * those with no parent), in order, space-separated (static storage). */
const char *fake_labels(const struct fake *f, const char *parent);
/* The last message labelled label for parent, or NULL. */
const struct fake_sent *fake_find(const struct fake *f, const char *parent,
                                  const char *label);
/* The last frame of kind sent to the worker, or NULL; and how many of that
 * kind were sent. */
const json_t *fake_last_frame(const struct fake *f, enum link_kind kind);
size_t fake_count_frames(const struct fake *f, enum link_kind kind);

#endif
