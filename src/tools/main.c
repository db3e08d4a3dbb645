/*
 * main.c -- the `ubjfs` binary: the subcommand table and dispatch.
 *
 * `ubjfs CMD ARGS...` runs subcommand CMD with argv[0] set to "ubjfs CMD"
 * (so getopt's and our messages start with it).  Invoked as mkfs.ubjfs or
 * fsck.ubjfs (symlinks made by the build), the binary runs that
 * subcommand directly, like mke2fs/e2fsck.  `ubjfs IMAGE MOUNTPOINT [-o
 * OPTS]` -- the first operand no subcommand but an existing file -- is how
 * mount.fuse3 runs it (mount -t fuse.ubjfs, fstab): mount_helper.c.
 * `help`, `version` live here.
 */
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include "fs/format.h"
#include "tools.h"

static int main_help(int argc, char **argv);
static int main_version(int argc, char **argv);

static const struct tools_cmd main_cmds[] = {
    { "mkfs",    tools_mkfs_main,    "make a file system on an image file or device" },
    { "fsck",    tools_fsck_main,    "check (and with -y repair) an image" },
    { "cp",      tools_cp_main,      "copy files and trees into or out of an image" },
    { "ls",      tools_ls_main,      "list a directory of an image" },
    { "cat",     tools_cat_main,     "print files of an image" },
    { "stat",    tools_stat_main,    "print every attribute of a file in an image" },
    { "inspect", tools_inspect_main, "print the superblock, layout and allocation" },
    { "bench",   tools_bench_main,   "the headline experiment (bench; bench run; bench micro)" },
    { "crashtest", tools_crashtest_main, "explore crash states of workloads in each mode" },
    { "mount",   tools_mount_main,   "mount an image through FUSE (fusermount3 -u to end)" },
    { "version", main_version,       "print the version" },
    { "help",    main_help,          "list the subcommands, or help CMD" },
};
#define MAIN_NCMDS (sizeof main_cmds / sizeof main_cmds[0])

static char main_progbuf[64];

/* main_find -- the table entry named `name`, or NULL. */
static const struct tools_cmd *main_find(const char *name)
{
    for (size_t i = 0; i < MAIN_NCMDS; i++)
        if (strcmp(main_cmds[i].name, name) == 0)
            return &main_cmds[i];
    return NULL;
}

/* main_list -- the overall usage text. */
static void main_list(FILE *f)
{
    fprintf(f, "Usage: ubjfs COMMAND [ARGS...]\n\n"
               "ubjfs: a user-space crash-consistent file system (tools).\n"
               "Images are host files or block devices; a path inside an image\n"
               "is written IMAGE:/path.\n\nCommands:\n");
    for (size_t i = 0; i < MAIN_NCMDS; i++)
        fprintf(f, "  %-9s  %s\n", main_cmds[i].name, main_cmds[i].summary);
    fprintf(f, "\nRun 'ubjfs COMMAND --help' for a command's options.\n"
               "Also installed as mkfs.ubjfs and fsck.ubjfs.\n"
               "'ubjfs IMAGE MOUNTPOINT [-o OPT,...]' is 'ubjfs mount' as mount.fuse3\n"
               "runs it (mount -t fuse.ubjfs, /etc/fstab): -o mode=, nvm=,\n"
               "nvm_profile=, device=, stats=, cache_size=, commit_interval=,\n"
               "pid_file= are its options; mount(8)'s own are ignored.\n"
               "Exit status: 0 success, 1 error, 2 usage error "
               "(fsck: as e2fsck).\n");
}

/* main_set_prog -- tools_prog = "ubjfs CMD". */
static void main_set_prog(const char *cmd)
{
    snprintf(main_progbuf, sizeof main_progbuf, "ubjfs %s", cmd);
    tools_prog = main_progbuf;
}

/* main_help -- `ubjfs help [CMD]`. */
static int main_help(int argc, char **argv)
{
    if (argc < 2) {
        main_list(stdout);
        return TOOLS_EXIT_OK;
    }
    const struct tools_cmd *c = main_find(argv[1]);
    if (c == NULL) {
        tools_prog = "ubjfs";
        return tools_usage_err("unknown command '%s'", argv[1]);
    }
    main_set_prog(c->name);
    char *av[] = { main_progbuf, (char *)"--help", NULL };
    return c->run(2, av);
}

/* main_version -- `ubjfs version`. */
static int main_version(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        printf("Usage: ubjfs version\nPrint the tool and on-disk format "
               "versions.\nExit status: 0.\n");
        return TOOLS_EXIT_OK;
    }
    if (argc > 1)
        return tools_usage_err("unexpected argument '%s'", argv[1]);
    printf("ubjfs %s (on-disk format v%u, block size %u)\n", TOOLS_VERSION,
           UBJ_FORMAT_VERSION, UBJ_BS);
    return TOOLS_EXIT_OK;
}

/* main_base -- the last component of argv[0]. */
static const char *main_base(const char *a0)
{
    const char *s = strrchr(a0, '/');
    return s != NULL ? s + 1 : a0;
}

/* main -- dispatch on the program name, then on the first argument. */
/* main_has_o -- whether the arguments after the first two hold -o. */
static bool main_has_o(int argc, char **argv)
{
    for (int i = 3; i < argc; i++)
        if (strncmp(argv[i], "-o", 2) == 0)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    const char *base = main_base(argc > 0 ? argv[0] : "ubjfs");
    if (strcmp(base, "mkfs.ubjfs") == 0 || strcmp(base, "fsck.ubjfs") == 0) {
        tools_prog = base;
        argv[0] = (char *)base;
        return base[0] == 'm' ? tools_mkfs_main(argc, argv)
                              : tools_fsck_main(argc, argv);
    }
    tools_prog = "ubjfs";
    if (argc < 2) {
        main_list(stderr);
        return TOOLS_EXIT_USAGE;
    }
    const char *cmd = argv[1];
    if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0)
        cmd = "help";
    else if (strcmp(cmd, "--version") == 0 || strcmp(cmd, "-V") == 0)
        cmd = "version";
    const struct tools_cmd *c = main_find(cmd);
    struct stat st;
    /* mount.fuse3's form, `ubjfs IMAGE DIR [-o OPTS]`: an existing file, a
     * path, or -o given -- so a missing image gets the mount's error */
    if (c == NULL && argc >= 3 && cmd[0] != '-' &&
        (stat(cmd, &st) == 0 || strchr(cmd, '/') != NULL || main_has_o(argc, argv)))
        return tools_mount_helper_main(argc, argv);
    if (c == NULL)
        return tools_usage_err("unknown command '%s'", argv[1]);
    main_set_prog(c->name);
    argv[1] = main_progbuf;
    return c->run(argc - 1, argv + 1);
}
