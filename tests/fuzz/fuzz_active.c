/* Fuzzes active (kernel/supervisor/active.h), which the supervisor runs on
 * every output the worker sends: the input, as the value of text/html,
 * image/svg+xml, text/markdown and text/latex in one bundle (UTF-8 only, as
 * JSON strings are), is made inert. Checked on every input: no crash, no
 * executable type left, and every HTML value either unchanged and judged safe,
 * or a sandboxed frame whose srcdoc cannot close its attribute or open a tag,
 * or a picture of the SVG. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/supervisor/active.h"
#include "kernel/supervisor/active_html.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_html(const json_t *v, const char *in, size_t n, bool remote)
{
    if (!v)
        return;
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    static const char frame[] = "<iframe sandbox=\"allow-scripts\" ";
    static const char end[] = "\"></iframe>";
    static const char picture[] = "<img src=\"data:image/svg+xml;base64,";
    if (!s)
        abort();
    if (len == n && memcmp(s, in, n) == 0) {
        if (!active_html_safe(s, len, remote))
            abort();
        return;
    }
    if (strncmp(s, picture, sizeof picture - 1) == 0)
        return;
    if (strncmp(s, frame, sizeof frame - 1) != 0 || len < sizeof end - 1 ||
        strcmp(s + len - (sizeof end - 1), end) != 0)
        abort();
    const char *srcdoc = strstr(s, "srcdoc=\"");
    if (!srcdoc)
        abort();
    srcdoc += 8;
    if (strchr(srcdoc, '"') != s + len - (sizeof end - 1) ||
        strchr(srcdoc, '<') != s + len - (sizeof "</iframe>" - 1))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    bool remote = data[0] & 1;
    const char *in = (const char *)data + 1;
    size_t n = size - 1;
    (void)active_markdown_safe(in, n, remote);
    (void)active_latex_safe(in, n);
    json_t *s = json_stringn(in, n);
    if (!s)
        return 0; /* not UTF-8: no JSON string holds it */
    json_t *b =
        json_pack("{s:O, s:O, s:O, s:O, s:s}", "text/html", s, "image/svg+xml", s,
                  "text/markdown", s, "text/latex", s, "application/javascript", "x");
    struct active_policy p = {remote};
    if (!b || active_bundle(b, &p) < 1)
        abort(); /* the JavaScript, at least, is withheld */
    if (json_object_get(b, "application/javascript"))
        abort();
    check_html(json_object_get(b, "text/html"), in, n, remote);
    const json_t *svg = json_object_get(b, "image/svg+xml");
    if (svg && (!json_equal(svg, s) || !active_html_safe(in, n, remote)))
        abort();
    json_decref(b);
    json_decref(s);
    return 0;
}
