/*
 * pair.c -- pairing an NVM region with an image: a region belongs to one
 * image (its uuid, recorded at format) and has one layout; attaching it
 * to another, or with another layout, is refused before anything is
 * written.  What a mode does with a paired region (UBJ: refusing to
 * format one that holds committed blocks, recovering them) is the mode's
 * (src/txn/ubj_recovery.c).
 */
#include <errno.h>
#include <string.h>
#include "nvm/nvm_int.h"
#include "util/util.h"

/* ubj_nvm_uuid_text -- the usual text form of a uuid. */
void ubj_nvm_uuid_text(const uint8_t u[16], char out[37])
{
    static const char hex[] = "0123456789abcdef";
    char *p = out;
    for (int i = 0; i < 16; i++) {
        if (i == 4 || i == 6 || i == 8 || i == 10)
            *p++ = '-';
        *p++ = hex[u[i] >> 4];
        *p++ = hex[u[i] & 15];
    }
    *p = '\0';
}

/* ubj_nvm_pair_check -- refuse a region of another image or layout. */
int ubj_nvm_pair_check(struct ubj_nvm *r, uint64_t size, uint32_t nbufs,
                       const uint8_t uuid[16])
{
    const struct ubj_nvm_layout *l = ubj_nvm_get_layout(r);
    if (memcmp(ubj_nvm_uuid(r), uuid, 16) != 0) {
        char a[37], b[37];
        ubj_nvm_uuid_text(ubj_nvm_uuid(r), a);
        ubj_nvm_uuid_text(uuid, b);
        return ubj_set_error(-EINVAL, "nvm: %s belongs to another image "
                             "(uuid %s; this image is %s)", ubj_nvm_path(r), a, b);
    }
    if (nbufs != 0 && nbufs != l->nbufs)
        return ubj_set_error(-EINVAL, "nvm: %s has another layout: %u buffers, "
                             "not %u", ubj_nvm_path(r), l->nbufs, nbufs);
    if (size != 0 && size != l->size)
        return ubj_set_error(-EINVAL, "nvm: %s has another layout: %llu bytes, "
                             "not %llu", ubj_nvm_path(r),
                             (unsigned long long)l->size, (unsigned long long)size);
    return 0;
}

