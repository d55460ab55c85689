/*  store_migrate_test.c — fq_store_migrate against a real PostgreSQL: an
    empty database gets every migration, a migrated one nothing, two
    daemons starting at once apply each migration once, and a database
    newer than the program is refused; and events written before 0029
    read the same after it. Each test has a database of its own. */
#include "fq_store.h"
#include "fq_error.h"
#include "fq_store_events.h"
#include "fq_test_migrations.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <pthread.h>
#include <cmocka.h>
#include "fq_test_sql.h"

//  Rounds of the concurrent-migration race, each on a fresh database.
#define S_RACE_ROUNDS 3

//  Everything in schema fairq that a migration could create or change,
//  oids included (a dropped and recreated object differs), and the
//  migration log itself, as one digest.
static const char *const S_SCHEMA_DIGEST =
    "SELECT md5(string_agg(x, E'\\n' ORDER BY x)) FROM ("
    " SELECT 'rel ' || c.oid || ' ' || c.relname || ' ' || c.relkind::text || ' '"
    "        || coalesce(array_to_string(c.reloptions, ','), '')"
    "   FROM pg_class c WHERE c.relnamespace = 'fairq'::regnamespace"
    " UNION ALL SELECT 'col ' || a.attrelid::regclass || '.' || a.attname || ' '"
    "        || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull"
    "   FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid"
    "  WHERE c.relnamespace = 'fairq'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped"
    " UNION ALL SELECT 'idx ' || pg_get_indexdef(i.indexrelid)"
    "   FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid"
    "  WHERE c.relnamespace = 'fairq'::regnamespace"
    " UNION ALL SELECT 'con ' || oid || ' ' || conname || ' ' || pg_get_constraintdef(oid)"
    "   FROM pg_constraint WHERE connamespace = 'fairq'::regnamespace"
    " UNION ALL SELECT 'fn ' || oid || ' ' || oid::regprocedure || ' ' || md5(prosrc)"
    "   FROM pg_proc WHERE pronamespace = 'fairq'::regnamespace"
    " UNION ALL SELECT 'type ' || oid || ' ' || typname"
    "   FROM pg_type WHERE typnamespace = 'fairq'::regnamespace"
    " UNION ALL SELECT 'mig ' || version || ' ' || name || ' ' || applied_at"
    "   FROM fairq.schema_migrations) s(x)";

//  A fresh, empty database for one test; fails the test if it cannot.
static void s_fresh_db(const char *tag, char *conninfo, size_t size)
{
    if (fq_test_db_create_named(tag, false, conninfo, size))
        fail_msg("could not create database %s", tag);
}

//  A database nobody migrated has schema version 0, and asking does not
//  create anything.
static void test_empty_database_version_is_zero(void **unused)
{
    (void)unused;
    char conninfo[128];
    s_fresh_db("empty", conninfo, sizeof conninfo);
    fq_store_t *store = fq_test_store(conninfo);
    int version = -1;
    int rc = fq_store_schema_version(store, &version);
    if (rc)
        fail_msg("schema version of an empty database: %s", fq_store_error(store));
    assert_int_equal(version, 0);
    PGconn *conn = fq_test_connect(conninfo);
    assert_int_equal(
        fq_test_int(conn, "SELECT count(*) FROM pg_namespace WHERE nspname = 'fairq'", 0), 0);
    PQfinish(conn);
    fq_store_destroy(&store);
    fq_test_db_drop_named("empty");
}

//  A database that cannot be reached gives NULL and a message saying so,
//  in PostgreSQL's style (no trailing newline).
static void test_bad_conninfo_is_refused(void **unused)
{
    (void)unused;
    const char *bad[] = {
        "host=/nonexistent/socket/dir port=1 connect_timeout=5", // no server there
        "dbname=fq_no_such_database_here",                       // server says no
        "this is = not a conninfo",                              // libpq cannot parse it
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char error[256] = "";
        fq_store_t *store = fq_store_new(bad[i], error, sizeof error);
        assert_null(store);
        const char *prefix = "could not connect to database: ";
        if (strncmp(error, prefix, strlen(prefix)) != 0 || strlen(error) <= strlen(prefix))
            fail_msg("%s: unexpected error \"%s\"", bad[i], error);
        assert_int_not_equal(error[strlen(error) - 1], '\n');
        print_message("%s -> %s\n", bad[i], error);
    }
    //  The server's own reason reaches the caller
    char error[256] = "";
    assert_null(fq_store_new("dbname=fq_no_such_database_here", error, sizeof error));
    assert_non_null(strstr(error, "fq_no_such_database_here"));
    //  A small buffer is truncated, never overrun
    char tiny[12];
    memset(tiny, 'x', sizeof tiny);
    assert_null(fq_store_new("dbname=fq_no_such_database_here", tiny, sizeof tiny));
    assert_int_equal(strlen(tiny), sizeof tiny - 1);
}

//  An empty database gets every migration, recorded once each by version
//  and name, and ends at the latest version with fairq's tables in place.
static void test_empty_database_gets_every_migration(void **unused)
{
    (void)unused;
    char conninfo[128];
    s_fresh_db("all", conninfo, sizeof conninfo);
    fq_store_t *store = fq_test_store(conninfo);
    int applied = fq_store_migrate(store);
    if (applied < 0)
        fail_msg("migrate: %s", fq_store_error(store));
    assert_int_equal(applied, fq_test_migration_count());
    int version = 0;
    assert_int_equal(fq_store_schema_version(store, &version), 0);
    assert_int_equal(version, fq_test_latest_version());

    PGconn *conn = fq_test_connect(conninfo);
    assert_int_equal(fq_test_int(conn, "SELECT count(*) FROM fairq.schema_migrations", 0),
                     fq_test_migration_count());
    for (const fq_migration_t *m = fq_migrations; m->sql; m++) {
        char version_text[16];
        fq_test_param(version_text, sizeof version_text, m->version);
        assert_int_equal(fq_test_int(conn,
                                     "SELECT count(*) FROM fairq.schema_migrations"
                                     " WHERE version = $1 AND name = $2",
                                     2, version_text, m->name),
                         1);
    }
    const char *tables[] = {"fairq.tenants", "fairq.requests", "fairq.recipient_chunks",
                            "fairq.messages", "fairq.rejects"};
    for (size_t i = 0; i < sizeof tables / sizeof tables[0]; i++)
        assert_int_equal(
            fq_test_int(conn, "SELECT (to_regclass($1) IS NOT NULL)::int", 1, tables[i]), 1);
    assert_int_equal(
        fq_test_int(conn, "SELECT count(*) FROM pg_proc WHERE oid = 'fairq.submit'::regproc", 0),
        1);
    PQfinish(conn);
    fq_store_destroy(&store);
    fq_test_db_drop_named("all");
}

//  Migrating a migrated database applies nothing and changes nothing: not
//  a table, an index, a function, nor the migration log.
static void test_second_migrate_applies_nothing(void **unused)
{
    (void)unused;
    char conninfo[128];
    s_fresh_db("again", conninfo, sizeof conninfo);
    fq_store_t *store = fq_test_store(conninfo);
    assert_int_equal(fq_store_migrate(store), fq_test_migration_count());
    PGconn *conn = fq_test_connect(conninfo);
    char *before = fq_test_text(conn, S_SCHEMA_DIGEST, 0);
    assert_non_null(before);

    assert_int_equal(fq_store_migrate(store), 0);
    //  A second program (a restart) sees the same
    fq_store_t *other = fq_test_store(conninfo);
    assert_int_equal(fq_store_migrate(other), 0);

    char *after = fq_test_text(conn, S_SCHEMA_DIGEST, 0);
    assert_string_equal(before, after);
    int version = 0;
    assert_int_equal(fq_store_schema_version(other, &version), 0);
    assert_int_equal(version, fq_test_latest_version());
    free(before);
    free(after);
    PQfinish(conn);
    fq_store_destroy(&other);
    fq_store_destroy(&store);
    fq_test_db_drop_named("again");
}

typedef struct {
    const char *conninfo;
    pthread_barrier_t *start;
    int applied;
    char error[512];
} s_migrator_t;

//  One daemon starting: connects, waits for the other, migrates.
static void *s_migrator(void *arg)
{
    s_migrator_t *self = arg;
    fq_store_t *store = fq_store_new(self->conninfo, self->error, sizeof self->error);
    pthread_barrier_wait(self->start);
    if (!store) {
        self->applied = -1;
        return NULL;
    }
    self->applied = fq_store_migrate(store);
    if (self->applied < 0)
        snprintf(self->error, sizeof self->error, "%s", fq_store_error(store));
    fq_store_destroy(&store);
    return NULL;
}

//  Two daemons starting at once on an empty database both succeed, and
//  between them apply each migration exactly once.
static void test_concurrent_migrations_apply_once(void **unused)
{
    (void)unused;
    for (int round = 0; round < S_RACE_ROUNDS; round++) {
        char tag[16], conninfo[128];
        snprintf(tag, sizeof tag, "race%d", round);
        s_fresh_db(tag, conninfo, sizeof conninfo);
        pthread_barrier_t start;
        pthread_barrier_init(&start, NULL, 2);
        s_migrator_t migrators[2] = {{.conninfo = conninfo, .start = &start},
                                     {.conninfo = conninfo, .start = &start}};
        pthread_t threads[2];
        for (int i = 0; i < 2; i++)
            assert_int_equal(pthread_create(&threads[i], NULL, s_migrator, &migrators[i]), 0);
        for (int i = 0; i < 2; i++)
            pthread_join(threads[i], NULL);
        pthread_barrier_destroy(&start);
        for (int i = 0; i < 2; i++)
            if (migrators[i].applied < 0)
                fail_msg("round %d, migrator %d: %s", round, i, migrators[i].error);
        assert_int_equal(migrators[0].applied + migrators[1].applied, fq_test_migration_count());

        PGconn *conn = fq_test_connect(conninfo);
        assert_int_equal(fq_test_int(conn,
                                     "SELECT count(*) FROM (SELECT version FROM"
                                     " fairq.schema_migrations GROUP BY version"
                                     " HAVING count(*) = 1) once",
                                     0),
                         fq_test_migration_count());
        assert_int_equal(fq_test_int(conn, "SELECT count(*) FROM fairq.schema_migrations", 0),
                         fq_test_migration_count());
        PQfinish(conn);
        fq_test_db_drop_named(tag);
    }
}

//  A database migrated by a newer fairq is refused, with a message naming
//  both versions, and left as it was.
static void test_newer_schema_is_refused(void **unused)
{
    (void)unused;
    char conninfo[128];
    s_fresh_db("newer", conninfo, sizeof conninfo);
    fq_store_t *store = fq_test_store(conninfo);
    assert_int_equal(fq_store_migrate(store), fq_test_migration_count());
    int future = fq_test_latest_version() + 1;
    char future_text[16];
    fq_test_param(future_text, sizeof future_text, future);
    PGconn *conn = fq_test_connect(conninfo);
    fq_test_exec(conn, "INSERT INTO fairq.schema_migrations (version, name) VALUES ($1, 'future')",
                 1, future_text);
    char *before = fq_test_text(conn, S_SCHEMA_DIGEST, 0);

    assert_int_equal(fq_store_migrate(store), FQ_ESCHEMA);
    const char *error = fq_store_error(store);
    char latest_text[16];
    fq_test_param(latest_text, sizeof latest_text, fq_test_latest_version());
    print_message("%s\n", error);
    assert_non_null(strstr(error, future_text));
    assert_non_null(strstr(error, latest_text));
    //  Nothing changed, and the store is usable (no transaction left open)
    char *after = fq_test_text(conn, S_SCHEMA_DIGEST, 0);
    assert_string_equal(before, after);
    int version = 0;
    assert_int_equal(fq_store_schema_version(store, &version), 0);
    assert_int_equal(version, future);
    //  Every program that starts on it is refused the same way
    fq_store_t *other = fq_test_store(conninfo);
    assert_int_equal(fq_store_migrate(other), FQ_ESCHEMA);
    free(before);
    free(after);
    PQfinish(conn);
    fq_store_destroy(&other);
    fq_store_destroy(&store);
    fq_test_db_drop_named("newer");
}

//  Applies to conninfo's empty database the migrations up to version
//  through, recorded as fq_store_migrate records them: a database of an
//  older fairq.
static void s_migrate_through(PGconn *conn, int through)
{
    fq_test_exec(conn, "CREATE SCHEMA fairq", 0);
    fq_test_exec(conn,
                 "CREATE TABLE fairq.schema_migrations (version integer PRIMARY KEY,"
                 " name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())",
                 0);
    for (const fq_migration_t *m = fq_migrations; m->sql && m->version <= through; m++) {
        PGresult *res = PQexec(conn, m->sql);
        if (PQresultStatus(res) != PGRES_COMMAND_OK && PQresultStatus(res) != PGRES_TUPLES_OK)
            fail_msg("migration %s: %s", m->name, PQresultErrorMessage(res));
        PQclear(res);
        char version[16];
        fq_test_exec(conn, "INSERT INTO fairq.schema_migrations (version, name) VALUES ($1, $2)", 2,
                     fq_test_param(version, sizeof version, m->version), m->name);
    }
}

//  fq_store_events after cursor, waited for until it answers expected:
//  events show only once every transaction older than theirs is over,
//  in the whole cluster, and a test running beside this one in another
//  database may hold one open for a moment.
static int s_events_when(fq_store_t *store, const char *cursor, int expected, fq_event_page_t *page)
{
    int64_t deadline = fq_test_now_ms() + 10000;
    for (;;) {
        int n = fq_store_events(store, &(fq_event_filter_t){0}, cursor, 100, page);
        if (n == expected || fq_test_now_ms() > deadline)
            return n;
        fq_event_page_free(page);
        fq_test_sleep_ms(20);
    }
}

//  Events written before 0029 (a row each) read the same after it, a
//  cursor handed out before goes on after it, through the old events and
//  then a new row of a batch's deliveries, and the view still takes a
//  single event as the table did. The new check is not validated (no scan
//  of the table under the rename's lock).
static void test_events_survive_the_upgrade_to_rows(void **unused)
{
    (void)unused;
    char conninfo[128];
    s_fresh_db("events_upgrade", conninfo, sizeof conninfo);
    PGconn *conn = fq_test_connect(conninfo);
    s_migrate_through(conn, 28);
    int64_t tenant =
        fq_test_int(conn, "INSERT INTO fairq.tenants (name) VALUES ('acme') RETURNING id", 0);
    char t[32], i_text[16];
    fq_test_param(t, sizeof t, tenant);
    int64_t old_ids[5];
    for (int i = 0; i < 5; i++)
        old_ids[i] =
            fq_test_int(conn,
                        "INSERT INTO fairq.events (tenant_id, request_id, message_id, type,"
                        " recipient) VALUES ($1::bigint, 7, 100 + $2::int, 'message.sent',"
                        " 'r' || $2 || '@example.org') RETURNING id",
                        2, t, fq_test_param(i_text, sizeof i_text, i));
    char *txid = fq_test_text(conn, "SELECT txid::text FROM fairq.events WHERE id = $1::bigint", 1,
                              fq_test_param(i_text, sizeof i_text, old_ids[1]));
    char cursor[FQ_EVENT_CURSOR_SIZE];
    snprintf(cursor, sizeof cursor, "%s-%lld", txid, (long long)old_ids[1]);
    free(txid);

    fq_store_t *store = fq_test_store(conninfo);
    assert_int_equal(fq_store_migrate(store), fq_test_latest_version() - 28);
    fq_event_page_t page;
    assert_int_equal(s_events_when(store, NULL, 5, &page), 5);
    for (int i = 0; i < 5; i++) {
        char to[32];
        snprintf(to, sizeof to, "r%d@example.org", i);
        assert_int_equal(page.rows[i].id, old_ids[i]);
        assert_int_equal(page.rows[i].message_id, 100 + i);
        assert_int_equal(page.rows[i].request_id, 7);
        assert_string_equal(page.rows[i].recipient, to);
        assert_string_equal(page.rows[i].tenant, "acme");
    }
    fq_event_page_free(&page);

    //  A batch's deliveries after the upgrade: one row, three events
    fq_test_exec(conn,
                 "INSERT INTO fairq.event_rows (tenant_id, request_id, type, message_ids,"
                 " recipients) VALUES ($1::bigint, 8, 'message.sent', ARRAY[200, 201, 202],"
                 " ARRAY['a@example.org', 'b@example.org', 'c@example.org'])",
                 1, t);
    //  And a single event through the view, as 0021's functions write them
    int64_t single = fq_test_int(conn,
                                 "INSERT INTO fairq.events (tenant_id, request_id, type)"
                                 " VALUES ($1::bigint, 8, 'request.done') RETURNING id",
                                 1, t);
    assert_int_equal(s_events_when(store, cursor, 7, &page), 7);
    assert_int_equal(page.rows[0].id, old_ids[2]);
    assert_int_equal(page.rows[2].id, old_ids[4]);
    for (int k = 0; k < 3; k++) {
        assert_true(page.rows[3 + k].id > old_ids[4]);
        assert_int_equal(page.rows[3 + k].id, page.rows[3].id + k);
        assert_int_equal(page.rows[3 + k].message_id, 200 + k);
        assert_int_equal(page.rows[3 + k].request_id, 8);
    }
    assert_string_equal(page.rows[5].recipient, "c@example.org");
    assert_int_equal(page.rows[6].id, single);
    assert_string_equal(page.rows[6].type, "request.done");
    fq_event_page_free(&page);
    char *valid = fq_test_text(conn,
                               "SELECT convalidated::text FROM pg_constraint"
                               " WHERE conname = 'event_rows_messages_check'",
                               0);
    assert_string_equal(valid, "false");
    free(valid);
    PQfinish(conn);
    fq_store_destroy(&store);
    fq_test_db_drop_named("events_upgrade");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_database_version_is_zero),
        cmocka_unit_test(test_bad_conninfo_is_refused),
        cmocka_unit_test(test_empty_database_gets_every_migration),
        cmocka_unit_test(test_second_migrate_applies_nothing),
        cmocka_unit_test(test_concurrent_migrations_apply_once),
        cmocka_unit_test(test_newer_schema_is_refused),
        cmocka_unit_test(test_events_survive_the_upgrade_to_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
