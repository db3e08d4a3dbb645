/*
 * fz_case.c -- the fuzz input container: an image and its NVM region as
 * sparse 4096-byte pages (fz.h), to and from RAM devices and region files.
 */
#include "fz.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HDR_LEN 24u

static uint32_t get32(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

static void put32(uint8_t *p, uint32_t v)
{
    memcpy(p, &v, 4);
}

int fz_decode(const uint8_t *d, size_t n, struct fz_case *c)
{
    memset(c, 0, sizeof *c);
    if (n < HDR_LEN || memcmp(d, FZ_MAGIC, 8) != 0)
        return -EINVAL;
    c->nblocks = get32(d + 8);
    if (c->nblocks < FZ_MIN_BLOCKS)
        c->nblocks = FZ_MIN_BLOCKS;
    if (c->nblocks > FZ_MAX_BLOCKS)
        c->nblocks = FZ_MAX_BLOCKS;
    c->rpages = get32(d + 12);
    if (c->rpages > FZ_MAX_RPAGES)
        c->rpages = FZ_MAX_RPAGES;
    c->ops = get32(d + 16);
    c->img = calloc(c->nblocks, FZ_PAGE);
    c->reg = c->rpages ? calloc(c->rpages, FZ_PAGE) : NULL;
    if (c->img == NULL || (c->rpages && c->reg == NULL)) {
        fz_case_free(c);
        return -ENOMEM;
    }
    for (size_t p = HDR_LEN; p + 4 <= n; p += 4 + FZ_PAGE) {
        uint32_t w = get32(d + p);
        size_t len = n - p - 4 < FZ_PAGE ? n - p - 4 : FZ_PAGE;
        uint8_t *dst = NULL;
        if (w & FZ_REGION_BIT) {
            if ((w & ~FZ_REGION_BIT) < c->rpages)
                dst = c->reg + (size_t)(w & ~FZ_REGION_BIT) * FZ_PAGE;
        } else if (w < c->nblocks) {
            dst = c->img + (size_t)w * FZ_PAGE;
        }
        if (dst != NULL)
            memcpy(dst, d + p + 4, len);
    }
    return 0;
}

/* nonzero -- the page holds a non-zero byte. */
static int nonzero(const uint8_t *p)
{
    for (size_t i = 0; i < FZ_PAGE; i++)
        if (p[i])
            return 1;
    return 0;
}

/* put_page -- append one record; 0 if it does not fit. */
static size_t put_page(uint8_t *out, size_t at, size_t max, uint32_t w, const uint8_t *p)
{
    if (at + 4 + FZ_PAGE > max)
        return 0;
    put32(out + at, w);
    memcpy(out + at + 4, p, FZ_PAGE);
    return at + 4 + FZ_PAGE;
}

size_t fz_encode(const struct fz_case *c, uint8_t *out, size_t max)
{
    if (max < HDR_LEN)
        return 0;
    memcpy(out, FZ_MAGIC, 8);
    put32(out + 8, c->nblocks);
    put32(out + 12, c->rpages);
    put32(out + 16, c->ops);
    put32(out + 20, 0);
    size_t at = HDR_LEN;
    for (uint32_t b = 0; b < c->nblocks; b++)
        if (nonzero(c->img + (size_t)b * FZ_PAGE) &&
            (at = put_page(out, at, max, b, c->img + (size_t)b * FZ_PAGE)) == 0)
            return 0;
    for (uint32_t p = 0; p < c->rpages; p++)
        if (nonzero(c->reg + (size_t)p * FZ_PAGE) &&
            (at = put_page(out, at, max, FZ_REGION_BIT | p, c->reg + (size_t)p * FZ_PAGE)) == 0)
            return 0;
    return at;
}

void fz_case_free(struct fz_case *c)
{
    free(c->img);
    free(c->reg);
    c->img = c->reg = NULL;
}

int fz_case_dev(const struct fz_case *c, struct ubj_bdev **out)
{
    struct ubj_bdev *d;
    int rc = ubj_bdev_ram_create(c->nblocks, &d);
    if (rc < 0)
        return rc;
    rc = ubj_bdev_write(d, 0, c->nblocks, c->img);
    if (rc < 0) {
        ubj_bdev_destroy(d);
        return rc;
    }
    *out = d;
    return 0;
}

int fz_write_file(const char *path, const void *d, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        return -errno;
    const uint8_t *p = d;
    while (n > 0) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) {
            int e = w < 0 ? -errno : -EIO;
            close(fd);
            return e;
        }
        p += w;
        n -= (size_t)w;
    }
    return close(fd) < 0 ? -errno : 0;
}

int fz_read_file(const char *path, uint8_t **d, size_t *n)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return -errno;
    }
    uint8_t *buf = malloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (buf != NULL && got < (size_t)st.st_size) {
        ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    if (buf == NULL)
        return -ENOMEM;
    *d = buf;
    *n = got;
    return 0;
}

int fz_case_region(const struct fz_case *c, char *path, size_t len)
{
    static unsigned seq;
    path[0] = '\0';
    if (c->rpages == 0)
        return 0;
    const char *dir = access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp";
    if (getenv("TMPDIR") != NULL && access("/dev/shm", W_OK) != 0)
        dir = getenv("TMPDIR");
    snprintf(path, len, "%s/ubjfz-%d-%u.nvm", dir, (int)getpid(), seq++);
    int rc = fz_write_file(path, c->reg, (size_t)c->rpages * FZ_PAGE);
    if (rc < 0)
        path[0] = '\0';
    return rc;
}

void fz_region_drop(char *path)
{
    if (path[0] != '\0')
        unlink(path);
    path[0] = '\0';
}

int fz_case_take(struct ubj_bdev *dev, const char *region, uint32_t ops, struct fz_case *c)
{
    memset(c, 0, sizeof *c);
    c->nblocks = (uint32_t)dev->nblocks;
    c->ops = ops;
    if (c->nblocks > FZ_MAX_BLOCKS)
        return -EFBIG;
    c->img = malloc((size_t)c->nblocks * FZ_PAGE);
    if (c->img == NULL)
        return -ENOMEM;
    int rc = ubj_bdev_read(dev, 0, c->nblocks, c->img);
    if (rc == 0 && region != NULL) {
        uint8_t *d;
        size_t n;
        rc = fz_read_file(region, &d, &n);
        if (rc == 0) {
            c->rpages = (uint32_t)((n + FZ_PAGE - 1) / FZ_PAGE);
            if (c->rpages > FZ_MAX_RPAGES)
                rc = -EFBIG;
            else if ((c->reg = calloc(c->rpages, FZ_PAGE)) == NULL)
                rc = -ENOMEM;
            else
                memcpy(c->reg, d, n);
            free(d);
        }
    }
    if (rc < 0)
        fz_case_free(c);
    return rc;
}
