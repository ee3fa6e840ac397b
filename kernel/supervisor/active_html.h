/* active_html: does a piece of markup from the worker hold anything that a
 * browser would run? Pure predicates over bytes, used by active.c on every
 * text/html, image/svg+xml and text/markdown value that the supervisor
 * publishes. An allow-list: true only when every element, attribute, URL and
 * style rule is one that runs nothing and loads nothing from outside; anything
 * unknown, malformed, ambiguous or too large is false (active). Nothing is
 * kept between calls; the arguments are borrowed. */
#ifndef SANDPIT_ACTIVE_HTML_H
#define SANDPIT_ACTIVE_HTML_H

#include <stdbool.h>
#include <stddef.h>

/* Markup longer than this is not parsed, and counts as active: libxml2 takes
 * some tens of milliseconds a megabyte, in the supervisor's loop (about what
 * the message's JSON costs to read); a DataFrame shown whole is rarely more. */
#define ACTIVE_HTML_MAX_PARSE (2u << 20)

/* True if the n bytes at s, as HTML (text/html, or image/svg+xml as Notebook
 * puts it in its page), hold nothing active. remote: pictures may come from
 * http(s) URLs (otherwise only data:image/ and the Jupyter server's own). */
bool active_html_safe(const char *s, size_t n, bool remote);

/* True if the n bytes at s, as Markdown (whose raw HTML passes through to the
 * page, and whose links may carry any URL), hold nothing active. remote: as
 * for active_html_safe (a Markdown picture may name a server). */
bool active_markdown_safe(const char *s, size_t n, bool remote);

/* True if the n bytes at s, as LaTeX for MathJax, hold no command that makes a
 * link or sets markup attributes (\href, \url, \class, \style, ...). */
bool active_latex_safe(const char *s, size_t n);

#endif
