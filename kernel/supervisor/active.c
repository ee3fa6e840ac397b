/* active: makes what the worker sends inert before a browser shows it.
 *
 * Why the supervisor: a notebook page runs the outputs it is given as its own
 * code (Notebook 6 evaluates application/javascript, and puts text/html,
 * image/svg+xml and rendered Markdown into the page, scripts and handlers
 * included), with the page's session: a script there can start an unconfined
 * kernel through the Jupyter server's API. The worker's code can write any
 * bytes to its link, so the check must be on this side of it.
 *
 * What is done to each value, by its type (compared in lower case, without
 * parameters; a value that is not a string where a string is due counts as
 * active):
 *   - types that front ends execute (any "script" type: javascript,
 *     ecmascript, ...; any "exec" type: Bokeh's and HoloViews' _exec ones):
 *     withheld, and a note in text/plain if nothing else is left to show;
 *   - text/html, application/xhtml+xml: unchanged if active_html_safe(), else
 *     the same markup in a sandboxed iframe's srcdoc (withheld, with a note,
 *     past ACTIVE_MAX_FRAMED);
 *   - image/svg+xml: unchanged if safe, else withheld, and shown as an <img> of
 *     it in text/html when the bundle has no HTML of its own;
 *   - text/markdown: unchanged if safe, else withheld, its text shown as
 *     text/plain (in place of the repr, "<...Markdown object>", that says
 *     nothing); text/latex likewise, its text kept where there is no
 *     text/plain (sympy's, say, is worth keeping);
 *   - everything else (pictures, JSON, plain text): unchanged, and not read:
 *     a 10 MB PNG costs a comparison of its type. */
#include "kernel/supervisor/active.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "kernel/util/base64.h"
#include "kernel/supervisor/active_html.h"

#define ACTIVE_NOTE                                                                      \
    "[sandpit: JavaScript output withheld: code in a sandboxed kernel may not run as "   \
    "the notebook's page. Start the kernel with --active-output on to allow it.]"

/* A frame's own policy when the kernel has no network: its scripts may run,
 * but it may load nothing and connect nowhere. */
#define ACTIVE_CSP                                                                       \
    "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "        \
    "script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src "      \
    "data: blob:; font-src data:; media-src data: blob:\">"

#define ACTIVE_NOTE_LARGE                                                                \
    "[sandpit: an HTML output withheld: too large to check, and to show isolated. "      \
    "Start the kernel with --active-output on to allow it.]"

/* Active (or unchecked) HTML longer than this is withheld rather than framed:
 * escaped, it can grow sixfold in the supervisor's memory. */
#define ACTIVE_MAX_FRAMED (8u << 20)

/* Nesting of a comm message's data that is looked into. */
#define ACTIVE_MAX_DEPTH 16

enum kind { KIND_OTHER, KIND_EXEC, KIND_HTML, KIND_SVG, KIND_TEXT };

static enum kind kind_of(const char *mime)
{
    char t[96];
    size_t n = 0;
    for (; mime[n] && mime[n] != ';' && n + 1 < sizeof t; n++)
        t[n] = (char)tolower((unsigned char)mime[n]);
    while (n && isspace((unsigned char)t[n - 1]))
        n--;
    t[n] = 0;
    if (strstr(t, "script") || strstr(t, "exec"))
        return KIND_EXEC;
    if (strcmp(t, "text/html") == 0 || strcmp(t, "application/xhtml+xml") == 0)
        return KIND_HTML;
    if (strcmp(t, "image/svg+xml") == 0)
        return KIND_SVG;
    if (strcmp(t, "text/markdown") == 0 || strcmp(t, "text/latex") == 0)
        return KIND_TEXT;
    /* A type longer than the buffer is judged by what fits, and by its
     * whole name for the words that make it executable. */
    if (mime[n] && mime[n] != ';' && (strstr(mime, "script") || strstr(mime, "exec")))
        return KIND_EXEC;
    return KIND_OTHER;
}

static bool value_safe(const char *mime, const json_t *v, enum kind kind, bool remote)
{
    if (!json_is_string(v))
        return false;
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    if (kind == KIND_TEXT && strncasecmp(mime, "text/latex", 10) == 0)
        return active_latex_safe(s, n) && active_html_safe(s, n, false);
    if (kind == KIND_TEXT)
        return active_markdown_safe(s, n, remote);
    return active_html_safe(s, n, remote);
}

/* The markup as the srcdoc of a sandboxed iframe: '&' and '"' escaped for the
 * attribute (and '<', '>', so that the page's own check reads no tags in it),
 * NUL left out (a browser reads it as U+FFFD). Returns a new string, NULL when
 * out of memory or past ACTIVE_MAX_FRAMED. */
static json_t *framed(const char *s, size_t n, bool remote)
{
    if (n > ACTIVE_MAX_FRAMED)
        return NULL;
    static const char head[] =
        "<iframe sandbox=\"allow-scripts\" title=\"output isolated by sandpit\" "
        "style=\"width: 100%; height: 360px; border: 1px solid #ddd; resize: vertical; "
        "overflow: auto\" srcdoc=\"";
    static const char tail[] = "\"></iframe>";
    const char *csp = remote ? "" : ACTIVE_CSP;
    size_t csp_len = strlen(csp), cap = sizeof head + 6 * (csp_len + n) + sizeof tail;
    char *out = malloc(cap), *p = out;
    if (!out)
        return NULL;
    memcpy(p, head, sizeof head - 1);
    p += sizeof head - 1;
    for (size_t part = 0; part < 2; part++) {
        const char *src = part ? s : csp;
        size_t len = part ? n : csp_len;
        for (size_t i = 0; i < len; i++) {
            if (!src[i])
                continue;
            const char *e = src[i] == '&'   ? "&amp;"
                            : src[i] == '"' ? "&quot;"
                            : src[i] == '<' ? "&lt;"
                            : src[i] == '>' ? "&gt;"
                                            : NULL;
            if (e) {
                memcpy(p, e, strlen(e));
                p += strlen(e);
            } else {
                *p++ = src[i];
            }
        }
    }
    memcpy(p, tail, sizeof tail - 1);
    p += sizeof tail - 1;
    json_t *v = json_stringn_nocheck(out, (size_t)(p - out));
    free(out);
    return v;
}

/* An SVG as a picture: in an <img>, SVG runs no script and loads nothing. */
static json_t *svg_picture(const json_t *svg)
{
    const char *s = json_string_value(svg);
    char *b64 = base64_encode((const unsigned char *)s, json_string_length(svg));
    if (!b64)
        return NULL;
    size_t len = strlen(b64) + 64;
    char *html = malloc(len);
    json_t *v = NULL;
    if (html) {
        snprintf(html, len, "<img src=\"data:image/svg+xml;base64,%s\">", b64);
        v = json_string_nocheck(html);
    }
    free(html);
    free(b64);
    return v;
}

/* What a bundle's pass found to add once its loop is over. */
struct bundle_pass {
    int changed;
    bool exec_withheld;
    bool large_withheld;
    json_t *svg;   /* an active SVG, to show as a picture (a new reference) */
    json_t *text;  /* the text of withheld Markdown or LaTeX (a new reference) */
    bool markdown; /* that text is Markdown's */
};

static void neutralise(json_t *data, const char *mime, json_t *v, enum kind kind,
                       struct bundle_pass *bp, bool remote)
{
    bp->changed++;
    if (kind == KIND_HTML && json_is_string(v)) {
        json_t *f = framed(json_string_value(v), json_string_length(v), remote);
        if (f && json_object_set_new(data, mime, f) == 0)
            return;
        bp->large_withheld = true;
    } else if (kind == KIND_SVG && json_is_string(v) && !bp->svg) {
        bp->svg = json_incref(v);
    } else if (kind == KIND_TEXT && json_is_string(v) && (!bp->text || !bp->markdown)) {
        json_decref(bp->text);
        bp->text = json_incref(v);
        bp->markdown = strncasecmp(mime, "text/markdown", 13) == 0;
    } else if (kind == KIND_EXEC) {
        bp->exec_withheld = true;
    }
    json_object_del(data, mime);
}

int active_bundle(json_t *data, const struct active_policy *p)
{
    if (!json_is_object(data))
        return 0;
    struct bundle_pass bp = {0, false, false, NULL, NULL, false};
    const char *mime;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(data, tmp, mime, v) {
        enum kind kind = kind_of(mime);
        if (kind == KIND_OTHER ||
            (kind != KIND_EXEC && value_safe(mime, v, kind, p->remote)))
            continue;
        neutralise(data, mime, v, kind, &bp, p->remote);
    }
    if (bp.svg && !json_object_get(data, "text/html")) {
        json_t *pic = svg_picture(bp.svg);
        if (pic)
            json_object_set_new(data, "text/html", pic);
    }
    if (bp.text && (bp.markdown || !json_object_get(data, "text/plain")))
        json_object_set(data, "text/plain", bp.text);
    if ((bp.exec_withheld || bp.large_withheld) && json_object_size(data) <= 1 &&
        (json_object_size(data) == 0 || json_object_get(data, "text/plain")))
        json_object_set_new(
            data, "text/plain",
            json_string(bp.large_withheld ? ACTIVE_NOTE_LARGE : ACTIVE_NOTE));
    json_decref(bp.svg);
    json_decref(bp.text);
    return bp.changed;
}

/* A module that a widget's view is loaded from, as Notebook's widget manager
 * hands it to RequireJS: an npm package's name ("@scope/name" or "name"), never
 * a path or URL, which RequireJS would load as a script (a file the cell wrote
 * in the notebook server's folder, under /files/). */
static bool module_ok(const char *m)
{
    size_t n = strlen(m), slashes = 0;
    if (n == 0 || n > 214 || m[0] == '.' || strstr(m, "..") ||
        (n >= 3 && strcmp(m + n - 3, ".js") == 0))
        return false;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)m[i];
        if (c == '/')
            slashes++;
        else if (!(isalnum(c) || c == '-' || c == '_' || c == '.' ||
                   (c == '@' && i == 0)))
            return false;
    }
    return slashes == 0 ||
           (slashes == 1 && m[0] == '@' && m[n - 1] != '/' && m[1] != '/');
}

/* A module's version, which a widget manager that loads from a CDN puts in
 * the URL ("<module>@<version>/..."): a range of versions, never a path. */
static bool version_ok(const char *v)
{
    for (; *v; v++)
        if (!(isalnum((unsigned char)*v) || strchr(".-+^~*<>=| ", *v)))
            return false;
    return true;
}

static int comm_walk(json_t *v, int depth, const struct active_policy *p);

static int comm_member(json_t *obj, const char *key, json_t *v, int depth,
                       const struct active_policy *p)
{
    if (json_is_string(v) &&
        (strcmp(key, "_view_module") == 0 || strcmp(key, "_model_module") == 0)) {
        if (module_ok(json_string_value(v)))
            return 0;
        json_object_set_new(obj, key, json_string("sandpit-withheld"));
        return 1;
    }
    if (json_is_string(v) && (strcmp(key, "_view_module_version") == 0 ||
                              strcmp(key, "_model_module_version") == 0)) {
        if (version_ok(json_string_value(v)))
            return 0;
        json_object_set_new(obj, key, json_string("0.0.0"));
        return 1;
    }
    /* anywidget's view: JavaScript that its front end imports, and CSS. */
    if (json_is_string(v) && json_string_length(v) &&
        (strcmp(key, "_esm") == 0 || strcmp(key, "_css") == 0)) {
        json_object_set_new(obj, key, json_string(""));
        return 1;
    }
    /* Strings that ipywidgets puts in the page as HTML: an HTML widget's
     * value, any widget's description. */
    if (json_is_string(v) &&
        (strcmp(key, "value") == 0 || strcmp(key, "description") == 0)) {
        const char *s = json_string_value(v);
        size_t n = json_string_length(v);
        if (active_html_safe(s, n, p->remote))
            return 0;
        json_t *f = framed(s, n, p->remote);
        json_object_set_new(obj, key, f ? f : json_string(""));
        return 1;
    }
    return comm_walk(v, depth + 1, p);
}

/* Every object in a comm message's data: an output (an Output widget's
 * state) has its bundle checked, and its members as above. Deeper than
 * ACTIVE_MAX_DEPTH, the message is not looked into further: no front end reads
 * that deep. */
static int comm_walk(json_t *v, int depth, const struct active_policy *p)
{
    int changed = 0;
    if (depth > ACTIVE_MAX_DEPTH)
        return 0;
    if (json_is_array(v)) {
        for (size_t i = 0; i < json_array_size(v); i++)
            changed += comm_walk(json_array_get(v, i), depth + 1, p);
        return changed;
    }
    if (!json_is_object(v))
        return 0;
    if (json_object_get(v, "output_type"))
        changed += active_bundle(json_object_get(v, "data"), p);
    const char *key;
    json_t *m;
    void *tmp;
    json_object_foreach_safe(v, tmp, key, m) {
        if (strcmp(key, "data") == 0 && json_object_get(v, "output_type"))
            continue;
        changed += comm_member(v, key, m, depth, p);
    }
    return changed;
}

int active_iopub(const char *msg_type, json_t *content, const struct active_policy *p)
{
    if (!json_is_object(content))
        return 0;
    if (strncmp(msg_type, "comm_", 5) == 0)
        return comm_walk(json_object_get(content, "data"), 0, p);
    return active_bundle(json_object_get(content, "data"), p);
}

int active_reply(json_t *content, const struct active_policy *p)
{
    if (!json_is_object(content))
        return 0;
    int changed = active_bundle(json_object_get(content, "data"), p);
    const char *name;
    json_t *v;
    json_object_foreach(json_object_get(content, "user_expressions"), name, v)
        changed += active_bundle(json_object_get(v, "data"), p);
    json_t *payload = json_object_get(content, "payload");
    for (size_t i = 0; i < json_array_size(payload); i++)
        changed += active_bundle(json_object_get(json_array_get(payload, i), "data"), p);
    return changed;
}
