/*
 * model_ssd.c -- SATA SSD, NVMe SSD and eMMC: a latency-bandwidth model
 * with internal parallelism and a volatile write cache.
 *
 * Resources: `channels` internal units (dies/channels) and one host link.
 *  - read:  the request takes the earliest-free channel for read_lat
 *           (flash access), then the link for bytes / read_bw;
 *  - write: the link for bytes / write_bw, then the earliest-free channel
 *           for write_lat (acceptance into the device);
 *  so up to `channels` requests overlap their latency while transfers
 *  share the link.  A 4 KiB request alone costs lat + 4096 / bw, which is
 *  how the profiles derive lat from the data sheets' QD1 IOPS.
 *  Write cache: with write_cache = 1, written bytes stay dirty in a
 *  volatile cache of write_cache_mib; a write that overflows it waits for
 *  the overflow to drain at media_write_mb_s; a flush waits for every
 *  resource, then costs flush_us + dirty bytes / media_write_mb_s.
 *  Without a write cache a flush costs flush_us after the device drains.
 *  A FUA write with the cache on is written through: its bytes leave the
 *  cache at media_write_mb_s before it completes (and never count as
 *  dirty); without a cache FUA costs nothing extra.
 * Energy: read_w or write_w while the request extends the device's busy
 * time (the framework charges power_w x busy ns), idle_w otherwise.
 *
 * Invariants: ch_free[] and link_free are the times each resource is next
 * free; dirty <= cache bytes; requests are taken in arrival order.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "dev/model_int.h"
#include "util/util.h"

#define SSD_MAX_CHANNELS 1024

struct ssd_params {
    double read_lat_us, write_lat_us;
    double read_mb_s, write_mb_s;
    uint64_t channels;
    bool write_cache;
    double write_cache_mib, media_write_mb_s, flush_us;
    double read_w, write_w, idle_w;
};

struct ssd {
    struct ssd_params p;
    uint64_t *ch_free;      /* ns, per channel */
    uint64_t link_free;     /* ns */
    double dirty;           /* bytes in the volatile write cache */
    double cache_bytes;
};

#define SK(n, t, f, lo, hi) { n, t, offsetof(struct ssd_params, f), lo, hi }
static const struct prof_key ssd_keys[] = {
    SK("read_lat_us", PK_DOUBLE, read_lat_us, 0, 1e7),
    SK("write_lat_us", PK_DOUBLE, write_lat_us, 0, 1e7),
    SK("read_mb_s", PK_DOUBLE, read_mb_s, 1e-3, 1e9),
    SK("write_mb_s", PK_DOUBLE, write_mb_s, 1e-3, 1e9),
    SK("channels", PK_U64, channels, 1, SSD_MAX_CHANNELS),
    SK("write_cache", PK_BOOL, write_cache, 0, 1),
    SK("write_cache_mib", PK_DOUBLE, write_cache_mib, 0, 1e9),
    SK("media_write_mb_s", PK_DOUBLE, media_write_mb_s, 1e-3, 1e9),
    SK("flush_us", PK_DOUBLE, flush_us, 0, 1e9),
    SK("read_w", PK_DOUBLE, read_w, 0, 1e4),
    SK("write_w", PK_DOUBLE, write_w, 0, 1e4),
    SK("idle_w", PK_DOUBLE, idle_w, 0, 1e4),
    { NULL, PK_DOUBLE, 0, 0, 0 },
};

/* ssd_xfer_ns -- ns to move `bytes` at mb_s (1e6 bytes/s). */
static double ssd_xfer_ns(double bytes, double mb_s)
{
    return bytes * 1e3 / mb_s;
}

/* ssd_channel -- index of the earliest-free channel (lowest on ties). */
static size_t ssd_channel(const struct ssd *s)
{
    size_t best = 0;
    for (size_t i = 1; i < s->p.channels; i++)
        if (s->ch_free[i] < s->ch_free[best])
            best = i;
    return best;
}

/* ssd_all_free -- when every channel and the link are free. */
static uint64_t ssd_all_free(const struct ssd *s)
{
    uint64_t t = s->link_free;
    for (size_t i = 0; i < s->p.channels; i++)
        t = model_max(t, s->ch_free[i]);
    return t;
}

/* ssd_read -- channel latency, then the link. */
static void ssd_read(struct ssd *s, struct model_req *r, double bytes)
{
    size_t c = ssd_channel(s);
    r->t_start = model_max(r->t_arr, s->ch_free[c]);
    uint64_t flash_end = r->t_start + model_round_ns(s->p.read_lat_us * 1e3);
    s->ch_free[c] = flash_end;
    uint64_t link_start = model_max(flash_end, s->link_free);
    r->t_done = link_start + model_round_ns(ssd_xfer_ns(bytes, s->p.read_mb_s));
    s->link_free = r->t_done;
    r->power_w = s->p.read_w;
}

/* ssd_write -- the link, then channel latency; the cache may overflow. */
static void ssd_write(struct ssd *s, struct model_req *r, double bytes)
{
    r->t_start = model_max(r->t_arr, s->link_free);
    s->link_free = r->t_start + model_round_ns(ssd_xfer_ns(bytes, s->p.write_mb_s));
    size_t c = ssd_channel(s);
    uint64_t t = model_max(s->link_free, s->ch_free[c]) +
                 model_round_ns(s->p.write_lat_us * 1e3);
    if (s->p.write_cache && r->fua) {
        /* write-through: the bytes go on to the media before completion */
        t += model_round_ns(ssd_xfer_ns(bytes, s->p.media_write_mb_s));
    } else if (s->p.write_cache) {
        s->dirty += bytes;
        if (s->dirty > s->cache_bytes) {
            t += model_round_ns(ssd_xfer_ns(s->dirty - s->cache_bytes,
                                            s->p.media_write_mb_s));
            s->dirty = s->cache_bytes;
        }
    }
    s->ch_free[c] = t;
    r->t_done = t;
    r->power_w = s->p.write_w;
}

/* ssd_flush -- drain everything, then the flush's own cost. */
static void ssd_flush(struct ssd *s, struct model_req *r)
{
    r->t_start = model_max(r->t_arr, ssd_all_free(s));
    double ns = s->p.flush_us * 1e3;
    if (s->p.write_cache)
        ns += ssd_xfer_ns(s->dirty, s->p.media_write_mb_s);
    s->dirty = 0;
    r->t_done = r->t_start + model_round_ns(ns);
    s->link_free = r->t_done;
    for (size_t i = 0; i < s->p.channels; i++)
        s->ch_free[i] = r->t_done;
    r->power_w = s->p.write_w;
}

/* ssd_submit -- time one request. */
static int ssd_submit(void *impl, struct model_req *r, struct ubj_model_stats *st)
{
    struct ssd *s = impl;
    (void)st;
    double bytes = (double)r->count * UBJ_BLOCK_SIZE;
    if (r->op == MODEL_READ)
        ssd_read(s, r, bytes);
    else if (r->op == MODEL_WRITE)
        ssd_write(s, r, bytes);
    else
        ssd_flush(s, r);
    return 0;
}

/* ssd_idle_at -- when every resource is free. */
static uint64_t ssd_idle_at(void *impl)
{
    return ssd_all_free(impl);
}

/* ssd_destroy -- free the model. */
static void ssd_destroy(void *impl)
{
    struct ssd *s = impl;
    if (s != NULL)
        free(s->ch_free);
    free(s);
}

/* ssd_create -- parse the profile. */
static int ssd_create(const struct prof *pr, uint64_t nblocks, void **impl,
                      double *idle_w)
{
    (void)nblocks;
    struct ssd *s = calloc(1, sizeof *s);
    if (s == NULL)
        return ubj_set_error(-ENOMEM, "ssd model: out of memory");
    s->p = (struct ssd_params){
        .read_mb_s = 500, .write_mb_s = 500, .channels = 1,
        .media_write_mb_s = 500,
    };
    int rc = prof_apply(pr, "ssd", ssd_keys, &s->p, NULL);
    if (rc == 0) {
        s->ch_free = calloc(s->p.channels, sizeof *s->ch_free);
        if (s->ch_free == NULL)
            rc = ubj_set_error(-ENOMEM, "ssd model: out of memory");
    }
    if (rc < 0) {
        free(s);
        return rc;
    }
    s->cache_bytes = s->p.write_cache_mib * 1048576.0;
    *idle_w = s->p.idle_w;
    *impl = s;
    return 0;
}

/* ssd_read_cost -- ubj_model_read_cost: read_lat + k x 4096 / read_mb_s. */
static void ssd_read_cost(const void *impl, uint64_t gap, struct ubj_model_rcost *out)
{
    const struct ssd *s = impl;
    (void)gap;   /* no positioning */
    out->a_ns = s->p.read_lat_us * 1e3;
    out->b_ns = ssd_xfer_ns(UBJ_BLOCK_SIZE, s->p.read_mb_s);
    out->a_j = s->p.read_w * out->a_ns * 1e-9;
    out->b_j = s->p.read_w * out->b_ns * 1e-9;
}

const struct model_kind model_ssd_kind = {
    .name = "ssd",
    .create = ssd_create,
    .submit = ssd_submit,
    .idle_at = ssd_idle_at,
    .position = NULL,
    .slots = 0,
    .fill = NULL,
    .check = NULL,
    .destroy = ssd_destroy,
    .read_cost = ssd_read_cost,
};
