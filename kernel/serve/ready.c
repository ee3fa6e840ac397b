/* ready: a started kernel's handshake, step by step (ready.h). */
#include "kernel/serve/ready.h"

#include <string.h>

void ready_init(struct ready *r)
{
    memset(r, 0, sizeof *r);
}

bool ready_waiting_info(const struct ready *r)
{
    return !r->executing;
}

int ready_poke(struct ready *r, struct client *c)
{
    if (r->executing)
        return 0;
    int slot = r->ninfo < READY_MAX_INFO ? r->ninfo++ : READY_MAX_INFO - 1;
    return client_send(c, CONNECTION_SHELL, "kernel_info_request", NULL, NULL,
                       r->info_ids[slot]);
}

static bool ours(const struct ready *r, const char *parent)
{
    for (int i = 0; i < r->ninfo; i++)
        if (strcmp(r->info_ids[i], parent) == 0)
            return true;
    return false;
}

int ready_on_msg(struct ready *r, struct client *c, enum connection_channel ch,
                 const struct msg *m)
{
    const char *parent = json_string_value(json_object_get(m->parent_header, "msg_id"));
    if (!parent)
        return 0;
    if (ch == CONNECTION_IOPUB && ours(r, parent))
        r->got_iopub = true;
    if (ch == CONNECTION_SHELL && strcmp(msg_type(m), "kernel_info_reply") == 0 &&
        ours(r, parent))
        r->got_reply = true;
    if (ch == CONNECTION_SHELL && r->executing && strcmp(parent, r->exec_id) == 0 &&
        strcmp(msg_type(m), "execute_reply") == 0)
        return 1;
    if (r->got_reply && r->got_iopub && !r->executing) {
        r->executing = true;
        int rc = client_execute_quiet(c, "", CLIENT_EXEC_SILENT | CLIENT_EXEC_KEEP_GOING,
                                      r->exec_id);
        if (rc)
            return rc;
    }
    return 0;
}
