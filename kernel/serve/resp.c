/* resp: answers (resp.h). */
#include "kernel/serve/resp.h"

#include "kernel/serve/model.h"

void routes_error(struct routes_resp *out, int status, const char *message)
{
    json_decref(out->json);
    out->json = model_error(status, message);
    out->status = status;
}
