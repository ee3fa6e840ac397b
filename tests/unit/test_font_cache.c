/* Unit tests for font_cache's checks: only fontlist-v<N>.json is a name the
 * cache takes, and only a list of matplotlib's schema whose fonts are
 * matplotlib's own or system fonts is valid. */
#include <stdio.h>
#include <string.h>

#include "kernel/supervisor/font_cache.h"
#include "testing.h"

static void test_only_matplotlibs_name_is_taken(void)
{
    CHECK(font_cache_name("fontlist-v330.json"));
    CHECK(font_cache_name("fontlist-v1.json"));
    CHECK(!font_cache_name("fontlist-v.json"));
    CHECK(!font_cache_name("fontlist-330.json"));
    CHECK(!font_cache_name("fontlist-v330.json.bak"));
    CHECK(!font_cache_name("fontlist-v330x.json"));
    CHECK(!font_cache_name("fontlist-v1234567.json"));
    CHECK(!font_cache_name("../fontlist-v330.json"));
}

static char *list(char *buf, size_t len, const char *fname, const char *extra)
{
    snprintf(
        buf, len,
        "{\"_version\": 330, \"_FontManager__default_weight\": \"normal\", "
        "\"default_size\": null, \"defaultFamily\": {\"ttf\": \"DejaVu Sans\", "
        "\"afm\": \"Helvetica\"}, \"afmlist\": [], \"ttflist\": [{\"fname\": \"%s\", "
        "\"name\": \"DejaVu Sans\", \"style\": \"normal\", \"variant\": \"normal\", "
        "\"weight\": 400, \"stretch\": \"normal\", \"size\": \"scalable\", "
        "\"__class__\": \"FontEntry\"%s}], \"__class__\": \"FontManager\"}",
        fname, extra);
    return buf;
}

static bool valid(const char *text)
{
    return font_cache_valid(text, strlen(text));
}

static void test_only_a_list_of_matplotlibs_schema_and_fonts_is_valid(void)
{
    char b[2048];
    CHECK(valid(list(b, sizeof b, "fonts/ttf/DejaVuSans.ttf", "")));
    CHECK(!valid(list(b, sizeof b, "fonts/../../../tmp/x.ttf", "")));
    CHECK(!valid(list(b, sizeof b, "/tmp/ws/evil.ttf", "")));
    CHECK(!valid(list(b, sizeof b, "/usr/share/fonts/../../../tmp/x.ttf", "")));
    CHECK(!valid(list(b, sizeof b, "/usr/share/fonts/no-such-font.ttf", "")));
    CHECK(!valid(list(b, sizeof b, "fonts/ttf/DejaVuSans.ttf", ", \"extra\": 1")));
    CHECK(!valid(list(b, sizeof b, "fonts/ttf/DejaVuSans.ttf", ", \"name\": \"x\"")));
    CHECK(!valid("{not json"));
    CHECK(!valid("[]"));
    CHECK(!valid("{\"__class__\": \"FontManager\", \"junk\": 1}"));
}

static const struct testing_case cases[] = {
    TESTING_CASE(test_only_matplotlibs_name_is_taken),
    TESTING_CASE(test_only_a_list_of_matplotlibs_schema_and_fonts_is_valid),
    {0},
};

int main(int argc, char **argv)
{
    return testing_main(argc, argv, cases);
}
