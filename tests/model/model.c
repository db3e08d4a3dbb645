/*
 * model/model.c -- randomized model-based test of the whole file system
 * API against an in-memory reference model.
 *
 * The model is a tree of nodes (regular files with their bytes, FIFOs,
 * directories with their entries, symlinks with their targets), each with
 * mode bits, owner, and link count (directories: 2 + subdirectories),
 * plus a list of open handles (an unlinked file stays until its last
 * handle is released).  Each random operation is applied to the model
 * (which predicts Linux's result: return code and effect, including the
 * order in which Linux checks errors in rename(2) and link(2)) and to
 * ubjfs; the return codes must agree.  Every CMP_EVERY operations the
 * whole tree is compared (readdir listings with inode numbers and d_type,
 * "..", getattr type/mode/nlink/uid/gid/size, every file's bytes, every
 * symlink's target, open orphans, statfs's free inode count); every
 * REMOUNT_EVERY operations the file system is unmounted (closing every
 * handle) and mounted again and compared.  At the end the tree is
 * compared, fsck'd (UBJ_CHECK_CLEAN, no line), emptied, and statfs must
 * show every block and inode free again; fsck'd once more.
 *
 * Seeds: UBJ_MODEL_SEED=<n> runs that seed only; UBJ_MODEL_OPS=<n> sets
 * operations per seed.  A failure prints the seed, the operation number
 * and the operation.  Invariants of the model: nodes are never reused
 * (index = identity); a node with alive == 0 is gone from both the model
 * and (must be) from ubjfs.
 */
#include "testutil.h"

#include <time.h>

#define FS_BLOCKS 16384u          /* 64 MiB */
#define FS_INODES 4096u
#define MAX_NODES 400             /* bias towards removal above this */
#define MAX_FILE (1u << 20)       /* model file bytes, dense */
#define MAX_DATA (48u << 20)      /* all model file bytes */
#define CMP_EVERY 200
#define REMOUNT_EVERY 1000
#define DEFAULT_SEEDS 6
#define DEFAULT_OPS 12000

enum { M_REG = 1, M_DIR, M_LNK, M_FIFO };

struct ment {
    char *name;
    int node;
};

struct mnode {
    int type, alive;
    uint32_t perm, uid, gid, nlink;   /* nlink unused for dirs (computed) */
    ubj_ino_t ino;
    uint8_t *data;                    /* M_REG */
    size_t size;
    char *target;                     /* M_LNK */
    int parent;                       /* M_DIR */
    struct ment *ents;                /* M_DIR */
    size_t nents, capents;
    int open;                         /* handles */
};

struct model {
    struct mnode *n;
    size_t nn, capn;
    int *handles;                     /* node of each open handle */
    size_t nh, caph;
    size_t data_bytes;
    size_t nalive;
    struct ubj_statfs sf0;            /* right after mount of the new fs */
};

/* Run context for messages, and outcome counters (printed per seed). */
static struct {
    uint64_t seed;
    long opno;
    char op[512];
    long ok, err;
} mc;

#define MFAIL(...) do { \
    char m_msg_[512]; snprintf(m_msg_, sizeof m_msg_, __VA_ARGS__); \
    fail_msg("model seed %llu, op #%ld [%s]: %s", (unsigned long long)mc.seed, \
             mc.opno, mc.op, m_msg_); \
} while (0)
#define MCHECK(c, ...) do { if (!(c)) MFAIL(__VA_ARGS__); } while (0)
#define MRC(got, want) do { long long m_g_ = (long long)(got), \
    m_w_ = (long long)(want); if (m_g_ != m_w_) \
    MFAIL("rc %lld, model says %lld (%s)", m_g_, m_w_, ubj_errormsg()); \
    if (m_g_ < 0) mc.err++; else mc.ok++; \
} while (0)

/* ---- model primitives ------------------------------------------------ */

/* m_new -- a new node; returns its index. */
static int m_new(struct model *m, int type, uint32_t perm)
{
    if (m->nn == m->capn) {
        m->capn = m->capn ? m->capn * 2 : 256;
        m->n = realloc(m->n, m->capn * sizeof *m->n);
        assert_non_null(m->n);
    }
    struct mnode *x = &m->n[m->nn];
    memset(x, 0, sizeof *x);
    x->type = type;
    x->alive = 1;
    x->perm = perm;
    x->nlink = 1;
    m->nalive++;
    return (int)m->nn++;
}

/* m_free -- the node is gone. */
static void m_free(struct model *m, int i)
{
    struct mnode *x = &m->n[i];
    assert_true(x->alive);
    x->alive = 0;
    m->data_bytes -= x->size;
    free(x->data);
    x->data = NULL;
    x->size = 0;
    free(x->target);
    x->target = NULL;
    for (size_t k = 0; k < x->nents; k++)
        free(x->ents[k].name);
    free(x->ents);
    x->ents = NULL;
    x->nents = 0;
    m->nalive--;
}

/* m_find -- entry index of name in dir d, or -1. */
static long m_find(struct model *m, int d, const char *name)
{
    struct mnode *x = &m->n[d];
    for (size_t k = 0; k < x->nents; k++)
        if (strcmp(x->ents[k].name, name) == 0)
            return (long)k;
    return -1;
}

/* m_child -- node named name in d, or -1. */
static int m_child(struct model *m, int d, const char *name)
{
    long k = m_find(m, d, name);
    return k < 0 ? -1 : m->n[d].ents[k].node;
}

/* m_add -- add an entry. */
static void m_add(struct model *m, int d, const char *name, int node)
{
    struct mnode *x = &m->n[d];
    if (x->nents == x->capents) {
        x->capents = x->capents ? x->capents * 2 : 8;
        x->ents = realloc(x->ents, x->capents * sizeof *x->ents);
        assert_non_null(x->ents);
    }
    x->ents[x->nents].name = strdup(name);
    x->ents[x->nents].node = node;
    x->nents++;
}

/* m_del -- remove entry name from d (must exist). */
static void m_del(struct model *m, int d, const char *name)
{
    struct mnode *x = &m->n[d];
    long k = m_find(m, d, name);
    assert_true(k >= 0);
    free(x->ents[k].name);
    x->ents[k] = x->ents[--x->nents];
}

/* m_nlink -- link count as stat reports it. */
static uint32_t m_nlink(struct model *m, int i)
{
    struct mnode *x = &m->n[i];
    if (x->type != M_DIR)
        return x->nlink;
    uint32_t n = 2;
    for (size_t k = 0; k < x->nents; k++)
        n += m->n[x->ents[k].node].type == M_DIR;
    return n;
}

/* m_drop -- one link less; free at zero links and zero handles. */
static void m_drop(struct model *m, int i)
{
    struct mnode *x = &m->n[i];
    if (x->type == M_DIR) {
        x->nlink = 0;
        m_free(m, i);
        return;
    }
    x->nlink--;
    if (x->nlink == 0 && x->open == 0)
        m_free(m, i);
}

/* m_is_anc -- is dir a an ancestor of dir b, or b itself? */
static int m_is_anc(struct model *m, int a, int b)
{
    for (int guard = 0; guard < 100000; guard++) {
        if (b == a)
            return 1;
        if (m->n[b].parent == b)
            return 0;              /* the root */
        b = m->n[b].parent;
    }
    return 0;
}

/* m_close -- drop one handle of node i. */
static void m_close(struct model *m, size_t h)
{
    int i = m->handles[h];
    m->handles[h] = m->handles[--m->nh];
    struct mnode *x = &m->n[i];
    x->open--;
    if (x->open == 0 && x->nlink == 0)
        m_free(m, i);
}

/* ---- random choices --------------------------------------------------- */

static char longname255[256], longname256[257], midname[3][120];

/* pick_name -- a name from a small pool (so that names collide). */
static const char *pick_name(struct tprng *r, int allow_toolong)
{
    static const char *pool[] = { "a", "b", "c", "d", "e", "f", "g", "h",
                                  "i", "j", "kk", "ll" };
    uint64_t x = tprng_below(r, 100);
    if (x < 88)
        return pool[tprng_below(r, 12)];
    if (x < 97)
        return midname[tprng_below(r, 3)];
    if (x < 99 || !allow_toolong)
        return longname255;
    return longname256;
}

/* pick_entry -- most of the time an existing name of dir d, else a pool
 * name (which may or may not exist). */
static const char *pick_entry(struct model *m, struct tprng *r, int d, int allow_toolong)
{
    struct mnode *x = &m->n[d];
    if (x->nents && tprng_below(r, 10) < 6)
        return x->ents[tprng_below(r, x->nents)].name;
    return pick_name(r, allow_toolong);
}

/* pick_node -- a random alive node of type `type` (0 = any), or -1. */
static int pick_node(struct model *m, struct tprng *r, int type)
{
    for (int tries = 0; tries < 64; tries++) {
        int i = (int)tprng_below(r, m->nn);
        if (m->n[i].alive && (type == 0 || m->n[i].type == type))
            return i;
    }
    for (size_t i = 0; i < m->nn; i++)   /* fall back to a scan */
        if (m->n[i].alive && (type == 0 || m->n[i].type == type))
            return (int)i;
    return -1;
}

/* pick_dir -- a random directory (all alive directories are linked). */
static int pick_dir(struct model *m, struct tprng *r)
{
    return pick_node(m, r, M_DIR);
}

/* ---- comparison ------------------------------------------------------- */

static uint8_t rdbuf[MAX_FILE + 8192];

/* dt_of -- the DT_* of a model type. */
static unsigned dt_of(int type)
{
    return type == M_REG ? DT_REG : type == M_DIR ? DT_DIR
         : type == M_LNK ? DT_LNK : DT_FIFO;
}

/* ifmt_of -- the S_IF* of a model type. */
static uint32_t ifmt_of(int type)
{
    return type == M_REG ? S_IFREG : type == M_DIR ? S_IFDIR
         : type == M_LNK ? S_IFLNK : S_IFIFO;
}

/* cmp_node -- attributes and contents of node i. */
static void cmp_node(struct ubj_fs *fs, struct model *m, int i)
{
    struct mnode *x = &m->n[i];
    struct ubj_stat st;
    int rc = ubj_getattr(fs, x->ino, &st);
    MCHECK(rc == 0, "getattr(%llu) of node %d: %d", (unsigned long long)x->ino, i, rc);
    MCHECK(st.mode == (ifmt_of(x->type) | x->perm), "node %d ino %llu mode %o, model %o",
           i, (unsigned long long)x->ino, st.mode, ifmt_of(x->type) | x->perm);
    MCHECK(st.nlink == m_nlink(m, i), "node %d ino %llu nlink %u, model %u", i,
           (unsigned long long)x->ino, st.nlink, m_nlink(m, i));
    MCHECK(st.uid == x->uid && st.gid == x->gid, "node %d owner %u:%u, model %u:%u",
           i, st.uid, st.gid, x->uid, x->gid);
    if (x->type == M_REG) {
        MCHECK(st.size == x->size, "node %d ino %llu size %llu, model %zu", i,
               (unsigned long long)x->ino, (unsigned long long)st.size, x->size);
        ssize_t n = ubj_pread(fs, x->ino, rdbuf, x->size + 100, 0);
        MCHECK(n == (ssize_t)x->size, "node %d pread all: %zd, model %zu", i, n, x->size);
        if (x->size && memcmp(rdbuf, x->data, x->size) != 0) {
            size_t k = 0;
            while (rdbuf[k] == x->data[k])
                k++;
            MFAIL("node %d ino %llu: byte %zu is %02x, model %02x", i,
                  (unsigned long long)x->ino, k, rdbuf[k], x->data[k]);
        }
    } else if (x->type == M_LNK) {
        size_t len = strlen(x->target);
        MCHECK(st.size == len, "symlink node %d size %llu, model %zu", i,
               (unsigned long long)st.size, len);
        ssize_t n = ubj_readlink(fs, x->ino, (char *)rdbuf, 8192);
        MCHECK(n == (ssize_t)len && memcmp(rdbuf, x->target, len) == 0,
               "symlink node %d readlink %zd, model %zu", i, n, len);
    }
}

/* cmp_dir -- listing of dir d against the model, then recurse. */
static void cmp_dir(struct ubj_fs *fs, struct model *m, int d, size_t *seen)
{
    struct mnode *x = &m->n[d];
    cmp_node(fs, m, d);
    struct tdirent *v;
    size_t n;
    int rc = tdir_list(fs, x->ino, &v, &n);
    MCHECK(rc == 0, "readdir node %d: %d", d, rc);
    MCHECK(n == x->nents + 2, "dir node %d ino %llu lists %zu entries, model %zu", d,
           (unsigned long long)x->ino, n - 2, x->nents);
    MCHECK(strcmp(v[0].name, ".") == 0 && v[0].ino == x->ino, "dir node %d: bad '.'", d);
    MCHECK(strcmp(v[1].name, "..") == 0 && v[1].ino == m->n[x->parent].ino,
           "dir node %d: '..' is %llu, model %llu", d, (unsigned long long)v[1].ino,
           (unsigned long long)m->n[x->parent].ino);
    for (size_t k = 2; k < n; k++) {
        int c = m_child(m, d, v[k].name);
        MCHECK(c >= 0, "dir node %d lists '%.40s', not in the model", d, v[k].name);
        MCHECK(v[k].ino == m->n[c].ino, "entry '%.40s' ino %llu, model %llu", v[k].name,
               (unsigned long long)v[k].ino, (unsigned long long)m->n[c].ino);
        MCHECK(v[k].type == dt_of(m->n[c].type), "entry '%.40s' type %u", v[k].name,
               v[k].type);
        for (size_t j = 2; j < k; j++)
            MCHECK(strcmp(v[j].name, v[k].name) != 0, "'%.40s' listed twice", v[k].name);
    }
    free(v);
    (*seen)++;
    for (size_t k = 0; k < x->nents; k++) {
        int c = x->ents[k].node;
        if (m->n[c].type == M_DIR)
            cmp_dir(fs, m, c, seen);
        else
            cmp_node(fs, m, c);
        /* lookup agrees with the listing */
        struct ubj_stat st;
        rc = ubj_lookup(fs, x->ino, x->ents[k].name, &st);
        MCHECK(rc == 0 && st.ino == m->n[c].ino, "lookup '%.40s' in node %d: %d",
               x->ents[k].name, d, rc);
    }
}

/* cmp_all -- the whole tree, open orphans and statfs. */
static void cmp_all(struct ubj_fs *fs, struct model *m)
{
    size_t seen = 0;
    cmp_dir(fs, m, 0, &seen);
    for (size_t h = 0; h < m->nh; h++)
        cmp_node(fs, m, m->handles[h]);
    struct ubj_statfs sf;
    assert_ok(ubj_statfs_get(fs, &sf));
    MCHECK(sf.ffree == m->sf0.ffree - (m->nalive - 1), "statfs ffree %llu, model %llu",
           (unsigned long long)sf.ffree,
           (unsigned long long)(m->sf0.ffree - (m->nalive - 1)));
}

/* ---- operations ------------------------------------------------------- */

/* op_create -- create / mkdir / symlink / mknod fifo. */
static void op_create(struct ubj_fs *fs, struct model *m, struct tprng *r, int type)
{
    int d = pick_dir(m, r);
    const char *name = pick_name(r, 1);
    uint32_t perm = (uint32_t)tprng_below(r, 01000);
    struct mnode *dn = &m->n[d];
    char *target = NULL;
    if (type == M_LNK) {
        size_t len = tprng_below(r, 10) == 0 ? 1 + tprng_below(r, 4095)
                   : tprng_below(r, 200);     /* 0 = empty: ENOENT */
        target = malloc(len + 1);
        assert_non_null(target);
        for (size_t k = 0; k < len; k++)
            target[k] = (char)(1 + tprng_below(r, 255));
        target[len] = '\0';
        perm = 0777;
    }
    snprintf(mc.op, sizeof mc.op, "%s in node %d (ino %llu) name '%.60s'%s perm %o",
             type == M_REG ? "create" : type == M_DIR ? "mkdir"
             : type == M_LNK ? "symlink" : "mknod-fifo", d,
             (unsigned long long)dn->ino, name, strlen(name) > 60 ? "..." : "", perm);
    int want;
    if (type == M_LNK && target[0] == '\0')
        want = -ENOENT;
    else if (strlen(name) > 255)
        want = -ENAMETOOLONG;
    else if (m_find(m, d, name) >= 0)
        want = -EEXIST;
    else
        want = 0;
    struct ubj_stat st;
    struct ubj_cred cr = { (uint32_t)tprng_below(r, 3), (uint32_t)tprng_below(r, 3) };
    int rc;
    switch (type) {
    case M_REG: rc = ubj_create(fs, dn->ino, name, perm, &cr, &st); break;
    case M_DIR: rc = ubj_mkdir(fs, dn->ino, name, perm, &cr, &st); break;
    case M_LNK: rc = ubj_symlink(fs, target, dn->ino, name, &cr, &st); break;
    default: rc = ubj_mknod(fs, dn->ino, name, S_IFIFO | perm, 0, &cr, &st); break;
    }
    MRC(rc, want);
    if (rc != 0) {
        free(target);
        return;
    }
    int i = m_new(m, type, perm);
    struct mnode *x = &m->n[i];
    x->ino = st.ino;
    x->uid = cr.uid;
    x->gid = cr.gid;
    x->target = target;
    if (type == M_DIR)
        x->parent = d;
    m_add(m, d, name, i);
    MCHECK(st.mode == (ifmt_of(type) | perm) && st.nlink == m_nlink(m, i),
           "new node stat mode %o nlink %u", st.mode, st.nlink);
    for (size_t k = 0; k + 1 < m->nn; k++)
        MCHECK(!m->n[k].alive || m->n[k].ino != st.ino, "ino %llu reused while alive",
               (unsigned long long)st.ino);
}

/* op_link -- link(2), Linux's order: EEXIST before EPERM/ENOENT. */
static void op_link(struct ubj_fs *fs, struct model *m, struct tprng *r)
{
    int src = pick_node(m, r, 0);
    int d = pick_dir(m, r);
    const char *name = pick_name(r, 0);
    struct mnode *s = &m->n[src];
    snprintf(mc.op, sizeof mc.op, "link node %d (ino %llu, type %d, nlink %u) to node %d "
             "name '%.60s'", src, (unsigned long long)s->ino, s->type, m_nlink(m, src), d,
             name);
    int want;
    if (m_find(m, d, name) >= 0)
        want = -EEXIST;
    else if (s->type == M_DIR)
        want = -EPERM;
    else if (s->nlink == 0)
        want = -ENOENT;
    else
        want = 0;
    struct ubj_stat st;
    int rc = ubj_link(fs, s->ino, m->n[d].ino, name, &st);
    MRC(rc, want);
    if (rc == 0) {
        s->nlink++;
        m_add(m, d, name, src);
        MCHECK(st.ino == s->ino && st.nlink == s->nlink, "link stat ino %llu nlink %u",
               (unsigned long long)st.ino, st.nlink);
    }
}

/* op_unlink -- unlink(2). */
static void op_unlink(struct ubj_fs *fs, struct model *m, struct tprng *r)
{
    int d = pick_dir(m, r);
    const char *name = pick_entry(m, r, d, 1);
    snprintf(mc.op, sizeof mc.op, "unlink node %d name '%.60s'", d, name);
    int c = m_child(m, d, name);
    int want = strlen(name) > 255 ? -ENAMETOOLONG : c < 0 ? -ENOENT
             : m->n[c].type == M_DIR ? -EISDIR : 0;
    int rc = ubj_unlink(fs, m->n[d].ino, name);
    MRC(rc, want);
    if (rc == 0) {
        m_del(m, d, name);
        m_drop(m, c);
    }
}

/* op_rmdir -- rmdir(2). */
static void op_rmdir(struct ubj_fs *fs, struct model *m, struct tprng *r)
{
    int d = pick_dir(m, r);
    const char *name = pick_entry(m, r, d, 1);
    snprintf(mc.op, sizeof mc.op, "rmdir node %d name '%.60s'", d, name);
    int c = m_child(m, d, name);
    int want = strlen(name) > 255 ? -ENAMETOOLONG : c < 0 ? -ENOENT
             : m->n[c].type != M_DIR ? -ENOTDIR : m->n[c].nents ? -ENOTEMPTY : 0;
    int rc = ubj_rmdir(fs, m->n[d].ino, name);
    MRC(rc, want);
    if (rc == 0) {
        m_del(m, d, name);
        m_drop(m, c);
    }
}

/* rename_want -- Linux's answer for renameat2 (do_renameat2, vfs_rename,
 * may_delete, ext4_rename), in its order. */
static int rename_want(struct model *m, int od, const char *on, int nd,
                       const char *nn, unsigned flags)
{
    if (flags & ~(UBJ_RENAME_NOREPLACE | UBJ_RENAME_EXCHANGE))
        return -EINVAL;
    if ((flags & UBJ_RENAME_NOREPLACE) && (flags & UBJ_RENAME_EXCHANGE))
        return -EINVAL;
    int src = m_child(m, od, on), tgt = m_child(m, nd, nn);
    if (src < 0)
        return -ENOENT;
    if ((flags & UBJ_RENAME_NOREPLACE) && tgt >= 0)
        return -EEXIST;
    if ((flags & UBJ_RENAME_EXCHANGE) && tgt < 0)
        return -ENOENT;
    if (od != nd) {
        if (m->n[src].type == M_DIR && m_is_anc(m, src, nd))
            return -EINVAL;
        if (tgt >= 0 && m->n[tgt].type == M_DIR && m_is_anc(m, tgt, od))
            return (flags & UBJ_RENAME_EXCHANGE) ? -EINVAL : -ENOTEMPTY;
    }
    if (tgt == src)
        return 0;
    if (tgt >= 0 && !(flags & UBJ_RENAME_EXCHANGE)) {
        int sdir = m->n[src].type == M_DIR, tdir = m->n[tgt].type == M_DIR;
        if (sdir && !tdir)
            return -ENOTDIR;
        if (!sdir && tdir)
            return -EISDIR;
        if (tdir && m->n[tgt].nents)
            return -ENOTEMPTY;
    }
    return 0;
}

/* op_rename -- rename / renameat2 and the model's effect. */
static void op_rename(struct ubj_fs *fs, struct model *m, struct tprng *r)
{
    int od = pick_dir(m, r), nd = tprng_below(r, 3) ? pick_dir(m, r) : od;
    char on[256], nn[256];
    snprintf(on, sizeof on, "%s", pick_name(r, 0));
    snprintf(nn, sizeof nn, "%s", pick_name(r, 0));
    snprintf(on, sizeof on, "%s", pick_entry(m, r, od, 0));
    if (tprng_below(r, 3) == 0)       /* over an existing name, often */
        snprintf(nn, sizeof nn, "%s", pick_entry(m, r, nd, 0));
    unsigned flags = 0;
    uint64_t f = tprng_below(r, 100);
    if (f < 15)
        flags = UBJ_RENAME_NOREPLACE;
    else if (f < 30)
        flags = UBJ_RENAME_EXCHANGE;
    else if (f < 31)
        flags = UBJ_RENAME_NOREPLACE | UBJ_RENAME_EXCHANGE;
    snprintf(mc.op, sizeof mc.op, "rename node %d '%.50s' -> node %d '%.50s' flags %u",
             od, on, nd, nn, flags);
    int want = rename_want(m, od, on, nd, nn, flags);
    int rc = ubj_rename(fs, m->n[od].ino, on, m->n[nd].ino, nn, flags);
    MRC(rc, want);
    if (rc != 0)
        return;
    int src = m_child(m, od, on), tgt = m_child(m, nd, nn);
    if (src == tgt)
        return;
    if (flags & UBJ_RENAME_EXCHANGE) {
        m->n[od].ents[m_find(m, od, on)].node = tgt;
        m->n[nd].ents[m_find(m, nd, nn)].node = src;
        if (m->n[src].type == M_DIR)
            m->n[src].parent = nd;
        if (m->n[tgt].type == M_DIR)
            m->n[tgt].parent = od;
        return;
    }
    if (tgt >= 0) {
        m_del(m, nd, nn);
        m_drop(m, tgt);
    }
    m_del(m, od, on);
    m_add(m, nd, nn, src);
    if (m->n[src].type == M_DIR)
        m->n[src].parent = nd;
}

/* op_write -- pwrite at a random offset, sometimes past EOF. */
static void op_write(struct ubj_fs *fs, struct model *m, struct tprng *r)
{
    int i = pick_node(m, r, M_REG);
    if (i < 0)
        return;
    struct mnode *x = &m->n[i];
    size_t len = 1 + tprng_below(r, tprng_below(r, 4) ? 5000 : 40000);
    size_t off;
    uint64_t how = tprng_below(r, 10);
    if (how < 4)
        off = x->size;                                   /* append */
    else if (how < 8)
        off = tprng_below(r, x->size + 1);               /* overwrite */
    else
        off = x->size + tprng_below(r, 200000);          /* leave a hole */
    if (off + len > MAX_FILE || m->data_bytes + off + len > MAX_DATA + x->size) {
        off = tprng_below(r, x->size + 1);
        if (off + len > MAX_FILE)
            len = MAX_FILE - off;
        if (len == 0)
            return;
    }
    uint64_t seed = tprng_next(r);
    static uint8_t buf[40000];
    tpattern_fill(buf, len, seed, off);
    snprintf(mc.op, sizeof mc.op, "pwrite node %d ino %llu off %zu len %zu (size %zu)", i,
             (unsigned long long)x->ino, off, len, x->size);
    ssize_t n = ubj_pwrite(fs, x->ino, buf, len, (off_t)off);
    MRC(n, (long long)len);
    if (off + len > x->size) {
        x->data = realloc(x->data, off + len);
        assert_non_null(x->data);
        memset(x->data + x->size, 0, off + len - x->size);
        m->data_bytes += off + len - x->size;
        x->size = off + len;
    }
    memcpy(x->data + off, buf, len);
}

/* op_truncate -- setattr size. */
static void op_truncate(struct ubj_fs *fs, struct model *m, struct tprng *r)
{
    int i = pick_node(m, r, tprng_below(r, 20) ? M_REG : 0);
    if (i < 0)
        return;
    struct mnode *x = &m->n[i];
    size_t size = tprng_below(r, 3) == 0 ? 0 : tprng_below(r, x->size * 2 + 20000);
    if (size > MAX_FILE || m->data_bytes + size > MAX_DATA + x->size)
        size = x->size / 2;
    snprintf(mc.op, sizeof mc.op, "truncate node %d type %d ino %llu to %zu (size %zu)",
             i, x->type, (unsigned long long)x->ino, size, x->size);
    struct ubj_setattr sa = { .valid = UBJ_SET_SIZE, .size = size };
    struct ubj_stat st;
    int want = x->type == M_REG ? 0 : x->type == M_DIR ? -EISDIR : -EINVAL;
    int rc = ubj_setattr(fs, x->ino, &sa, &st);
    MRC(rc, want);
    if (rc != 0)
        return;
    MCHECK(st.size == size, "truncate stat size %llu", (unsigned long long)st.size);
    if (size > x->size) {
        x->data = realloc(x->data, size);
        assert_non_null(x->data);
        memset(x->data + x->size, 0, size - x->size);
    }
    m->data_bytes = m->data_bytes - x->size + size;
    x->size = size;
}

/* op_read -- pread a random range and compare. */
static void op_read(struct ubj_fs *fs, struct model *m, struct tprng *r)
{
    int i = pick_node(m, r, M_REG);
    if (i < 0)
        return;
    struct mnode *x = &m->n[i];
    size_t off = tprng_below(r, x->size + 5000), len = tprng_below(r, 70000);
    snprintf(mc.op, sizeof mc.op, "pread node %d ino %llu off %zu len %zu (size %zu)", i,
             (unsigned long long)x->ino, off, len, x->size);
    size_t want = off >= x->size ? 0 : (x->size - off < len ? x->size - off : len);
    ssize_t n = ubj_pread(fs, x->ino, rdbuf, len, (off_t)off);
    MRC(n, (long long)want);
    MCHECK(want == 0 || memcmp(rdbuf, x->data + off, want) == 0, "pread data differs");
}

/* op_setattr -- chmod / chown. */
static void op_setattr(struct ubj_fs *fs, struct model *m, struct tprng *r)
{
    int i = pick_node(m, r, 0);
    struct mnode *x = &m->n[i];
    struct ubj_setattr sa = { 0 };
    if (tprng_below(r, 2)) {
        sa.valid |= UBJ_SET_MODE;
        sa.mode = (uint32_t)tprng_below(r, 01000);
    }
    if (tprng_below(r, 3) == 0) {
        sa.valid |= UBJ_SET_UID | UBJ_SET_GID;
        sa.uid = (uint32_t)tprng_below(r, 5);
        sa.gid = (uint32_t)tprng_below(r, 5);
    }
    snprintf(mc.op, sizeof mc.op, "setattr node %d ino %llu valid %x mode %o uid %u",
             i, (unsigned long long)x->ino, sa.valid, sa.mode, sa.uid);
    struct ubj_stat st;
    MRC(ubj_setattr(fs, x->ino, &sa, &st), 0);
    if (sa.valid & UBJ_SET_MODE)
        x->perm = sa.mode;
    if (sa.valid & UBJ_SET_UID) {
        x->uid = sa.uid;
        x->gid = sa.gid;
    }
    MCHECK(st.mode == (ifmt_of(x->type) | x->perm), "setattr stat mode %o", st.mode);
}

/* op_open -- take a handle on a regular file. */
static void op_open(struct ubj_fs *fs, struct model *m, struct tprng *r)
{
    int i = pick_node(m, r, M_REG);
    if (i < 0 || m->nh >= 64)
        return;
    struct mnode *x = &m->n[i];
    snprintf(mc.op, sizeof mc.op, "open node %d ino %llu", i, (unsigned long long)x->ino);
    MRC(ubj_open(fs, x->ino, O_RDWR), 0);
    if (m->nh == m->caph) {
        m->caph = m->caph ? m->caph * 2 : 16;
        m->handles = realloc(m->handles, m->caph * sizeof *m->handles);
        assert_non_null(m->handles);
    }
    m->handles[m->nh++] = i;
    x->open++;
}

/* op_release -- drop a random handle. */
static void op_release(struct ubj_fs *fs, struct model *m, struct tprng *r)
{
    if (m->nh == 0)
        return;
    size_t h = tprng_below(r, m->nh);
    int i = m->handles[h];
    snprintf(mc.op, sizeof mc.op, "release node %d ino %llu (nlink %u, open %d)", i,
             (unsigned long long)m->n[i].ino, m->n[i].nlink, m->n[i].open);
    ubj_ino_t ino = m->n[i].ino;
    MRC(ubj_release(fs, ino), 0);
    m_close(m, h);
    if (!m->n[i].alive) {
        struct ubj_stat st;
        MRC(ubj_getattr(fs, ino, &st), -ENOENT);
    }
}

/* op_lookup -- lookup a name, compare the inode. */
static void op_lookup(struct ubj_fs *fs, struct model *m, struct tprng *r)
{
    int d = pick_dir(m, r);
    const char *name = pick_entry(m, r, d, 1);
    snprintf(mc.op, sizeof mc.op, "lookup node %d name '%.60s'", d, name);
    int c = m_child(m, d, name);
    struct ubj_stat st;
    int rc = ubj_lookup(fs, m->n[d].ino, name, &st);
    MRC(rc, strlen(name) > 255 ? -ENAMETOOLONG : c < 0 ? -ENOENT : 0);
    if (rc == 0)
        MCHECK(st.ino == m->n[c].ino, "lookup ino %llu, model %llu",
               (unsigned long long)st.ino, (unsigned long long)m->n[c].ino);
}

/* ---- driver ----------------------------------------------------------- */

/* Cache size of the mounts of this seed: even seeds use the minimum (64
 * buffers), so eviction and write-back run all the time. */
static uint32_t model_cache_blocks;

/* model_mount -- mount with this seed's cache size and no timer. */
static int model_mount(struct ubj_bdev *dev, struct ubj_fs **fs)
{
    struct ubj_config cfg = { .cache_blocks = model_cache_blocks,
                              .flags = UBJ_MOUNT_NO_TIMER };
    return ubj_mount(dev, &cfg, fs);
}

/* model_remount -- unmount closes every handle. */
static void model_remount(struct ubj_bdev *dev, struct ubj_fs **fs, struct model *m)
{
    snprintf(mc.op, sizeof mc.op, "remount");
    while (m->nh)
        m_close(m, m->nh - 1);
    int rc = ubj_unmount(*fs);
    *fs = NULL;
    MCHECK(rc == 0, "unmount: %d %s", rc, ubj_errormsg());
    rc = model_mount(dev, fs);
    MCHECK(rc == 0, "mount: %d %s", rc, ubj_errormsg());
}

/* model_check_image -- unmount, fsck must be clean, mount again. */
static void model_check_image(struct ubj_bdev *dev, struct ubj_fs **fs, struct model *m)
{
    while (m->nh)
        m_close(m, m->nh - 1);
    snprintf(mc.op, sizeof mc.op, "unmount + fsck");
    MCHECK(ubj_unmount(*fs) == 0, "unmount: %s", ubj_errormsg());
    *fs = NULL;
    int lines = -1;
    int rc = ubj_test_check(dev, 0, &lines);
    MCHECK(rc == UBJ_CHECK_CLEAN && lines == 0, "fsck %d with %d lines", rc, lines);
    MCHECK(model_mount(dev, fs) == 0, "mount: %s", ubj_errormsg());
}

/* model_empty -- remove the whole tree through the API. */
static void model_empty(struct ubj_fs *fs, struct model *m, int d)
{
    struct mnode *x = &m->n[d];
    while (x->nents) {
        struct ment e = x->ents[x->nents - 1];
        char *name = strdup(e.name);
        snprintf(mc.op, sizeof mc.op, "cleanup node %d '%.60s'", d, name);
        if (m->n[e.node].type == M_DIR) {
            model_empty(fs, m, e.node);
            x = &m->n[d];
            MRC(ubj_rmdir(fs, x->ino, name), 0);
        } else {
            MRC(ubj_unlink(fs, x->ino, name), 0);
        }
        m_del(m, d, name);
        m_drop(m, e.node);
        x = &m->n[d];
        free(name);
    }
}

/* model_run -- one seed. */
static void model_run(uint64_t seed, long ops)
{
    struct tprng r;
    tprng_seed(&r, seed);
    mc.seed = seed;
    mc.opno = 0;
    snprintf(mc.op, sizeof mc.op, "setup");
    struct ubj_bdev *dev;
    struct ubj_fs *fs;
    model_cache_blocks = seed % 2 ? 0 : 64;
    ubj_test_fs_new_inodes(FS_BLOCKS, FS_INODES, &dev, &fs);
    assert_ok(ubj_unmount(fs));
    assert_ok(model_mount(dev, &fs));
    struct model m = { 0 };
    int root = m_new(&m, M_DIR, 0755);
    struct ubj_stat st;
    assert_ok(ubj_getattr(fs, UBJ_ROOT_INO, &st));
    m.n[root].ino = UBJ_ROOT_INO;
    m.n[root].perm = st.mode & 07777;
    m.n[root].parent = root;
    assert_ok(ubj_statfs_get(fs, &m.sf0));
    for (mc.opno = 1; mc.opno <= ops; mc.opno++) {
        uint64_t w = tprng_below(&r, 120);
        int crowded = m.nalive > MAX_NODES;
        if (crowded && w < 30)
            w = 40 + w % 20;                       /* unlink / rmdir instead */
        if (w < 12)       op_create(fs, &m, &r, M_REG);
        else if (w < 18)  op_create(fs, &m, &r, M_DIR);
        else if (w < 22)  op_create(fs, &m, &r, M_LNK);
        else if (w < 24)  op_create(fs, &m, &r, M_FIFO);
        else if (w < 30)  op_link(fs, &m, &r);
        else if (w < 40)  op_rename(fs, &m, &r);
        else if (w < 52)  op_unlink(fs, &m, &r);
        else if (w < 60)  op_rmdir(fs, &m, &r);
        else if (w < 80)  op_write(fs, &m, &r);
        else if (w < 86)  op_truncate(fs, &m, &r);
        else if (w < 94)  op_read(fs, &m, &r);
        else if (w < 99)  op_setattr(fs, &m, &r);
        else if (w < 104) op_open(fs, &m, &r);
        else if (w < 109) op_release(fs, &m, &r);
        else if (w < 116) op_lookup(fs, &m, &r);
        else {
            int i = pick_node(&m, &r, 0);
            snprintf(mc.op, sizeof mc.op, "fsync node %d", i);
            MRC(ubj_fsync(fs, m.n[i].ino, (int)tprng_below(&r, 2)), 0);
        }
        if (mc.opno % CMP_EVERY == 0) {
            snprintf(mc.op, sizeof mc.op, "compare");
            cmp_all(fs, &m);
        }
        if (mc.opno % REMOUNT_EVERY == 0) {
            if (mc.opno % (2 * REMOUNT_EVERY) == 0)
                model_check_image(dev, &fs, &m);   /* unmount, fsck, mount */
            else
                model_remount(dev, &fs, &m);
            snprintf(mc.op, sizeof mc.op, "compare after remount");
            cmp_all(fs, &m);
        }
    }
    fprintf(stderr, "model: seed %llu: %zu nodes alive, %zu data bytes at the end, "
            "cache %u\n", (unsigned long long)seed, m.nalive, m.data_bytes,
            model_cache_blocks);
    mc.opno = ops + 1;
    snprintf(mc.op, sizeof mc.op, "final compare");
    cmp_all(fs, &m);
    model_check_image(dev, &fs, &m);
    snprintf(mc.op, sizeof mc.op, "final compare after fsck");
    cmp_all(fs, &m);
    model_empty(fs, &m, root);
    struct ubj_statfs sf;
    assert_ok(ubj_statfs_get(fs, &sf));
    snprintf(mc.op, sizeof mc.op, "empty statfs");
    MCHECK(sf.ffree == m.sf0.ffree && sf.bfree == m.sf0.bfree,
           "after removing everything: bfree %llu ffree %llu, at mkfs %llu %llu",
           (unsigned long long)sf.bfree, (unsigned long long)sf.ffree,
           (unsigned long long)m.sf0.bfree, (unsigned long long)m.sf0.ffree);
    int rc = ubj_unmount(fs);
    MCHECK(rc == 0, "final unmount %d", rc);
    int lines = -1;
    rc = ubj_test_check(dev, 0, &lines);
    MCHECK(rc == UBJ_CHECK_CLEAN && lines == 0, "final fsck %d with %d lines", rc, lines);
    ubj_bdev_destroy(dev);
    for (size_t i = 0; i < m.nn; i++)
        if (m.n[i].alive)
            m_free(&m, (int)i);
    free(m.n);
    free(m.handles);
}

/* test_model -- every seed (or UBJ_MODEL_SEED). */
static void test_model(void **state)
{
    (void)state;
    memset(longname255, 'L', 255);
    memset(longname256, 'T', 256);
    for (int k = 0; k < 3; k++) {
        memset(midname[k], 'm', 100);
        midname[k][100] = (char)('0' + k);
        midname[k][101] = '\0';
    }
    long ops = (long)tprng_env_seed("UBJ_MODEL_OPS", DEFAULT_OPS);
    const char *one = getenv("UBJ_MODEL_SEED");
    uint64_t first = tprng_env_seed("UBJ_MODEL_SEED", 1);
    int nseeds = one && *one ? 1 : DEFAULT_SEEDS;
    for (int s = 0; s < nseeds; s++) {
        uint64_t seed = first + (uint64_t)s;
        struct timespec a, b;
        mc.ok = mc.err = 0;
        clock_gettime(CLOCK_MONOTONIC, &a);
        model_run(seed, ops);
        clock_gettime(CLOCK_MONOTONIC, &b);
        fprintf(stderr, "model: seed %llu, %ld ops (%ld succeeded, %ld errors "
                "as predicted): ok (%.2f s)\n", (unsigned long long)seed, ops,
                mc.ok, mc.err,
                (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9);
    }
}

/* main -- run this suite's tests. */
int main(void)
{
    const struct CMUnitTest tests[] = { cmocka_unit_test(test_model) };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
