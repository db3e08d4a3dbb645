/*
 * bench/wl_sqlite.c -- SQLite inserts in transactions and indexed queries
 * (libsqlite3 over sqlite_vfs.c, so SQLite's pager, rollback journal and
 * syncs go through the library), the database workload of the seed's
 * evaluation and of Olivier et al.'s SQLite measurements.
 *
 * Database "/bench.db": PRAGMA page_size=4096, journal_mode=DELETE,
 * synchronous=FULL (every commit: journal written and synced, database
 * written and synced, journal deleted with a directory sync);
 * table t(id INTEGER PRIMARY KEY, k INTEGER, v TEXT) with an index on k;
 * `rows` rows (default 10000, x scale) loaded before the run in
 * transactions of 1000 rows.  v is 100 random letters, k uniform in
 * [0, 2^30).
 * One transaction: with probability insert_pct/100 (default 50) an insert
 * transaction -- BEGIN; `batch` (default 10) INSERTs; COMMIT -- else an
 * indexed range query, SELECT count(*), sum(length(v)) FROM t WHERE k
 * BETWEEN a AND b, with the range sized to hold about `batch` rows.
 * One connection shared by the processes (default 1), so their
 * transactions run one at a time on the real clock too (`serial`: SQLite
 * serialises a connection's calls by its own mutex, and a counted call
 * releasing the harness's lock inside one would let another process wait
 * for that mutex while holding the lock).  Default 1000 transactions.
 * kv: rows, batch, insert_pct, cache_pages (SQLite's own page cache,
 * PRAGMA cache_size; 0, the default: SQLite's default).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sqlite3.h>
#include "bench/bench_int.h"
#include "util/util.h"

#define SQ_KMAX (1ull << 30)
#define SQ_VLEN 100
#define SQ_LOAD_BATCH 1000u

struct sq_state {
    struct bh_sqlvfs *vfs;
    sqlite3 *db;
    sqlite3_stmt *ins, *sel;
    uint64_t rows, batch, insert_pct, cache_pages;
};

static const char *const sq_keys[] = { "rows", "batch", "insert_pct", "cache_pages",
                                       NULL };

/* sq_err -- a SQLite failure as a negative errno with a message. */
static int sq_err(struct sq_state *s, int src, const char *what)
{
    int e = s->vfs ? bh_sqlvfs_errno(s->vfs) : 0;
    if (e == 0)
        e = src == SQLITE_FULL ? -ENOSPC : src == SQLITE_NOMEM ? -ENOMEM : -EIO;
    if (e == -ENOSPC && strstr(ubj_errormsg(), "raise image_blocks") != NULL)
        return e;
    return ubj_set_error(e, "bench sqlite: %s: %s", what,
                         s->db ? sqlite3_errmsg(s->db) : sqlite3_errstr(src));
}

/* sq_exec -- run SQL without results. */
static int sq_exec(struct sq_state *s, const char *sql)
{
    int rc = sqlite3_exec(s->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : sq_err(s, rc, sql);
}

/* sq_insert -- one row. */
static int sq_insert(struct sq_state *s, struct bh_proc *p)
{
    char v[SQ_VLEN];
    for (unsigned i = 0; i < SQ_VLEN; i++)
        v[i] = (char)('a' + bh_below(p, 26));
    sqlite3_bind_int64(s->ins, 1, (sqlite3_int64)bh_below(p, SQ_KMAX));
    sqlite3_bind_text(s->ins, 2, v, SQ_VLEN, SQLITE_TRANSIENT);
    int rc = sqlite3_step(s->ins);
    sqlite3_reset(s->ins);
    return rc == SQLITE_DONE ? 0 : sq_err(s, rc, "insert");
}

/* sq_insert_txn -- BEGIN; n inserts; COMMIT. */
static int sq_insert_txn(struct sq_state *s, struct bh_proc *p, uint64_t n)
{
    int rc = sq_exec(s, "BEGIN");
    for (uint64_t i = 0; rc == 0 && i < n; i++)
        rc = sq_insert(s, p);
    if (rc == 0)
        return sq_exec(s, "COMMIT");
    sqlite3_exec(s->db, "ROLLBACK", NULL, NULL, NULL);
    return rc;
}

/* sq_query -- one indexed range query. */
static int sq_query(struct sq_state *s, struct bh_proc *p)
{
    uint64_t width = SQ_KMAX / (s->rows ? s->rows : 1) * s->batch;
    uint64_t a = bh_below(p, SQ_KMAX);
    sqlite3_bind_int64(s->sel, 1, (sqlite3_int64)a);
    sqlite3_bind_int64(s->sel, 2, (sqlite3_int64)(a + width));
    int rc;
    while ((rc = sqlite3_step(s->sel)) == SQLITE_ROW)
        ;
    sqlite3_reset(s->sel);
    return rc == SQLITE_DONE ? 0 : sq_err(s, rc, "query");
}

/* sq_open -- the database, its pragmas, schema and statements. */
static int sq_open(struct bh_run *r, struct sq_state *s)
{
    int rc = bh_sqlvfs_create(r, &s->vfs);
    if (rc < 0)
        return rc;
    int src = sqlite3_open_v2("bench.db", &s->db,
                              SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE,
                              bh_sqlvfs_name(s->vfs));
    if (src != SQLITE_OK)
        return sq_err(s, src, "open");
    rc = sq_exec(s, "PRAGMA page_size=4096; PRAGMA journal_mode=DELETE; "
                    "PRAGMA synchronous=FULL; CREATE TABLE t(id INTEGER PRIMARY "
                    "KEY, k INTEGER, v TEXT); CREATE INDEX tk ON t(k);");
    if (rc == 0 && s->cache_pages > 0) {
        char sql[64];
        snprintf(sql, sizeof sql, "PRAGMA cache_size=%llu;",
                 (unsigned long long)s->cache_pages);
        rc = sq_exec(s, sql);
    }
    if (rc < 0)
        return rc;
    src = sqlite3_prepare_v2(s->db, "INSERT INTO t(k, v) VALUES(?1, ?2)", -1,
                             &s->ins, NULL);
    if (src == SQLITE_OK)
        src = sqlite3_prepare_v2(s->db, "SELECT count(*), sum(length(v)) FROM t "
                                 "WHERE k BETWEEN ?1 AND ?2", -1, &s->sel, NULL);
    return src == SQLITE_OK ? 0 : sq_err(s, src, "prepare");
}

/* sq_init -- open and load. */
static int sq_init(struct bh_run *r)
{
    struct sq_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return ubj_set_error(-ENOMEM, "bench sqlite: out of memory");
    bh_set_state(r, s);
    int rc = bh_kv_check(r, sq_keys);
    if (rc == 0) rc = bh_kv_u64(r, "rows", 10000, &s->rows);
    if (rc == 0) rc = bh_kv_u64(r, "batch", 10, &s->batch);
    if (rc == 0) rc = bh_kv_u64(r, "insert_pct", 50, &s->insert_pct);
    if (rc == 0) rc = bh_kv_u64(r, "cache_pages", 0, &s->cache_pages);
    if (rc == 0 && (s->rows == 0 || s->batch == 0 || s->batch > 100000 ||
                    s->insert_pct > 100))
        rc = ubj_set_error(-EINVAL, "bench sqlite: rows > 0, batch 1 .. 100000, "
                           "insert_pct 0 .. 100");
    if (rc == 0)
        rc = bh_params_end(r);
    if (rc < 0)
        return rc;
    s->rows = fb_scaled(r, s->rows);
    rc = sq_open(r, s);
    for (uint64_t done = 0; rc == 0 && done < s->rows; done += SQ_LOAD_BATCH) {
        uint64_t n = s->rows - done < SQ_LOAD_BATCH ? s->rows - done : SQ_LOAD_BATCH;
        rc = sq_insert_txn(s, bh_setup_proc(r), n);
    }
    return rc;
}

/* sq_op -- an insert transaction or a query. */
static int sq_op(struct bh_run *r, struct bh_proc *p)
{
    struct sq_state *s = bh_state(r);
    if (bh_below(p, 100) < s->insert_pct) {
        int rc = sq_insert_txn(s, p, s->batch);
        if (rc == 0)
            s->rows += s->batch;
        return rc;
    }
    return sq_query(s, p);
}

/* sq_fini -- statements, connection, VFS. */
static void sq_fini(struct bh_run *r)
{
    struct sq_state *s = bh_state(r);
    if (s == NULL)
        return;
    sqlite3_finalize(s->ins);
    sqlite3_finalize(s->sel);
    sqlite3_close(s->db);
    bh_sqlvfs_destroy(s->vfs);
    free(s);
    bh_set_state(r, NULL);
}

const struct bh_workload bh_wl_sqlite = {
    .name = "sqlite",
    .summary = "SQLite (libsqlite3 + our VFS): insert transactions and indexed "
               "queries, journal_mode=DELETE, synchronous=FULL",
    .default_procs = 1,
    .default_ops = 1000,
    .init = sq_init,
    .op = sq_op,
    .fini = sq_fini,
    .serial = "one SQLite connection shared by the processes",
};
