/*
 * bench_opts.c -- the options `ubjfs bench micro`, `bench ubj` and `bench
 * modes` read alike (their long-option entries are TOOLS_BENCH_OPTIONS in
 * tools.h): --device, --clock (also `bench run`'s), --nvm-profile, and
 * the --cache and --size limits of `bench ubj` and `bench modes`.
 *
 * Each helper takes one option's argument, reports a usage error itself
 * and returns as tools_dev_parse does: -1 to go on, else an exit code.
 * A value is stored only when the argument is valid.
 */
#include <string.h>
#include "ubjfs/model.h"
#include "tools.h"

/* tools_bench_device -- --device SPEC (tools_dev_parse); *given = spec. */
int tools_bench_device(const char *spec, const char **given, char **models,
                       const char **file)
{
    int ret = tools_dev_parse(spec, models, file);
    if (ret < 0)
        *given = spec;
    return ret;
}

/* tools_bench_clock -- --clock virtual|real. */
int tools_bench_clock(const char *arg, enum ubj_clock_kind *clock)
{
    if (strcmp(arg, "virtual") == 0)
        *clock = UBJ_CLOCK_VIRTUAL;
    else if (strcmp(arg, "real") == 0)
        *clock = UBJ_CLOCK_REAL;
    else
        return tools_usage_err("invalid --clock '%s' (virtual or real)", arg);
    return -1;
}

/* tools_bench_nvm_profile -- --nvm-profile P: P must load as an NVM cost
 * model. */
int tools_bench_nvm_profile(const char *arg, const char **profile)
{
    struct ubj_nvm_model *m;
    int rc = ubj_nvm_model_create(arg, NULL, &m);
    if (rc < 0)
        return tools_usage_err("invalid --nvm-profile '%s': %s", arg, tools_libmsg(rc));
    ubj_nvm_model_destroy(m);
    *profile = arg;
    return -1;
}

/* tools_bench_cache -- --cache BLOCKS: 64 .. 2^24 buffers. */
int tools_bench_cache(const char *arg, uint32_t *blocks)
{
    uint64_t v;
    if (tools_parse_u64(arg, &v) < 0 || v < 64 || v > (1u << 24))
        return tools_usage_err("invalid --cache '%s'", arg);
    *blocks = (uint32_t)v;
    return -1;
}

/* tools_bench_size -- an image or region SIZE: at least 16M, rounded
 * down to whole 4 KiB blocks. */
int tools_bench_size(const char *arg, uint64_t *size)
{
    uint64_t v;
    if (tools_parse_size(arg, &v) < 0 || v < (16u << 20))
        return tools_usage_err("invalid size '%s' (at least 16M)", arg);
    *size = v - v % 4096;
    return -1;
}
