/* active_lists: what active_html.c lets through, as lists (NULL-ended, lower
 * case, compared without regard to case). Growing a list is a change to what
 * code in a sandboxed kernel may put in the user's page: each entry must run
 * nothing and load nothing by itself. */
#ifndef SANDPIT_ACTIVE_LISTS_H
#define SANDPIT_ACTIVE_LISTS_H

/* Elements of HTML (tables, text, lists, pictures) and of SVG as matplotlib
 * writes it (shapes, text, gradients, clipping, its RDF metadata), by the local
 * names that libxml2 gives them. */
extern const char *const active_elements[];
/* Attributes whose values mean nothing to a browser but layout and text. */
extern const char *const active_attributes[];
/* Presentation attributes that may hold url(...): checked as CSS. */
extern const char *const active_paint_attributes[];
/* Words that make CSS load something or run something. */
extern const char *const active_css_words[];
/* MathJax commands that make a link or set markup attributes. */
extern const char *const active_latex_commands[];
/* The types of a data: URL that an <img> may show. */
extern const char *const active_picture_types[];

#endif
