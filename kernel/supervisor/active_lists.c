/* active_lists: the allow-lists of active_html.c (see active_lists.h). Not on
 * the lists, on purpose: script, style's kin that hold raw text (textarea,
 * title, xmp, noscript, noembed, noframes, plaintext), iframe, frame, object,
 * embed, applet, base, meta, link, form and its controls, template, math, SVG's
 * foreignObject, animate, set and textPath, and every attribute that takes a
 * URL but href and src (background, action, formaction, srcset, poster, data,
 * codebase, cite, ping, xml:base), and name, which on a picture shadows the
 * page's document.cookie and its kin. */
#include "kernel/supervisor/active_lists.h"

#include <stddef.h>

const char *const active_elements[] = {
    "html", "head", "body", "div", "span", "p", "br", "hr", "b", "i", "u", "s", "em",
    "strong", "small", "big", "sub", "sup", "code", "pre", "kbd", "samp", "var", "tt",
    "mark", "abbr", "q", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "ul", "ol",
    "li", "dl", "dt", "dd", "table", "thead", "tbody", "tfoot", "tr", "th", "td",
    "caption", "colgroup", "col", "a", "img", "font", "center", "del", "ins", "strike",
    "details", "summary", "figure", "figcaption", "section", "article", "header",
    "footer", "nav", "aside", "main", "time", "wbr", "bdi", "bdo", "ruby", "rt", "rp",
    "nobr", "style",
    /* SVG */
    "svg", "g", "path", "rect", "circle", "ellipse", "line", "polyline", "polygon",
    "text", "tspan", "defs", "clippath", "use", "image", "lineargradient",
    "radialgradient", "stop", "pattern", "mask", "marker", "symbol", "metadata",
    /* matplotlib's metadata: rdf:RDF, cc:Work, dc:title... libxml2 drops the
     * prefix of an element's name, the browser keeps it (an unknown element
     * either way; an HTML title holds text alone, an SVG one is checked as
     * any other element's children). */
    "rdf", "work", "agent", "type", "date", "format", "creator", "title", NULL};

const char *const active_attributes[] = {
    /* HTML */
    "class", "id", "title", "lang", "dir", "align", "valign", "width", "height", "border",
    "cellpadding", "cellspacing", "colspan", "rowspan", "scope", "headers", "span",
    "start", "reversed", "type", "alt", "target", "rel", "role", "bgcolor", "color",
    "face", "size", "nowrap", "summary", "open", "value", "max", "min", "low", "high",
    "optimum", "frame", "rules", "abbr", "axis", "char", "charoff", "hspace", "vspace",
    "clear", "noshade", "compact", "scoped", "media", "hidden", "translate", "datetime",
    "tabindex",
    /* SVG */
    "xmlns", "xmlns:xlink", "xmlns:rdf", "xmlns:cc", "xmlns:dc", "xmlns:svg", "version",
    "baseprofile", "viewbox", "preserveaspectratio", "x", "y", "x1", "y1", "x2", "y2",
    "cx", "cy", "r", "rx", "ry", "d", "points", "transform", "fill-opacity", "fill-rule",
    "stroke-width", "stroke-linecap", "stroke-linejoin", "stroke-miterlimit",
    "stroke-dasharray", "stroke-dashoffset", "stroke-opacity", "opacity", "clip-rule",
    "clippathunits", "font-family", "font-size", "font-style", "font-weight",
    "font-variant", "text-anchor", "dominant-baseline", "alignment-baseline",
    "baseline-shift", "letter-spacing", "word-spacing", "text-decoration", "writing-mode",
    "dx", "dy", "rotate", "textlength", "lengthadjust", "xml:space", "offset",
    "stop-color", "stop-opacity", "gradientunits", "gradienttransform", "spreadmethod",
    "fx", "fy", "fr", "patternunits", "patterncontentunits", "patterntransform",
    "markerwidth", "markerheight", "markerunits", "refx", "refy", "orient", "visibility",
    "display", "overflow", "vector-effect", "shape-rendering", "text-rendering",
    "image-rendering", "maskunits", "maskcontentunits", "paint-order", "rdf:resource",
    "rdf:about", NULL};

const char *const active_paint_attributes[] = {
    "fill",         "stroke",     "clip-path",  "mask",   "filter",
    "marker-start", "marker-mid", "marker-end", "cursor", NULL};

const char *const active_css_words[] = {
    "@import",      "@font-face", "image-set",  "image(",     "cross-fade",
    "element(",     "src(",       "expression", "javascript", "vbscript",
    "-moz-binding", "behavior",   NULL};

const char *const active_latex_commands[] = {
    "\\href",    "\\class",    "\\cssid", "\\style", "\\require",
    "\\unicode", "\\mmltoken", "\\html",  "\\url",   NULL};

const char *const active_picture_types[] = {"image/png",  "image/jpeg", "image/gif",
                                            "image/webp", "image/bmp",  NULL};
