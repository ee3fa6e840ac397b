/* active_html: an allow-list check of markup from the worker.
 *
 * The hard part is not the list but the parser: libxml2's HTML parser is not
 * the browser's HTML5 one, and markup that is published unchanged must not
 * mean one thing to the check and another to the page (a comment that ends
 * early for the browser, a <style> whose text the browser reads as tags inside
 * an <svg>, an entity that only HTML5 knows). So the check is three layers,
 * each of which can only say "active":
 *
 *   1. a scan of the raw bytes: no NUL; "<!" only as a comment that both
 *      parsers end at the same "-->" or as a doctype with nothing to hide;
 *      "<?" only up to a "?>" with no '<' in it; no MathJax command that makes
 *      a link or sets attributes (MathJax typesets HTML outputs in Notebook);
 *   2. libxml2 parses it (UTF-8 whatever the markup declares, no network, no
 *      entities of its own); any error but an unknown tag name (SVG's), a
 *      mismatched end tag (which only moves elements) or a control character
 *      in text is active;
 *   3. a walk of the tree: every element and attribute in the lists below,
 *      URLs relative, fragments, http(s) links, data:image/ pictures (and,
 *      with remote loads allowed, http(s) pictures); style text without '<'
 *      and CSS that loads nothing.
 *
 * Markup with no '<' has no tags for any parser: it is safe without a parse
 * (the first question of every check, so text costs one memchr). */
#include "kernel/supervisor/active_html.h"

#include <ctype.h>
#include <string.h>
#include <strings.h>

#include <libxml/HTMLparser.h>
#include <libxml/xmlerror.h>

#include "kernel/supervisor/active_lists.h"

/* --- the raw bytes --------------------------------------------------------------- */

/* A comment at s[0] ("<!--"): the first '>' after it must close it as "-->",
 * at least "<!---->" long, so that HTML5 (which also ends a comment at "<!-->",
 * "<!--->" and "--!>") and libxml2 end it at the same byte. Returns the length
 * of the comment, 0 if it is not one both read alike. */
static size_t comment_len(const char *s, size_t n)
{
    const char *gt = memchr(s, '>', n);
    if (!gt)
        return 0;
    size_t at = (size_t)(gt - s);
    if (at < 6 || s[at - 1] != '-' || s[at - 2] != '-')
        return 0;
    /* No "--" but the last (HTML5 and libxml2 differ on "--!" and its kin),
     * and no '<' that would be a tag to a reader who ended it sooner. */
    for (size_t i = 4; i < at - 2; i++)
        if (s[i] == '<' || (s[i] == '-' && s[i + 1] == '-'))
            return 0;
    return at + 1;
}

/* A doctype or processing instruction at s[0]: HTML5 ends it at the first
 * '>', libxml2 at the first '>' outside quotes, so a quote still open there,
 * a '<' or a '[' (an internal subset) inside, is a way to hide a tag from the
 * check. Returns its length, 0 if unsure. */
static size_t declaration_len(const char *s, size_t n, bool question)
{
    const char *gt = memchr(s, '>', n);
    if (!gt)
        return 0;
    size_t at = (size_t)(gt - s);
    char quote = 0;
    for (size_t i = 2; i < at; i++) {
        if (quote) {
            quote = s[i] == quote ? 0 : quote;
        } else if (s[i] == '"' || s[i] == '\'') {
            quote = s[i];
        }
        if (s[i] == '<' || s[i] == '[')
            return 0;
    }
    if (quote || (question && s[at - 1] != '?'))
        return 0;
    return at + 1;
}

static bool raw_ok(const char *s, size_t n)
{
    if (memchr(s, 0, n))
        return false;
    for (size_t i = 0; i < n;) {
        const char *lt = memchr(s + i, '<', n - i);
        if (!lt)
            break;
        i = (size_t)(lt - s);
        size_t rest = n - i, len = 1;
        if (rest >= 2 && s[i + 1] == '!') {
            if (rest >= 4 && memcmp(s + i, "<!--", 4) == 0)
                len = comment_len(s + i, rest);
            else if (rest >= 9 && strncasecmp(s + i, "<!doctype", 9) == 0)
                len = declaration_len(s + i, rest, false);
            else
                len = 0;
        } else if (rest >= 2 && s[i + 1] == '?') {
            len = declaration_len(s + i, rest, true);
        }
        if (!len)
            return false;
        i += len;
    }
    return true;
}

/* Finds needle (lower case) in s, case-insensitively. */
static bool has_ci(const char *s, size_t n, const char *needle)
{
    size_t m = strlen(needle);
    for (size_t i = 0; m <= n && i <= n - m; i++)
        if (tolower((unsigned char)s[i]) == needle[0] &&
            strncasecmp(s + i, needle, m) == 0)
            return true;
    return false;
}

bool active_latex_safe(const char *s, size_t n)
{
    if (!memchr(s, '\\', n))
        return true;
    for (size_t i = 0; active_latex_commands[i]; i++)
        if (has_ci(s, n, active_latex_commands[i]))
            return false;
    return true;
}

/* --- CSS and URLs ---------------------------------------------------------------- */

/* CSS that loads nothing and runs nothing: no escape that could spell a word
 * apart, no url( but of a fragment in the same document, no other function
 * or rule that fetches. s is NUL-terminated (libxml2's). */
static bool css_ok(const char *s)
{
    size_t n = strlen(s);
    if (memchr(s, '\\', n) || memchr(s, '<', n) || memchr(s, '&', n))
        return false;
    for (size_t i = 0; active_css_words[i]; i++)
        if (has_ci(s, n, active_css_words[i]))
            return false;
    for (size_t i = 0; i + 4 <= n; i++) {
        if (strncasecmp(s + i, "url(", 4) != 0)
            continue;
        size_t j = i + 4;
        while (j < n && (isspace((unsigned char)s[j]) || s[j] == '"' || s[j] == '\''))
            j++;
        if (j >= n || s[j] != '#')
            return false;
    }
    return true;
}

enum url_use { URL_LINK, URL_PICTURE, URL_FRAGMENT };

/* "//host/..." (or with backslashes, which a browser reads as slashes, and
 * tabs or newlines between, which it drops): another server, though no scheme
 * is named. */
static bool network_path(const char *v)
{
    int slashes = 0;
    for (; *v && slashes < 2; v++) {
        if (*v == '\t' || *v == '\n' || *v == '\r')
            continue;
        if (*v != '/' && *v != '\\')
            return false;
        slashes++;
    }
    return slashes == 2;
}

/* A URL as the browser reads it: leading and trailing spaces and controls
 * dropped, tabs and newlines anywhere removed. Its scheme (what comes before
 * the first ':' ahead of any '/', '?' or '#') decides; an '&' there could be
 * an entity that only HTML5 knows, and counts as active. */
static bool url_ok(const char *v, enum url_use use, bool remote)
{
    char head[64];
    size_t h = 0;
    bool colon = false;
    for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
        if (*p <= 0x20)
            continue;
        if (*p == '/' || *p == '?' || *p == '#')
            break;
        if (*p == '&' || *p == '\\' || *p >= 0x7f || h + 1 >= sizeof head)
            return false;
        head[h++] = (char)tolower(*p);
        if (*p == ':') {
            colon = true;
            break;
        }
    }
    head[h] = 0;
    while (*v && (unsigned char)*v <= 0x20)
        v++;
    if (use == URL_FRAGMENT)
        return *v == '#';
    if (!colon && use == URL_PICTURE && !remote && network_path(v))
        return false;
    if (!colon)
        return true; /* relative: the Jupyter server's own pages, fetched by GET */
    bool web = strcmp(head, "http:") == 0 || strcmp(head, "https:") == 0;
    if (use == URL_LINK)
        return web || strcmp(head, "mailto:") == 0;
    if (web)
        return remote;
    if (strcmp(head, "data:") != 0)
        return false;
    const char *rest = v + 5;
    for (size_t i = 0; active_picture_types[i]; i++) {
        size_t m = strlen(active_picture_types[i]);
        if (strncasecmp(rest, active_picture_types[i], m) == 0 &&
            (rest[m] == ';' || rest[m] == ','))
            return true;
    }
    return false;
}

/* --- the tree -------------------------------------------------------------------- */

static bool in_list(const char *const *list, const char *name)
{
    for (size_t i = 0; list[i]; i++)
        if (strcasecmp(list[i], name) == 0)
            return true;
    return false;
}

static bool attribute_ok(const char *element, const char *name, const char *value,
                         bool remote)
{
    if (strncasecmp(name, "on", 2) == 0)
        return false;
    if (strcasecmp(name, "href") == 0 || strcasecmp(name, "xlink:href") == 0) {
        if (strcasecmp(element, "a") == 0)
            return url_ok(value, URL_LINK, false);
        if (strcasecmp(element, "image") == 0)
            return url_ok(value, URL_PICTURE, remote);
        return strcasecmp(element, "use") == 0 && url_ok(value, URL_FRAGMENT, false);
    }
    if (strcasecmp(name, "src") == 0)
        return strcasecmp(element, "img") == 0 && url_ok(value, URL_PICTURE, remote);
    if (strcasecmp(name, "style") == 0 || in_list(active_paint_attributes, name))
        return css_ok(value);
    if (strncasecmp(name, "aria-", 5) == 0)
        return true;
    return in_list(active_attributes, name);
}

static bool element_ok(xmlNode *e, bool remote);

/* A name as the browser reads it, with the prefix that libxml2 keeps apart
 * ("rdf:RDF" is element "rdf" of namespace prefix "rdf" to it). Returns NULL
 * if it does not fit: not a name on any list. */
static const char *qualified(const xmlChar *name, const xmlNs *ns, char *buf, size_t size)
{
    if (!name)
        return NULL;
    if (!ns || !ns->prefix)
        return (const char *)name;
    int n = snprintf(buf, size, "%s:%s", (const char *)ns->prefix, (const char *)name);
    return n > 0 && (size_t)n < size ? buf : NULL;
}

static bool children_ok(xmlNode *parent, bool style, bool remote)
{
    for (xmlNode *c = parent->children; c; c = c->next) {
        switch (c->type) {
        case XML_ELEMENT_NODE:
            if (style || !element_ok(c, remote))
                return false;
            break;
        case XML_TEXT_NODE:
        case XML_CDATA_SECTION_NODE:
            /* A style's text: CSS, and no '<' that foreign content would read
             * as a tag. CDATA comes only from a style (the raw scan refuses
             * "<![CDATA["), or from a script, which is not on the list. */
            if (style && c->content && !css_ok((const char *)c->content))
                return false;
            if (!style && c->type == XML_CDATA_SECTION_NODE)
                return false;
            break;
        case XML_COMMENT_NODE:
        case XML_PI_NODE:
            break; /* the raw scan has made sure both parsers end them alike */
        default:
            return false;
        }
    }
    return true;
}

static bool element_ok(xmlNode *e, bool remote)
{
    char ebuf[64], abuf[64];
    const char *name = qualified(e->name, e->ns, ebuf, sizeof ebuf);
    if (!name || !in_list(active_elements, name))
        return false;
    for (xmlAttr *a = e->properties; a; a = a->next) {
        const char *aname = qualified(a->name, a->ns, abuf, sizeof abuf);
        xmlChar *v = xmlNodeListGetString(e->doc, a->children, 1);
        bool ok = aname && attribute_ok(name, aname, v ? (const char *)v : "", remote);
        xmlFree(v);
        if (!ok)
            return false;
    }
    return children_ok(e, strcasecmp(name, "style") == 0, remote);
}

/* --- the parse ------------------------------------------------------------------- */

struct parse_errors {
    bool bad;
};

/* The errors that change nothing of what is markup: a tag name that HTML 4
 * does not know (SVG's), an end tag that does not match (elements move, none
 * is made), and a character that XML forbids (a control character) in text or
 * in a value, which libxml2 leaves out and a browser keeps as text: a name
 * that it would end or a '<' that it would follow is an error of another
 * kind. */
static void on_error(void *data, xmlErrorPtr error)
{
    struct parse_errors *pe = data;
    if (error->code == XML_HTML_UNKNOWN_TAG || error->code == XML_ERR_TAG_NAME_MISMATCH ||
        error->code == XML_ERR_INVALID_CHAR)
        return;
    pe->bad = true;
}

static bool parse_ok(const char *s, size_t n, bool remote)
{
    if (n > ACTIVE_HTML_MAX_PARSE || n > INT32_MAX)
        return false;
    htmlParserCtxtPtr ctxt = htmlNewParserCtxt();
    if (!ctxt)
        return false;
    struct parse_errors pe = {false};
    xmlSetStructuredErrorFunc(&pe, on_error);
    int opts = HTML_PARSE_RECOVER | HTML_PARSE_NONET | HTML_PARSE_NOERROR |
               HTML_PARSE_NOWARNING | HTML_PARSE_IGNORE_ENC | HTML_PARSE_COMPACT;
    htmlDocPtr doc = htmlCtxtReadMemory(ctxt, s, (int)n, NULL, "UTF-8", opts);
    xmlSetStructuredErrorFunc(NULL, NULL);
    bool ok = doc && !pe.bad;
    for (xmlNode *c = doc ? doc->children : NULL; ok && c; c = c->next) {
        if (c->type == XML_ELEMENT_NODE)
            ok = element_ok(c, remote);
        else if (c->type != XML_DTD_NODE && c->type != XML_COMMENT_NODE &&
                 c->type != XML_PI_NODE && c->type != XML_TEXT_NODE)
            ok = false;
    }
    xmlFreeDoc(doc);
    htmlFreeParserCtxt(ctxt);
    return ok;
}

bool active_html_safe(const char *s, size_t n, bool remote)
{
    if (!memchr(s, '<', n))
        return active_latex_safe(s, n) && !memchr(s, 0, n);
    return raw_ok(s, n) && active_latex_safe(s, n) && parse_ok(s, n, remote);
}

/* Markdown: its raw HTML as HTML; its links, whatever their syntax, by their
 * text with spaces, controls and backslash escapes taken out (a scheme that
 * ends in "script:", or a data: URL as a link's target); no entity, which the
 * renderer may decode in a link; and, without remote loads, no picture ("![")
 * in a text that names a server ("//"), which the page would fetch at once. */
bool active_markdown_safe(const char *s, size_t n, bool remote)
{
    if (!active_html_safe(s, n, remote))
        return false;
    if (!remote && memmem(s, n, "![", 2) && memmem(s, n, "//", 2))
        return false;
    char window[8] = {0}; /* the last 7 bytes kept, lower case */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '&' && i + 1 < n &&
            (s[i + 1] == '#' || isalpha((unsigned char)s[i + 1])))
            return false;
        if (c <= 0x20 || c == '\\')
            continue;
        memmove(window, window + 1, 6);
        window[6] = (char)tolower(c);
        if (memcmp(window, "script:", 7) == 0 || memcmp(window + 1, "(data:", 6) == 0 ||
            memcmp(window, "]:data:", 7) == 0)
            return false;
    }
    return true;
}
