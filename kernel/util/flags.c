/* flags: one pass over argv against a command's table.
 *
 * What is hard is only to be the same everywhere: a value given as the next
 * argument or after '=', the sentence for a flag that lacks its value and for
 * one that does not exist, and, for a command that hands the rest of its line
 * to another parser (install and start give the kernel's options to
 * options_parse), keeping what is not its own in order. */
#include "kernel/util/flags.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

#include "protocol/errbuf.h"

/* The entry for argument a (nlen: the length of its name, before any '='), or NULL. */
static const struct flag *find(const struct flags *fl, const char *a, size_t *nlen)
{
    if (a[0] == '-' && a[1] && a[1] != '-' && !a[2]) { /* -f */
        *nlen = 2;
        for (size_t k = 0; k < fl->n; k++)
            if (fl->v[k].letter && fl->v[k].letter == a[1])
                return &fl->v[k];
        return NULL;
    }
    if (strncmp(a, "--", 2) != 0)
        return NULL;
    const char *name = a + 2, *eq = strchr(name, '=');
    size_t len = eq ? (size_t)(eq - name) : strlen(name);
    *nlen = len + 2;
    for (size_t k = 0; k < fl->n; k++) {
        const char *n = fl->v[k].name;
        if (n && strlen(n) == len && strncmp(n, name, len) == 0)
            return &fl->v[k];
    }
    return NULL;
}

static const struct flag *positional(const struct flags *fl)
{
    for (size_t k = 0; k < fl->n; k++)
        if (!fl->v[k].name)
            return &fl->v[k];
    return NULL;
}

static bool is_flag(const char *a)
{
    return a[0] == '-' && a[1];
}

/* Stores the value v of f (NULL for a flag that takes none; the argument itself
 * for the positional one, which takes one argument unless it is a call). */
static int store(const struct flags *fl, const struct flag *f, void *base, const char *v,
                 char *err, size_t errlen)
{
    void *field = (char *)base + f->offset;
    switch (f->kind) {
    case FLAG_SWITCH:
        *(bool *)field = true;
        return 0;
    case FLAG_TEXT:
        if (!f->name && *(const char **)field)
            return errbuf_set(-EINVAL, err, errlen,
                              "unexpected argument \"%s\" (see %s --help)", v, fl->cmd);
        *(const char **)field = v;
        return 0;
    case FLAG_CALL:
        return f->call(base, f, v, err, errlen);
    case FLAG_HELP:
        return FLAGS_HELP;
    }
    return -EINVAL;
}

/* The value of the flag f given as argv[*i] (nlen: the length of its name), taking
 * the next argument when it is not after '='. NULL with err set when it is missing
 * or given to a flag that takes none. */
static const char *value_of(const struct flags *fl, const struct flag *f, int argc,
                            char **argv, int *i, size_t nlen, char *err, size_t errlen)
{
    const char *a = argv[*i];
    bool eq = a[nlen] == '=';
    if (!f->needs) {
        if (eq)
            errbuf_set(-EINVAL, err, errlen, "%.*s takes no value (see %s --help)",
                       (int)nlen, a, fl->cmd);
        return eq ? NULL : "";
    }
    if (eq)
        return a + nlen + 1;
    if (*i + 1 >= argc) {
        errbuf_set(-EINVAL, err, errlen, "%s needs %s (see %s --help)", a, f->needs,
                   fl->cmd);
        return NULL;
    }
    return argv[++*i];
}

int flags_parse(const struct flags *fl, void *base, int *argc, char **argv, char *err,
                size_t errlen)
{
    const struct flag *pos = positional(fl);
    int kept = 1, n = *argc;
    for (int i = 1; i < n; i++) {
        const char *a = argv[i];
        size_t nlen = 0;
        const struct flag *f = is_flag(a) ? find(fl, a, &nlen) : pos;
        if (!f && fl->keep_others) {
            argv[kept++] = argv[i];
            continue;
        }
        if (!f)
            return is_flag(a) ? errbuf_set(-EINVAL, err, errlen,
                                           "unexpected argument \"%s\", an unknown "
                                           "option (see %s --help)",
                                           a, fl->cmd)
                              : errbuf_set(-EINVAL, err, errlen,
                                           "unexpected argument \"%s\" (see %s --help)",
                                           a, fl->cmd);
        const char *v = a;
        if (f->name && !(v = value_of(fl, f, n, argv, &i, nlen, err, errlen)))
            return -EINVAL;
        int rc = store(fl, f, base, f->needs || !f->name ? v : NULL, err, errlen);
        if (rc)
            return rc;
    }
    if (fl->keep_others) {
        argv[kept] = NULL;
        *argc = kept;
    }
    return 0;
}

void flags_usage(FILE *f, const struct flags *fl, int width)
{
    for (size_t k = 0; k < fl->n; k++) {
        const struct flag *d = &fl->v[k];
        if (!d->help || !d->name)
            continue;
        char left[128];
        snprintf(left, sizeof left, "--%s%s%s", d->name, d->metavar ? " " : "",
                 d->metavar ? d->metavar : "");
        fprintf(f, "  %-*s ", width, left);
        for (const char *p = d->help; *p; p++) {
            fputc(*p, f);
            if (*p == '\n')
                fprintf(f, "%*s", width + 3, "");
        }
        fputc('\n', f);
    }
}
