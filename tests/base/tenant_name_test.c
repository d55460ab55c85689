/*  tenant_name_test.c — the tenant name rule every entry point shares. */
#include "fq_limits.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

static void test_tenant_names(void **state)
{
    (void)state;
    assert_true(fq_tenant_name_valid("acme"));
    assert_true(fq_tenant_name_valid("0day.shop-eu_2"));
    assert_true(fq_tenant_name_valid("a"));
    assert_false(fq_tenant_name_valid(NULL));
    assert_false(fq_tenant_name_valid(""));
    assert_false(fq_tenant_name_valid("Acme"));  //  lowercase only
    assert_false(fq_tenant_name_valid("-acme")); //  starts with a letter or digit
    assert_false(fq_tenant_name_valid(".acme"));
    assert_false(fq_tenant_name_valid("ac me"));
    assert_false(fq_tenant_name_valid("acme/x"));
    assert_false(fq_tenant_name_valid("caf\xC3\xA9")); //  ASCII only
}

static void test_tenant_name_length(void **state)
{
    (void)state;
    char name[FQ_TENANT_NAME_SIZE + 1];
    memset(name, 'a', FQ_TENANT_NAME_MAX);
    name[FQ_TENANT_NAME_MAX] = 0;
    assert_true(fq_tenant_name_valid(name));
    name[FQ_TENANT_NAME_MAX] = 'a';
    name[FQ_TENANT_NAME_MAX + 1] = 0;
    assert_false(fq_tenant_name_valid(name));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tenant_names),
        cmocka_unit_test(test_tenant_name_length),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
