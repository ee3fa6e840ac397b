/* active: nothing that a sandboxed kernel's code sends may run as the user's
 * page. Between the worker and the clients (route.c), every MIME bundle in
 * what the supervisor publishes or replies is checked (active_html.h) and what
 * is active is made inert, in place: application/javascript and every other
 * type that front ends execute is withheld, with a note; HTML that holds
 * anything active is shown inside an <iframe sandbox="allow-scripts"> without
 * allow-same-origin (its scripts run in an opaque origin that cannot reach the
 * Jupyter server's API), behind a Content-Security-Policy that lets it load
 * nothing when the kernel has no network; active SVG is shown as a picture
 * (<img>, in which SVG runs nothing); active Markdown and LaTeX as their text.
 * `--active-output on` turns all of it off. Pure functions of their arguments:
 * content is changed in place, and nothing is kept. */
#ifndef SANDPIT_ACTIVE_H
#define SANDPIT_ACTIVE_H

#include <jansson.h>
#include <stdbool.h>

/* remote: pictures and frames may load from the network (the kernel has
 * network access anyway, so nothing more can leave through the page). */
struct active_policy {
    bool remote;
};

/* Makes one MIME bundle (a display's "data": {mime: value}) inert. Returns how
 * many of its values were changed. */
int active_bundle(json_t *data, const struct active_policy *p);

/* Makes the content of one iopub message of msg_type inert: the bundle of a
 * display, an update or a result (and of any other message with a "data"
 * object), and in a comm message the outputs an Output widget would show, the
 * HTML a widget would put in the page and the module a widget's view would be
 * loaded from and its version (and anywidget's code and CSS). Returns how
 * many values were changed. */
int active_iopub(const char *msg_type, json_t *content, const struct active_policy *p);

/* The same for the content of a reply: execute_reply's pager payloads (which
 * Notebook puts in its page as HTML) and user_expressions, inspect_reply's
 * data. */
int active_reply(json_t *content, const struct active_policy *p);

#endif
