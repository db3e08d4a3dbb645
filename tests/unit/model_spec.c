/*
 * tests/unit/model_spec.c -- profiles (src/dev/profile.c) and device
 * stacks from spec strings (src/dev/spec.c).
 *
 * Profiles: the compiled-in texts equal the files in profiles/ (found via
 * $UBJ_SRC, which CTest sets, else from this file's path); every
 * parameter line there carries a source comment; every profile builds a
 * device; $UBJ_PROFILE_DIR overrides and adds profiles; a profile given
 * by path.  Specs: leaves, wrappers, a shared clock, clock=real, errors,
 * and that a failed open leaves the caller's lower device intact.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "testutil.h"   /* t_tmpfile */
#include "dev/model_int.h"
#include "ubjfs/ubjfs.h"

static unsigned char buf[UBJ_BLOCK_SIZE];

/* src_dir -- the source tree: $UBJ_SRC or derived from __FILE__. */
static const char *src_dir(void)
{
    static char dir[512];
    const char *env = getenv("UBJ_SRC");
    if (env != NULL && *env != '\0')
        return env;
    snprintf(dir, sizeof dir, "%s", __FILE__);
    char *p = strstr(dir, "/tests/unit/");
    if (p == NULL)
        return ".";
    *p = '\0';
    return dir;
}

/* read_text -- a whole file (malloc'd), NULL if unreadable. */
static char *read_text(const char *path)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return NULL;
    static char tmp[1 << 16];
    size_t n = fread(tmp, 1, sizeof tmp - 1, f);
    fclose(f);
    tmp[n] = '\0';
    return strdup(tmp);
}

/* test_builtin_matches_files -- profiles/KIND_NAME.txt == built-in text,
 * and every file there is built in. */
static void test_builtin_matches_files(void **state)
{
    (void)state;
    char path[1024];
    size_t n = 0;
    for (const char *name; (name = prof_builtin_name(n)) != NULL; n++) {
        snprintf(path, sizeof path, "%s/profiles/%s.txt", src_dir(), name);
        char *text = read_text(path);
        if (text == NULL)
            fail_msg("cannot read %s", path);
        char kind[32];
        const char *us = strchr(name, '_');
        snprintf(kind, sizeof kind, "%.*s", (int)(us - name), name);
        const char *b = prof_builtin_text(kind, us + 1);
        assert_non_null(b);
        if (strcmp(text, b) != 0)
            fail_msg("%s differs from the built-in copy: regenerate profile.c", path);
        free(text);
    }
    assert_true(n >= 10);
    snprintf(path, sizeof path, "%s/profiles", src_dir());
    DIR *dir = opendir(path);
    assert_non_null(dir);
    size_t files = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;)
        if (strstr(e->d_name, ".txt") != NULL)
            files++;
    closedir(dir);
    assert_int_equal(files, n);
}

/* test_every_parameter_has_a_source -- each "key = value" line of each
 * profile has a comment of a few words after it. */
static void test_every_parameter_has_a_source(void **state)
{
    (void)state;
    for (size_t i = 0; prof_builtin_name(i) != NULL; i++) {
        const char *name = prof_builtin_name(i), *us = strchr(name, '_');
        char kind[32];
        snprintf(kind, sizeof kind, "%.*s", (int)(us - name), name);
        char *text = strdup(prof_builtin_text(kind, us + 1));
        unsigned line = 0;
        for (char *s = strtok(text, "\n"); s != NULL; s = strtok(NULL, "\n")) {
            line++;
            while (*s == ' ')
                s++;
            if (*s == '#' || *s == '\0')
                continue;
            char *hash = strchr(s, '#');
            bool named = strncmp(s, "kind", 4) == 0 || strncmp(s, "name", 4) == 0;
            if (!named && (hash == NULL || strlen(hash) < 6))
                fail_msg("%s: parameter line \"%s\" has no source comment", name, s);
        }
        free(text);
    }
}

/* test_every_profile_builds -- each profile makes a working device. */
static void test_every_profile_builds(void **state)
{
    (void)state;
    for (size_t i = 0; prof_builtin_name(i) != NULL; i++) {
        const char *name = prof_builtin_name(i), *us = strchr(name, '_');
        char kind[32];
        snprintf(kind, sizeof kind, "%.*s", (int)(us - name), name);
        if (strcmp(kind, "nvm") == 0) {
            struct ubj_nvm_model *m;
            assert_int_equal(ubj_nvm_model_create(us + 1, NULL, &m), 0);
            assert_true(ubj_nvm_model_flush_lines(m, 1) > 0);
            ubj_nvm_model_destroy(m);
            continue;
        }
        struct ubj_bdev *ram, *d;
        assert_int_equal(ubj_bdev_ram_create(4096, &ram), 0);
        int rc = ubj_model_create(kind, us + 1, NULL, ram, &d);
        if (rc != 0)
            fail_msg("%s: %d %s", name, rc, ubj_errormsg());
        assert_int_equal(ubj_bdev_write(d, 10, 1, buf), 0);
        assert_int_equal(ubj_bdev_read(d, 10, 1, buf), 0);
        assert_int_equal(ubj_bdev_flush(d), 0);
        struct ubj_model_stats st;
        assert_int_equal(ubj_model_stats_get(d, &st), 0);
        assert_true(st.service_ns > 0 && st.energy_j > 0);
        ubj_bdev_destroy(d);
    }
}

/* write_file -- create path with text. */
static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* read_cost -- ns of reading a written block on a nand:<profile> model. */
static uint64_t read_cost(const char *profile)
{
    struct ubj_bdev *ram, *d;
    assert_int_equal(ubj_bdev_ram_create(64, &ram), 0);
    int rc = ubj_model_create("nand", profile, NULL, ram, &d);
    if (rc != 0)
        fail_msg("nand %s: %d %s", profile, rc, ubj_errormsg());
    assert_int_equal(ubj_bdev_write(d, 1, 1, buf), 0);
    assert_int_equal(ubj_model_stats_reset(d), 0);
    assert_int_equal(ubj_bdev_read(d, 1, 1, buf), 0);
    struct ubj_model_stats st;
    assert_int_equal(ubj_model_stats_get(d, &st), 0);
    ubj_bdev_destroy(d);
    return st.service_ns;
}

/* test_profile_dir -- $UBJ_PROFILE_DIR overrides a built-in and adds a
 * new profile; a profile can also be named by path. */
static void test_profile_dir(void **state)
{
    (void)state;
    char dir[] = "/tmp/ubj-prof-XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    char *text = strdup(prof_builtin_text("nand", "slc"));
    char *tr = strstr(text, "t_r_us = 25 ");
    assert_non_null(tr);
    memcpy(tr, "t_r_us = 99 ", 12);
    snprintf(path, sizeof path, "%s/nand_slc.txt", dir);
    write_file(path, text);
    snprintf(path, sizeof path, "%s/nand_custom.txt", dir);
    write_file(path, text);
    free(text);

    assert_int_equal(read_cost("slc"), 322960);           /* built-in */
    assert_int_equal(setenv("UBJ_PROFILE_DIR", dir, 1), 0);
    assert_int_equal(read_cost("slc"), 322960 + 2 * 74000);
    assert_int_equal(read_cost("custom,t_r_us=25"), 322960);
    assert_int_equal(read_cost("mlc") > 0, 1);           /* falls back */
    assert_int_equal(unsetenv("UBJ_PROFILE_DIR"), 0);
    assert_int_equal(read_cost(path), 322960 + 2 * 74000);   /* by path */

    struct ubj_bdev *ram, *d;
    assert_int_equal(ubj_bdev_ram_create(64, &ram), 0);
    assert_int_equal(ubj_model_create("nand", "custom", NULL, ram, &d), -ENOENT);
    write_file(path, "kind = ssd\n");
    assert_int_equal(ubj_model_create("nand", path, NULL, ram, &d), -EINVAL);
    write_file(path, "t_r_us 25\n");
    assert_int_equal(ubj_model_create("nand", path, NULL, ram, &d), -EINVAL);
    assert_non_null(strstr(ubj_errormsg(), ":1"));
    ubj_bdev_destroy(ram);
    unlink(path);
    snprintf(path, sizeof path, "%s/nand_slc.txt", dir);
    unlink(path);
    rmdir(dir);
}

/* open_ok -- ubj_bdev_open_spec must succeed. */
static struct ubj_bdev *open_ok(const char *spec, struct ubj_bdev *lower,
                                const struct ubj_spec_opts *o)
{
    struct ubj_bdev *d;
    int rc = ubj_bdev_open_spec(spec, lower, o, &d);
    if (rc != 0)
        fail_msg("open_spec(%s) = %d: %s", spec, rc, ubj_errormsg());
    return d;
}

/* test_specs -- leaves, wrappers, a shared clock, clock=real, files. */
static void test_specs(void **state)
{
    (void)state;
    struct ubj_bdev *d = open_ok("ram", NULL, NULL);
    assert_false(ubj_model_is_model(d));
    assert_int_equal(d->nblocks, 16384);
    ubj_bdev_destroy(d);

    d = open_ok("hdd:hp_c2249a", NULL, NULL);
    assert_true(ubj_model_is_model(d));
    assert_string_equal(d->ops->name, "hdd");
    assert_int_equal(ubj_clock_kind(ubj_model_clock(d)), UBJ_CLOCK_VIRTUAL);
    ubj_bdev_destroy(d);

    struct ubj_spec_opts o = { .nblocks = 512 };
    d = open_ok("nand:slc,op_pct=10@fault@ram", NULL, &o);
    assert_string_equal(d->ops->name, "nand");
    assert_string_equal(d->lower->ops->name, "fault");
    assert_string_equal(d->lower->lower->ops->name, "ram");
    assert_int_equal(d->nblocks, 512);
    assert_int_equal(ubj_bdev_fault_arm(d->lower, UBJ_FAULT_READ, 1, 0, 0), 0);
    assert_int_equal(ubj_bdev_read(d, 0, 1, buf), -EIO);
    ubj_bdev_destroy(d);

    d = open_ok("ssd:nvme@nand:slc,clock=real", NULL, &o);
    assert_true(ubj_model_find(d) == d);
    assert_true(ubj_model_clock(d) == ubj_model_clock(d->lower));
    assert_int_equal(ubj_clock_kind(ubj_model_clock(d)), UBJ_CLOCK_REAL);
    ubj_bdev_destroy(d);

    struct ubj_clock *c;
    assert_int_equal(ubj_clock_create(UBJ_CLOCK_VIRTUAL, &c), 0);
    o.clock = c;
    d = open_ok("ssd:sata", NULL, &o);
    assert_true(ubj_model_clock(d) == c);
    assert_int_equal(ubj_bdev_read(d, 0, 1, buf), 0);
    ubj_bdev_destroy(d);
    assert_int_equal(ubj_clock_now(c), 99985);       /* still ours, advanced */
    ubj_clock_put(c);

    char path[4096], spec[4200];
    assert_int_equal(t_tmpfile(path, sizeof path, "spec"), 0);
    unlink(path);
    snprintf(spec, sizeof spec, "hdd:modern7200@file:%s", path);
    o = (struct ubj_spec_opts){ .nblocks = 256 };
    d = open_ok(spec, NULL, &o);
    assert_string_equal(d->lower->ops->name, "file");
    assert_int_equal(d->nblocks, 256);
    ubj_bdev_destroy(d);
    unlink(path);
}

/* test_spec_errors -- bad specs fail cleanly; lower is never lost. */
static void test_spec_errors(void **state)
{
    (void)state;
    static const struct { const char *spec; int rc; } bad[] = {
        { "", -EINVAL }, { "tape:x", -EINVAL }, { "nand:nope", -ENOENT },
        { "nand:slc,zzz=1", -EINVAL }, { "nand:slc,op_pct=abc", -EINVAL },
        { "nand:slc,clock=maybe", -EINVAL }, { "ram@ram", -EINVAL },
        { "nand:slc@@ram", -EINVAL }, { "hdd", -EINVAL }, { "hdd:", -EINVAL },
        { "file:", -EINVAL }, { "nand:slc@file:/nonexistent-dir/x", -ENOENT },
        { "hdd:hp_c2249a,surfaces=0@fault", -EINVAL },
    };
    struct ubj_bdev *d, *lower;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int rc = ubj_bdev_open_spec(bad[i].spec, NULL, NULL, &d);
        if (rc != bad[i].rc)
            fail_msg("open_spec(\"%s\") = %d, want %d (%s)", bad[i].spec, rc,
                     bad[i].rc, ubj_errormsg());
        assert_null(d);
    }
    /* with a caller's lower: the fault layer is built over it, the model
     * above fails; lower must come back untouched and usable */
    assert_int_equal(ubj_bdev_ram_create(64, &lower), 0);
    assert_int_equal(ubj_bdev_open_spec("hdd:hp_c2249a,rpm=0@fault", lower, NULL, &d),
                     -EINVAL);
    assert_int_equal(ubj_bdev_open_spec("nand:nope", lower, NULL, &d), -ENOENT);
    assert_int_equal(ubj_bdev_open_spec("nand:slc@ram", lower, NULL, &d), -EINVAL);
    assert_int_equal(ubj_bdev_write(lower, 3, 1, buf), 0);
    d = open_ok("nand:slc", lower, NULL);
    assert_true(d->lower == lower);
    ubj_bdev_destroy(d);                /* destroys lower too */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_builtin_matches_files),
        cmocka_unit_test(test_every_parameter_has_a_source),
        cmocka_unit_test(test_every_profile_builds),
        cmocka_unit_test(test_profile_dir),
        cmocka_unit_test(test_specs),
        cmocka_unit_test(test_spec_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
