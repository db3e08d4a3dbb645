/*
 * mount_helper.c -- `ubjfs IMAGE MOUNTPOINT [-o OPT[,OPT...]]`: the form in
 * which mount.fuse3 runs a FUSE file system's program, for `mount -t
 * fuse.ubjfs IMAGE DIR` and an /etc/fstab line of type fuse.ubjfs.
 *
 * mount(8) runs /sbin/mount.fuse3 (no helper of ubjfs's own is needed);
 * mount.fuse3 takes out what is only mount(8)'s (auto, noauto, user,
 * users, nouser, nofail, _netdev, setuid=, drop_privileges), adds `dev,suid`
 * as root unless nodev/nosuid is given, and runs `ubjfs IMAGE DIR -o
 * rw,...` through /bin/sh with no PATH of its caller (sh's default:
 * /usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin).  This
 * file turns that into `ubjfs mount`: what is mount(8)'s alone or only a
 * comment (defaults, x-*, comment=, and the above, for a direct call) is
 * dropped, and the rest stays in -o (ubjfs mount's own -o options, which
 * include mode=, nvm=, ... for its options with a value, and libfuse's).
 */
#include <stdlib.h>
#include <string.h>
#include "tools.h"

/* -o options that are mount(8)'s or comments: dropped (KEY or KEY=...) */
static const char *const helper_dropped[] = {
    "defaults", "auto", "noauto", "user", "users", "nouser", "owner",
    "group", "nofail", "_netdev", "comment", "setuid", "drop_privileges",
};

#define HELPER_N(a) (sizeof a / sizeof a[0])

/* helper_keyis -- does option `o` (KEY or KEY=VALUE) have key `k`? */
static bool helper_keyis(const char *o, const char *k)
{
    size_t kl = strlen(k);
    return strncmp(o, k, kl) == 0 && (o[kl] == '\0' || o[kl] == '=');
}

/* helper_take -- one -o option: appended to `rest` (ubjfs mount's -o,
 * which takes mode=, nvm=, ... as its options with a value) or dropped. */
static void helper_take(const char *o, char *rest)
{
    for (size_t i = 0; i < HELPER_N(helper_dropped); i++)
        if (helper_keyis(o, helper_dropped[i]))
            return;
    if (strncmp(o, "x-", 2) == 0 || o[0] == '\0')
        return;
    if (rest[0] != '\0')
        strcat(rest, ",");
    strcat(rest, o);
}

/* tools_mount_helper_main -- `ubjfs IMAGE MOUNTPOINT [-o OPTS]...`
 * (argv[0] "ubjfs"): builds the `ubjfs mount` command line and runs it.
 * The -o lists are split in place (argv's strings are ours to change). */
int tools_mount_helper_main(int argc, char **argv)
{
    size_t total = 1;
    for (int i = 3; i < argc; i++)
        total += strlen(argv[i]) + 1;
    /* the program, -f/-d, -o REST, --, IMAGE, DIR */
    char **av = calloc((size_t)argc * 2 + 8 + total, sizeof *av);
    char *rest = malloc(total);
    int ret = TOOLS_EXIT_ERR, ac = 0;
    if (av == NULL || rest == NULL) {
        tools_err("out of memory");
        goto out;
    }
    rest[0] = '\0';
    tools_prog = "ubjfs mount";
    if (strncmp(argv[2], "/dev/fd/", 8) == 0) {
        /* mount.fuse3 -o drop_privileges: it has mounted /dev/fuse with its
         * own options (not ours: default_permissions) */
        tools_err("%s: -o drop_privileges is not supported (umount the mount "
                  "point mount.fuse3 left)", argv[2]);
        goto out;
    }
    av[ac++] = (char *)tools_prog;
    for (int i = 3; i < argc; i++) {
        char *list;
        if (strcmp(argv[i], "-o") == 0 && i + 1 < argc) {
            list = argv[++i];
        } else if (strncmp(argv[i], "-o", 2) == 0 && argv[i][2] != '\0') {
            list = argv[i] + 2;
        } else if (strcmp(argv[i], "-f") == 0 || strcmp(argv[i], "-d") == 0) {
            av[ac++] = argv[i];        /* as other FUSE programs take them */
            continue;
        } else {
            ret = tools_usage_err("unexpected '%s' after IMAGE MOUNTPOINT (only -o "
                                  "OPT[,OPT...], -f, -d)", argv[i]);
            goto out;
        }
        for (char *save = NULL, *o = strtok_r(list, ",", &save); o != NULL;
             o = strtok_r(NULL, ",", &save))
            helper_take(o, rest);
    }
    if (rest[0] != '\0') {
        av[ac++] = (char *)"-o";
        av[ac++] = rest;
    }
    av[ac++] = (char *)"--";
    av[ac++] = argv[1];
    av[ac++] = argv[2];
    av[ac] = NULL;
    ret = tools_mount_main(ac, av);
out:
    free(av);
    free(rest);
    return ret;
}
