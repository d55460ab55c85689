/*  template_grammar_test.c — the SQL check fairq.template_fields (run at
    submit inside an application's transaction) and the C parser in
    templates/fq_template.c (run by the splitter and renderer) must agree on
    every template: accepted by one means accepted by the other, with the
    same fields. */
#include "fq_error.h"
#include "fq_store.h"
#include "fq_template.h"
#include "fq_test_db.h"
#include <setjmp.h>
#include <stdarg.h>
#include <string.h>
#include <cmocka.h>

static char s_conninfo[128];

static int s_setup(void **state)
{
    (void)state;
    if (fq_test_db_create(s_conninfo, sizeof s_conninfo))
        return -1;
    char error[256];
    fq_store_t *store = fq_store_new(s_conninfo, error, sizeof error);
    int rc = store ? fq_store_migrate(store) : -1;
    fq_store_destroy(&store);
    return rc < 0 ? -1 : 0;
}

static int s_teardown(void **state)
{
    (void)state;
    fq_test_db_drop();
    return 0;
}

//  Every template of the corpus gets the same verdict and fields from both.
static void test_sql_and_c_agree(void **unused)
{
    (void)unused;
    const char *corpus[] = {
        "plain text",
        "{{name}}",
        "Hi {{ name }}!",
        "{{{raw}}}",
        "{{{ raw }}} and {{a}}",
        "{{a}}{{b}}{{a}}",
        "{{a.b-c_d}}",
        "{{_x}}",
        "{{name",
        "{{name}",
        "{{{name}}",
        "{{ }}",
        "{{}}",
        "{{bad name}}",
        "{{1abc}}",
        "{{a}} {{",
        "}} {{a}}",
        "{ {a} }",
        "{{a}}}",
        "{{{{a}}}}",
        "{{\ta\t}}",
        "{{a\n}}",
        "{{\fa}}",
        "{{a\v}}",
        "{{\r\na }}",
        "x{{$y}}",
        "{{é}}",
        "price: {50}",
        "{{a}}{{{b}}}{{c}}",
    };
    PGconn *conn = PQconnectdb(s_conninfo);
    assert_int_equal(PQstatus(conn), CONNECTION_OK);
    for (size_t k = 0; k < sizeof corpus / sizeof corpus[0]; k++) {
        const char *params[] = {corpus[k]};
        PGresult *res = PQexecParams(conn, "SELECT array_to_string(fairq.template_fields($1), ',')",
                                     1, NULL, params, NULL, NULL, 0);
        bool sql_ok = PQresultStatus(res) == PGRES_TUPLES_OK;
        char error[256];
        fq_template_t *tpl = fq_template_new(corpus[k], FQ_TEMPLATE_PLAIN, error, sizeof error);
        if (sql_ok != (tpl != NULL))
            fail_msg("\"%s\": SQL %s, C %s", corpus[k], sql_ok ? "accepts" : "refuses",
                     tpl ? "accepts" : error);
        if (tpl) {
            char fields[512] = "";
            for (size_t i = 0; i < fq_template_field_count(tpl); i++) {
                strcat(fields, i ? "," : "");
                strcat(fields, fq_template_field(tpl, i));
            }
            assert_string_equal(fields, PQgetvalue(res, 0, 0));
        }
        fq_template_destroy(&tpl);
        PQclear(res);
    }
    PQfinish(conn);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_sql_and_c_agree)};
    return cmocka_run_group_tests(tests, s_setup, s_teardown);
}
