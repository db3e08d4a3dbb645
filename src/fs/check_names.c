/*
 * check_names.c -- checker passes 2 to 4: directory entries and
 * reachability from the root, the orphan list and unreachable inodes, link
 * counts.  Leaks (ck_leak): an unreachable inode that names nothing (with
 * its blocks), a link count above the names; a name to a free inode, an
 * unreachable directory still holding names and a link count below the
 * names are corruption.
 * The passes and repairs as a whole: check.c.
 */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "fs/check_int.h"

/* ---- pass 2: directory entries ---------------------------------------------- */

/* ck_root_make -- a record for a new, empty root directory. */
static void ck_root_make(struct ck *ck)
{
    struct ck_ino *r = ck_find(ck, UBJ_ROOT_INO);
    if (!r) {
        if (!ck_grow(ck, (void **)&ck->recs, &ck->caprecs, ck->nrecs + 1,
                     sizeof *ck->recs))
            return;
        memmove(ck->recs + 1, ck->recs, ck->nrecs * sizeof *ck->recs);
        ck->nrecs++;
        for (size_t i = 0; i < ck->nclaims; i++)
            ck->claims[i].rec++;
        r = &ck->recs[0];
    }
    memset(r, 0, sizeof *r);
    r->ino = UBJ_ROOT_INO;
    r->mode = S_IFDIR | 0755;
    r->nlink = 2;
    r->parent = UBJ_ROOT_INO;
    r->pedge = CK_NONE;
    r->dist = CK_FAR;
    r->claim0 = ck->nclaims;
    r->flags = CK_NEWROOT | CK_RDIR;
}

/* ck_root -- the root must be an in-use directory. */
static void ck_root(struct ck *ck)
{
    struct ck_ino *r = ck_find(ck, UBJ_ROOT_INO);
    if (r && !(r->flags & CK_DEAD) && S_ISDIR(r->mode))
        return;
    if (r && !(r->flags & CK_DEAD)) {
        ck_kill(ck, r, "the root is not a directory");
    }
    ck_problem(ck, true, "root directory missing: make a new empty root (the "
               "rest of the tree becomes unreachable)");
    ck_root_make(ck);
}

/* ck_entry_check -- target in use, not the root or the directory itself,
 * type matching the inode. */
static void ck_entry_check(struct ck *ck, struct ck_ino *d, struct ck_edge *e)
{
    char shown[80];
    struct ck_ino *t = ck_live(ck, e->ino);
    const char *why = !t ? "which is free" : e->ino == UBJ_ROOT_INO ?
                      "the root directory" : e->ino == d->ino ? "the directory itself"
                      : NULL;
    if (why) {
        ck_problem(ck, true, "directory %llu: entry '%s' -> inode %llu, %s: remove it",
                   CK_LL(d->ino), ck_edge_name(ck, e, shown, sizeof shown),
                   CK_LL(e->ino), why);
        e->drop = 1;
        d->flags |= CK_RDIR;
        return;
    }
    unsigned dt = (t->mode & S_IFMT) >> 12;
    if (e->type != dt) {
        ck_problem(ck, true, "directory %llu: entry '%s' has type %u but inode %llu "
                   "is a %s: set the type from the inode", CK_LL(d->ino),
                   ck_edge_name(ck, e, shown, sizeof shown), e->type, CK_LL(e->ino),
                   ck_type_name(t->mode));
        e->type = (uint8_t)dt;
        d->flags |= CK_RDIR;
    }
}

/* ck_live_dir -- record index i if it is a live directory, else NULL. */
static struct ck_ino *ck_live_dir(struct ck *ck, size_t i)
{
    struct ck_ino *d = &ck->recs[i];
    return !(d->flags & CK_DEAD) && S_ISDIR(d->mode) ? d : NULL;
}

/* ck_distances -- breadth-first from the root over every entry kept so
 * far: each reachable directory's distance (in names) from the root. */
static void ck_distances(struct ck *ck)
{
    size_t *queue = malloc((ck->nrecs + 1) * sizeof *queue), qh = 0, qt = 0;
    struct ck_ino *root = ck_live(ck, UBJ_ROOT_INO);
    if (!queue) {
        ck_fatal(ck, "out of memory");
        return;
    }
    root->dist = 0;
    queue[qt++] = (size_t)(root - ck->recs);
    while (qh < qt) {
        struct ck_ino *d = &ck->recs[queue[qh++]];
        for (uint64_t k = 0; k < d->nedge; k++) {
            struct ck_edge *e = &ck->edges[d->edge0 + k];
            struct ck_ino *t = e->drop ? NULL : ck_live(ck, e->ino);
            if (t && S_ISDIR(t->mode) && t->dist == CK_FAR && qt < ck->nrecs) {
                t->dist = d->dist + 1;
                queue[qt++] = (size_t)(t - ck->recs);
            }
        }
    }
    free(queue);
}

/* ck_choose -- give each reachable directory one name, in a directory one
 * step closer to the root (so the names kept form a tree): the one its
 * '..' names if possible (round 0), else the first found (round 1). */
static void ck_choose(struct ck *ck, int round)
{
    for (size_t i = 0; i < ck->nrecs; i++) {
        struct ck_ino *d = ck_live_dir(ck, i);
        if (!d || d->dist == CK_FAR)
            continue;
        for (uint64_t k = 0; k < d->nedge; k++) {
            struct ck_edge *e = &ck->edges[d->edge0 + k];
            struct ck_ino *t = e->drop ? NULL : ck_live(ck, e->ino);
            if (!t || !S_ISDIR(t->mode) || t->pedge != CK_NONE ||
                t->dist != d->dist + 1 || (round == 0 && t->parent != d->ino))
                continue;
            t->pedge = d->edge0 + k;
            t->pdir = d->ino;
        }
    }
}

/* ck_extra_names -- in reachable directories, drop every name of a
 * directory but the one chosen. */
static void ck_extra_names(struct ck *ck)
{
    char shown[80];
    for (size_t i = 0; i < ck->nrecs; i++) {
        struct ck_ino *d = ck_live_dir(ck, i);
        if (!d || d->dist == CK_FAR)
            continue;
        for (uint64_t k = 0; k < d->nedge; k++) {
            struct ck_edge *e = &ck->edges[d->edge0 + k];
            struct ck_ino *t = e->drop ? NULL : ck_live(ck, e->ino);
            if (!t || !S_ISDIR(t->mode) || t->pedge == d->edge0 + k)
                continue;
            /* a leak class: R3's window of a directory moved by mode sync */
            ck_leak(ck, 0, 0, "directory %llu: entry '%s' is a second name of "
                       "directory %llu (named in %llu): remove it", CK_LL(d->ino),
                       ck_edge_name(ck, e, shown, sizeof shown), CK_LL(t->ino),
                       CK_LL(t->pdir));
            e->drop = 1;
            d->flags |= CK_RDIR;
        }
    }
}

/* ck_reach -- walk the names kept from the root: mark what is reachable,
 * count names (files) and subdirectories (directories). */
static void ck_reach(struct ck *ck)
{
    size_t *queue = malloc((ck->nrecs + 1) * sizeof *queue), qh = 0, qt = 0;
    struct ck_ino *root = ck_live(ck, UBJ_ROOT_INO);
    if (!queue) {
        ck_fatal(ck, "out of memory");
        return;
    }
    root->flags |= CK_REACHED;
    root->pdir = UBJ_ROOT_INO;
    queue[qt++] = (size_t)(root - ck->recs);
    while (qh < qt) {
        struct ck_ino *d = &ck->recs[queue[qh++]];
        for (uint64_t k = 0; k < d->nedge; k++) {
            struct ck_edge *e = &ck->edges[d->edge0 + k];
            struct ck_ino *t = e->drop ? NULL : ck_live(ck, e->ino);
            if (!t)
                continue;
            if (!S_ISDIR(t->mode)) {
                t->flags |= CK_REACHED;
                t->counted++;
            } else if (t->pedge == d->edge0 + k && !(t->flags & CK_REACHED) &&
                       qt < ck->nrecs) {
                t->flags |= CK_REACHED;
                d->counted++;
                queue[qt++] = (size_t)(t - ck->recs);
            }
        }
    }
    free(queue);
}

/* ck_parents -- '..' of every reachable directory. */
static void ck_parents(struct ck *ck)
{
    for (size_t i = 0; i < ck->nrecs; i++) {
        struct ck_ino *d = ck_live_dir(ck, i);
        if (!d || !(d->flags & CK_REACHED) || d->parent == d->pdir ||
            (d->flags & CK_NEWROOT))
            continue;
        /* a leak class: mode sync's rename of a directory leaves it for
         * the instant between its writes (docs/SYNC.md); nothing is lost */
        ck_leak(ck, 0, 0, "directory %llu: '..' is inode %llu, but its name is in "
                   "directory %llu: set '..' to it", CK_LL(d->ino), CK_LL(d->parent),
                   CK_LL(d->pdir));
        d->flags |= CK_XPARENT;
    }
}

/* ck_pass2 -- directory entries, names of directories, reachability. */
void ck_pass2(struct ck *ck)
{
    ck_root(ck);
    if (ck->fatal)
        return;
    for (size_t i = 0; i < ck->nrecs; i++) {
        struct ck_ino *d = ck_live_dir(ck, i);
        for (uint64_t k = 0; d && k < d->nedge; k++)
            ck_entry_check(ck, d, &ck->edges[d->edge0 + k]);
    }
    ck_distances(ck);
    if (ck->fatal)
        return;
    ck_choose(ck, 0);
    ck_choose(ck, 1);
    ck_extra_names(ck);
    ck_reach(ck);
    ck_parents(ck);
}

/* ---- pass 3: the orphan list, unreachable inodes ------------------------------ */

/* ck_orphan_walk -- follow the list from the superblock; mark members. */
static void ck_orphan_walk(struct ck *ck)
{
    uint64_t p = ck->sb.orphan_head;
    struct ck_ino *prev = NULL;
    while (p != 0) {
        struct ck_ino *r = p < ck->ni && p != UBJ_ROOT_INO ? ck_live(ck, p) : NULL;
        const char *why = !r ? "is not an in-use inode" : (r->flags & CK_ORPHAN) ?
                          "closes a loop" : r->nlink != 0 ? "has links" :
                          S_ISDIR(r->mode) && r->entries != 0 ?
                          "is a directory holding names" : NULL;
        if (why) {
            ck_problem(ck, true, "orphan list: inode %llu (after %s %llu) %s: cut the "
                       "list there", CK_LL(p), prev ? "inode" : "superblock",
                       CK_LL(prev ? prev->ino : 0), why);
            if (prev) {
                prev->flags |= CK_XONEXT;
            } else {
                ck->sb.orphan_head = 0;
                ck->sb_dirty = true;
            }
            return;
        }
        r->flags |= CK_ORPHAN;
        ck->orphans++;
        prev = r;
        p = r->onext;
    }
}

/* ck_unreachable -- report an in-use inode no name reaches: a leak (it
 * and its blocks) -- a directory that still holds names too: what only it
 * names is unreachable with it, each reported as its own leak (a mkdir
 * and a create inside it cut before the directory's name was written, as
 * mode sync allows: FFS's fsck reconnects such a tree to lost+found; v1
 * has none, so it is freed). */
static void ck_unreachable(struct ck *ck, const struct ck_ino *r)
{
    if (S_ISDIR(r->mode) && r->entries != 0)
        ck_leak(ck, r->blocks, 1, "directory %llu (%u links, %llu names) is not "
                "reachable from the root: free it and what only it names (v1 has no "
                "lost+found)", CK_LL(r->ino), r->nlink, CK_LL(r->entries));
    else
        ck_leak(ck, r->blocks, 1, "inode %llu (%s, %u links, %llu blocks) is not "
                "reachable from the root: free it (v1 has no lost+found)",
                CK_LL(r->ino), ck_type_name(r->mode), r->nlink, CK_LL(r->blocks));
}

/* ck_pass3 -- the orphan list; stray orphan links; unreachable inodes. */
void ck_pass3(struct ck *ck)
{
    ck_orphan_walk(ck);
    for (size_t i = 0; i < ck->nrecs; i++) {
        struct ck_ino *r = &ck->recs[i];
        if (r->flags & CK_DEAD)
            continue;
        if (!(r->flags & CK_ORPHAN) && r->onext != 0) {
            ck_problem(ck, true, "inode %llu: orphan link to %llu but not on the "
                       "orphan list: clear the link", CK_LL(r->ino), CK_LL(r->onext));
            r->flags |= CK_XONEXT;
        }
        if ((r->flags & CK_ORPHAN) && (r->flags & CK_REACHED)) {
            ck_problem(ck, true, "inode %llu is on the orphan list but has names: "
                       "take it off the list", CK_LL(r->ino));
            r->flags = (r->flags & ~CK_ORPHAN) | CK_XONEXT;
            ck->orphans--;
        }
        if (!(r->flags & (CK_REACHED | CK_ORPHAN))) {
            ck_unreachable(ck, r);
            r->flags |= CK_DEAD | CK_LATE;
            continue;
        }
        if ((r->flags & CK_NOTREE) && (r->flags & CK_REACHED)) {
            ck_problem(ck, true, "directory %llu has a name but no tree: give it an "
                       "empty one", CK_LL(r->ino));
            r->flags |= CK_RDIR;
        }
    }
}

/* ---- pass 4: link counts ---------------------------------------------------- */

/* ck_pass4 -- nlink of every reachable inode; orphans. */
void ck_pass4(struct ck *ck)
{
    for (size_t i = 0; i < ck->nrecs; i++) {
        struct ck_ino *r = &ck->recs[i];
        if ((r->flags & CK_DEAD) || !(r->flags & CK_REACHED))
            continue;
        uint32_t want = S_ISDIR(r->mode) ? 2 + r->counted : r->counted;
        r->counted = want;
        if (r->nlink > want) {   /* a name went, its count did not: a leak */
            ck_leak(ck, 0, 0, "inode %llu (%s): link count %u, should be %u",
                    CK_LL(r->ino), ck_type_name(r->mode), r->nlink, want);
            r->flags |= CK_XNLINK;
        } else if (r->nlink < want) {   /* fewer links than names: corruption */
            ck_problem(ck, true, "inode %llu (%s): link count %u, should be %u",
                       CK_LL(r->ino), ck_type_name(r->mode), r->nlink, want);
            r->flags |= CK_XNLINK;
        }
    }
    if (ck->repair && ck->sb.orphan_head != 0) {
        ck->sb.orphan_head = 0;   /* members are freed below or were taken off */
        ck->sb_dirty = true;
    }
    if (ck->orphans == 0)
        return;
    ck_note(ck, "%llu open-but-unlinked inode%s on the orphan list (the next mount "
            "frees them)%s", CK_LL(ck->orphans), ck->orphans == 1 ? "" : "s",
            ck->repair ? ": freeing them now" : "");
    if (!ck->repair)
        return;
    for (size_t i = 0; i < ck->nrecs; i++)
        if (ck->recs[i].flags & CK_ORPHAN)
            ck->recs[i].flags |= CK_DEAD | CK_LATE;
}
