/*
 * bench/wl_iozone.c -- IOzone-style throughput tests (W. Norcott, "IOzone
 * filesystem benchmark", iozone.org; tests -i 0 write/rewrite, -i 1
 * read/reread, -i 2 random read/write).
 *
 * For each record size (kv record=N for one size; default IOzone's -a
 * sweep from 4 KiB to 1 MiB by powers of two) on a file of `size` bytes
 * (kv size=, default 16 MiB x scale, at least one record), the tests run
 * in IOzone's order:
 *   write    create the file, write it sequentially record by record
 *   rewrite  overwrite it sequentially
 *   read     read it sequentially
 *   reread   read it again
 *   randread read `size / record` records at random record offsets
 *   randwrite write as many records at random record offsets
 * then the file is removed.  Each test opens the file, and closes it
 * after; with fsync=1 (the default, IOzone -e) the write tests fsync
 * before the close, so the flush is part of the measurement.
 * kv pattern= selects tests, joined by '+' (e.g. pattern=write+read);
 * write is always run first (the other tests need the file).
 * One transaction = one record read or written (the open, fsync, close
 * and unlink at a test's edges belong to its first or last record).
 * One process; the run ends when the sweep is done (ops 0 = all of it).
 * Several processes share the one stream of records, one record at a
 * time even on the real clock (`serial`; IOzone's throughput mode -t,
 * one file per process, would overlap).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "bench/bench_int.h"
#include "util/util.h"

enum iz_test { IZ_WRITE, IZ_REWRITE, IZ_READ, IZ_REREAD, IZ_RANDREAD,
               IZ_RANDWRITE, IZ_NTESTS };

static const char *const iz_names[IZ_NTESTS] = {
    "write", "rewrite", "read", "reread", "randread", "randwrite"
};

#define IZ_MAXREC 9u

struct iz_state {
    uint64_t recs[IZ_MAXREC];
    unsigned nrecs;
    uint64_t size_req;
    enum iz_test tests[IZ_NTESTS];
    unsigned ntests;
    bool fsync;
    unsigned ri, ti;          /* current record size, test */
    uint64_t k, nrec, rec;    /* record within the test, records, size */
    ubj_ino_t ino;
};

static const char *const iz_keys[] = { "record", "size", "pattern", "fsync", NULL };

/* iz_patterns -- parse pattern=a+b+c. */
static int iz_patterns(struct bh_run *r, struct iz_state *s)
{
    char buf[128];
    int rc = bh_kv_str(r, "pattern", "all", buf, sizeof buf);
    if (rc < 0)
        return rc;
    size_t blen = strlen(buf);
    if (blen == 0 || buf[0] == '+' || buf[blen - 1] == '+' || strstr(buf, "++") != NULL)
        return ubj_set_error(-EINVAL, "bench iozone: pattern '%s' has an empty test "
                             "name (tests joined by '+')", buf);
    bool want[IZ_NTESTS] = { true };
    bool all = strcmp(buf, "all") == 0;
    for (char *save = NULL, *t = strtok_r(buf, "+", &save); !all && t != NULL;
         t = strtok_r(NULL, "+", &save)) {
        unsigned k = 0;
        while (k < IZ_NTESTS && strcmp(t, iz_names[k]) != 0)
            k++;
        if (k == IZ_NTESTS)
            return ubj_set_error(-EINVAL, "bench iozone: unknown test '%s' (write, "
                                 "rewrite, read, reread, randread, randwrite, all)", t);
        want[k] = true;
    }
    for (unsigned k = 0; k < IZ_NTESTS; k++)
        if (all || want[k])
            s->tests[s->ntests++] = (enum iz_test)k;
    return 0;
}

/* iz_init -- parameters only: the tests create their file. */
static int iz_init(struct bh_run *r)
{
    struct iz_state *s = calloc(1, sizeof *s);
    if (s == NULL)
        return ubj_set_error(-ENOMEM, "bench iozone: out of memory");
    bh_set_state(r, s);
    uint64_t rec, fs;
    int rc = bh_kv_check(r, iz_keys);
    if (rc == 0) rc = bh_kv_u64(r, "record", 0, &rec);
    if (rc == 0) rc = bh_kv_u64(r, "size", 0, &s->size_req);
    if (rc == 0) rc = bh_kv_u64(r, "fsync", 1, &fs);
    if (rc == 0) rc = iz_patterns(r, s);
    if (rc < 0)
        return rc;
    if (rec > BH_IO_MAX || (rec != 0 && rec < 512))
        return ubj_set_error(-EINVAL, "bench iozone: record %llu out of 512 .. "
                             "1 MiB", (unsigned long long)rec);
    if ((rc = bh_params_end(r)) != 0)
        return rc;
    s->fsync = fs != 0;
    if (rec != 0)
        s->recs[s->nrecs++] = rec;
    for (uint64_t x = 4096; rec == 0 && x <= BH_IO_MAX; x *= 2)
        s->recs[s->nrecs++] = x;
    if (s->size_req == 0) {
        double x = 16.0 * 1048576 * bh_params_of(r)->scale;
        s->size_req = x < 4096 ? 4096 : (uint64_t)x;
    }
    return 0;
}

/* iz_begin -- the first record of a test: sizes, create or open. */
static int iz_begin(struct bh_run *r, struct iz_state *s)
{
    s->rec = s->recs[s->ri];
    s->nrec = s->size_req / s->rec ? s->size_req / s->rec : 1;
    if (s->ti == 0) {
        char name[BH_NAME_LEN];
        snprintf(name, sizeof name, "iozone.tmp");
        int rc = bh_create(r, UBJ_ROOT_INO, name, &s->ino);
        if (rc < 0)
            return rc;
    }
    return bh_open(r, s->ino, s->tests[s->ti] == IZ_READ ||
                   s->tests[s->ti] == IZ_REREAD || s->tests[s->ti] == IZ_RANDREAD
                   ? 0 : 1);
}

/* iz_end -- after the last record: fsync, close; unlink after the last test. */
static int iz_end(struct bh_run *r, struct iz_state *s)
{
    enum iz_test t = s->tests[s->ti];
    bool wr = t == IZ_WRITE || t == IZ_REWRITE || t == IZ_RANDWRITE;
    int rc = wr && s->fsync ? bh_fsync(r, s->ino, 0) : 0;
    if (rc == 0)
        rc = bh_close(r, s->ino);
    s->k = 0;
    if (rc == 0 && ++s->ti == s->ntests) {
        rc = bh_unlink(r, UBJ_ROOT_INO, "iozone.tmp");
        s->ti = 0;
        s->ri++;
    }
    return rc;
}

/* iz_op -- one record. */
static int iz_op(struct bh_run *r, struct bh_proc *p)
{
    struct iz_state *s = bh_state(r);
    if (s->ri >= s->nrecs)
        return 1;
    int rc = s->k == 0 ? iz_begin(r, s) : 0;
    if (rc < 0)
        return rc;
    enum iz_test t = s->tests[s->ti];
    uint64_t idx = t == IZ_RANDREAD || t == IZ_RANDWRITE ? bh_below(p, s->nrec) : s->k;
    uint64_t off = idx * s->rec;
    if (t == IZ_WRITE || t == IZ_REWRITE || t == IZ_RANDWRITE) {
        rc = bh_write(r, s->ino, off, s->rec, s->rec, BH_OP_WRITE);
    } else {
        int64_t got = bh_read(r, s->ino, off, s->rec, s->rec);
        rc = got < 0 ? (int)got : 0;
    }
    if (rc == 0 && ++s->k == s->nrec)
        rc = iz_end(r, s);
    return rc;
}

/* iz_fini -- free the state. */
static void iz_fini(struct bh_run *r)
{
    free(bh_state(r));
    bh_set_state(r, NULL);
}

const struct bh_workload bh_wl_iozone = {
    .name = "iozone",
    .summary = "IOzone (Norcott): write/rewrite/read/reread/random read/write "
               "over record sizes 4 KiB .. 1 MiB",
    .default_procs = 1,
    .default_ops = 0,
    .init = iz_init,
    .op = iz_op,
    .fini = iz_fini,
    .serial = "one record stream: each transaction is the next record",
};
