/*
 * profile.c -- device and NVM profiles: plain-text "key = value" files
 * (profiles/<kind>_<name>.txt in the source tree) parsed into a model's
 * parameter struct through a table of accepted keys.
 *
 * Format: one parameter per line, "key = value", '#' starts a comment
 * (every parameter's comment gives its source); blank lines are ignored.
 * A key may repeat (HDD "zone" lines); for ordinary keys the last wins,
 * which is how ",key=value" overrides from a spec string work: they are
 * appended after the file's lines.
 *
 * Resolution of a profile name N of kind K: $UBJ_PROFILE_DIR/K_N.txt if
 * that file exists (a user can override or add a profile without
 * recompiling), else the built-in text compiled below (identical to the
 * source tree's profiles/K_N.txt), else -ENOENT.  A name containing '/'
 * or ending in ".txt" is a path.
 *
 * Invariants: a struct prof owns all its strings; prof_apply never
 * modifies the profile; every error sets a message naming the source,
 * the line (0 for an override) and the key.
 */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "dev/model_int.h"
#include "util/util.h"

#define PROF_MAX_BYTES (1u << 20)   /* a profile file larger than this is bad */

struct prof_builtin {
    const char *name;       /* "kind_name" */
    const char *text;
};

/* BEGIN BUILT-IN PROFILES: generated from the files profiles/KIND_NAME.txt (byte for byte;
 * tests/unit/model_spec.c checks they still match the files). */
static const char prof_txt_hdd_hp_c2249a[] =
    "# HP C2249A, 5400 rpm, 17 surfaces, 2051 cylinders (1.3 GB SCSI-2 disk), as\n"
    "# validated in DiskSim (Ganger, Worthington, Patt).  Sources:\n"
    "#  [DS-M] DiskSim 4.0 valid/hp_c2249a.model (dm_disk HP_C2249A_model)\n"
    "#  [DS-S] DiskSim valid/hp_c2249a.diskspecs (disksim_disk HP_C2249A)\n"
    "#  [RW94] Ruemmler & Wilkes, \"An introduction to disk drive modeling\",\n"
    "#         IEEE Computer 27(3), 1994 (the seek equation's form)\n"
    "#  [TH99] th99 / PC-DISK hard disk database entries for HP SCSI-2 drives\n"
    "#  [BRIEF] ubjfs BRIEF section 5\n"
    "kind = hdd\n"
    "name = hp_c2249a\n"
    "sector_bytes = 512          # [DS-M] LBN = 512-byte sector\n"
    "rpm = 5400                  # [DS-M] Rotation speed (in rpms); [BRIEF]\n"
    "surfaces = 17               # [DS-M] Number of data surfaces\n"
    "# zone = first_cyl last_cyl sectors_per_track track_skew cyl_skew first_offset\n"
    "zone = 0 558 96 14 32 0     # [DS-M] zone 1 (skews in sectors)\n"
    "zone = 559 760 92 13 30 14  # [DS-M] zone 2\n"
    "zone = 761 901 88 13 29 73  # [DS-M] zone 3\n"
    "zone = 902 1051 84 12 28 80 # [DS-M] zone 4\n"
    "zone = 1052 1193 80 12 27 52 # [DS-M] zone 5\n"
    "zone = 1194 1519 72 11 24 0 # [DS-M] zone 6\n"
    "zone = 1520 1793 64 10 22 32 # [DS-M] zone 7\n"
    "zone = 1794 2050 56 9 19 30 # [DS-M] zone 8\n"
    "seek_boundary_cyl = 300     # [DS-M] HPL seek equation values[0]; [BRIEF]\n"
    "seek_short_a_ms = 3.81      # [DS-M] HPL values[1]: a in a + b*sqrt(d), d < 300\n"
    "seek_short_b_ms = 0.33      # [DS-M] HPL values[2]: b\n"
    "seek_long_c_ms = 7.75       # [DS-M] HPL values[3]: c in c + e*d, d >= 300\n"
    "seek_long_e_ms = 0.0059     # [DS-M] HPL values[4]: e\n"
    "seek_first10_ms = 2.89 3.68 3.81 3.98 4.27 4.65 4.52 4.65 4.82 4.99 # [DS-M] First ten seek times (Seek type = hplplus10)\n"
    "head_switch_ms = 0.89       # [DS-M] Head switch time; [BRIEF]\n"
    "write_settle_ms = 0.65      # [DS-M] Add. write settling delay\n"
    "overhead_read_ms = 0.61486  # [DS-S] Read miss over. 0.558210 + Read completion overhead 0.056650\n"
    "overhead_write_ms = 0.87436 # [DS-S] Write miss over. 0.823910 + Write completion overhead 0.050450\n"
    "overhead_hit_ms = 1.01008   # [DS-S] Read hit over. 0.953430 + Read completion overhead 0.056650\n"
    "overhead_flush_ms = 0.87436 # assumed: a SYNCHRONIZE CACHE costs a write command's overhead\n"
    "bus_mb_s = 10               # [TH99] HP SCSI-2 drives of this generation: 10 MB/s synchronous\n"
    "write_cache = 0             # [DS-S] Fast write level = 0 (no immediate-report writes)\n"
    "write_cache_kib = 128       # [DS-S] Segment size (in blks) = 256 (used only with write_cache = 1)\n"
    "readahead_sectors = 128     # [DS-S] Maximum read-ahead (blks) = 128\n"
    "idle_w = 0                  # no source gives the C2249A's power: idle energy not counted\n"
    "seek_w = 33.0               # [TH99] HP 97560 (5.25\" 1.37 GB HP SCSI disk, previous generation): seek 33.0 W\n"
    "rw_w = 26.0                 # [TH99] HP 97560: read/write 26.0 W\n";
static const char prof_txt_hdd_modern7200[] =
    "# A modern 7200 rpm 3.5-inch disk: Seagate Constellation ES.3 4 TB class\n"
    "# (ST4000NM0033).  Sources:\n"
    "#  [ES3]  Seagate Constellation ES.3 product manuals (SATA 100671511, SAS):\n"
    "#         7200 rpm, 4.16 ms average latency, 10 heads, 320,800 tracks per\n"
    "#         surface, 83-175 MB/s sustained, 7,814,037,168 sectors, DC power\n"
    "#         table of the 4 TB drive; average seek read 8.5 ms, write 9.5 ms\n"
    "#  [CON2] Seagate Constellation.2 SAS manual (same family and generation):\n"
    "#         single-track seek 0.5 ms, full stroke 17.35 ms, 0.2 ms controller\n"
    "#         overhead (access time with minus without overhead)\n"
    "#  [FIT]  derived here: docs/DEVICES.md shows the derivation\n"
    "kind = hdd\n"
    "name = modern7200\n"
    "sector_bytes = 512          # [ES3] 512-byte logical sectors\n"
    "rpm = 7200                  # [ES3]\n"
    "surfaces = 10               # [ES3] read/write heads, 4 TB model\n"
    "# zone = first_cyl last_cyl sectors_per_track [track_skew cyl_skew first_offset]\n"
    "# 8 equal zones, sectors/track linear from OD to ID with ID/OD = 83/175 [ES3]\n"
    "# and total 7.81e9 sectors [ES3]; skews omitted = computed from the switch times\n"
    "zone = 0 40099 3304         # [FIT]\n"
    "zone = 40100 80199 3056     # [FIT]\n"
    "zone = 80200 120299 2808    # [FIT]\n"
    "zone = 120300 160399 2560   # [FIT]\n"
    "zone = 160400 200499 2312   # [FIT]\n"
    "zone = 200500 240599 2064   # [FIT]\n"
    "zone = 240600 280699 1815   # [FIT]\n"
    "zone = 280700 320799 1567   # [FIT]\n"
    "seek_boundary_cyl = 80200   # [FIT] a quarter of the stroke\n"
    "seek_short_a_ms = 0.4739    # [FIT] single track 0.5 ms [CON2], mean 8.5 ms [ES3], full 17.35 ms [CON2]\n"
    "seek_short_b_ms = 0.026077  # [FIT]\n"
    "seek_long_c_ms = 4.6952     # [FIT]\n"
    "seek_long_e_ms = 0.000039448 # [FIT]\n"
    "head_switch_ms = 1.33       # [FIT] skew that makes the OD sustained rate 175 MB/s [ES3]\n"
    "write_settle_ms = 1.0       # [ES3] average write seek 9.5 ms - average read seek 8.5 ms\n"
    "overhead_read_ms = 0.2      # [CON2]\n"
    "overhead_write_ms = 0.2     # [CON2]\n"
    "overhead_hit_ms = 0.2       # [CON2]\n"
    "overhead_flush_ms = 0.2     # assumed: a FLUSH CACHE costs a command's overhead (plus the destage)\n"
    "bus_mb_s = 600              # [ES3] SATA 6 Gb/s\n"
    "write_cache = 1             # desktop/nearline SATA drives ship with the write cache enabled\n"
    "write_cache_kib = 131072    # [ES3] 128 MB multisegmented cache\n"
    "readahead_sectors = 2048    # assumed: 1 MiB of read-ahead into the cache\n"
    "idle_w = 7.4                # [ES3] 4 TB average idle: 0.28 A x 5 V + 0.50 A x 12 V\n"
    "seek_w = 11.27              # [ES3] random read typical: 0.31 A x 5 V + 0.81 A x 12 V\n"
    "rw_w = 9.87                 # [ES3] sequential read typical: 0.63 A x 5 V + 0.56 A x 12 V\n";
static const char prof_txt_nand_mlc[] =
    "# Raw MLC NAND flash (one chip, 8-bit bus) behind a page-mapped FTL in the\n"
    "# host driver.  Sources:\n"
    "#  [BRIEF] ubjfs BRIEF section 5 (MLC: 4-8 KiB pages, tR 50 us, tPROG\n"
    "#          0.9-1.3 ms, tBERS 3-3.5 ms; host driver costs of the seed-2\n"
    "#          authors, as for SLC)\n"
    "#  [ONFI]  ONFI 1.0 asynchronous timing mode 4: 25 ns read/write cycle\n"
    "#  [MLC]   4 KiB-page MLC chips of the same generation (e.g. Micron\n"
    "#          MT29F32G08CBAC): 4096+224 B pages, 128+ pages per block\n"
    "kind = nand\n"
    "name = mlc\n"
    "page_bytes = 4096           # [BRIEF] 4 KiB page (8192 possible: page_bytes=8192,spare_bytes=448)\n"
    "spare_bytes = 224           # [MLC]\n"
    "pages_per_block = 128       # [MLC]\n"
    "t_r_us = 50                 # [BRIEF]\n"
    "t_prog_us = 1100            # [BRIEF] midpoint of 0.9-1.3 ms\n"
    "t_bers_us = 3250            # [BRIEF] midpoint of 3-3.5 ms\n"
    "bus_ns_per_byte = 25        # [ONFI] timing mode 4\n"
    "drv_read_us = 52            # [BRIEF] seed-2 driver cost per page read (measured on SLC)\n"
    "drv_write_us = 106          # [BRIEF] per page program\n"
    "drv_erase_us = 32           # [BRIEF] per block erase\n"
    "cpu_w = 0.65                # [BRIEF]\n"
    "vcc_v = 3.3                 # [MLC]\n"
    "icc_ma = 25                 # [MLC] typical array current of MLC data sheets (assumed within 20-35 mA)\n"
    "isb_ua = 10                 # [MLC] standby current\n"
    "op_pct = 7                  # as for slc\n"
    "min_spare_blocks = 3        # as for slc\n"
    "check = 0                   # as for slc\n";
static const char prof_txt_nand_slc[] =
    "# Raw SLC NAND flash (one 2 Gbit chip, 8-bit bus) behind a page-mapped FTL\n"
    "# in the host driver.  Sources:\n"
    "#  [BRIEF] ubjfs BRIEF section 5 (2048+64 B pages, 64 pages/block, tR 25 us,\n"
    "#          tPROG 200 us, tBERS 1.5 ms, 40 ns per byte cycle; host driver\n"
    "#          read 52 us, write 106 us, erase 32 us per operation and ~0.65 W\n"
    "#          CPU+memory power while in the driver, as measured by the seed-2\n"
    "#          authors, Olivier, Boukhobza, Senn)\n"
    "#  [ONFI]  ONFI 1.0: 8-bit asynchronous bus, one byte per cycle\n"
    "#  [MT29]  Micron MT29F2G08 (2 Gb SLC) data sheets: Vcc 3.3 V, array\n"
    "#          read/program/erase current 15-30 mA typ/max, standby 10 uA typ\n"
    "kind = nand\n"
    "name = slc\n"
    "page_bytes = 2048           # [BRIEF]\n"
    "spare_bytes = 64            # [BRIEF]\n"
    "pages_per_block = 64        # [BRIEF]\n"
    "t_r_us = 25                 # [BRIEF] page read (array to page register)\n"
    "t_prog_us = 200             # [BRIEF] page program\n"
    "t_bers_us = 1500            # [BRIEF] block erase\n"
    "bus_ns_per_byte = 40        # [BRIEF] one byte per 40 ns cycle [ONFI]\n"
    "drv_read_us = 52            # [BRIEF] host driver cost per page read\n"
    "drv_write_us = 106          # [BRIEF] host driver cost per page program\n"
    "drv_erase_us = 32           # [BRIEF] host driver cost per block erase\n"
    "cpu_w = 0.65                # [BRIEF] CPU + memory power while in the driver\n"
    "vcc_v = 3.3                 # [MT29]\n"
    "icc_ma = 20                 # [MT29] between the typical and maximum array current\n"
    "isb_ua = 10                 # [MT29] standby current\n"
    "op_pct = 7                  # over-provisioning, % of the logical size (the usual 7%: GiB vs GB)\n"
    "min_spare_blocks = 3        # FTL minimum: an open block, a GC target, one victim's worth of slack\n"
    "check = 0                   # 1 = verify the FTL mapping after every request (tests)\n";
static const char prof_txt_nvm_dram[] =
    "# DRAM as the cache region (the baseline: volatile, so \"persist\" is only a\n"
    "# cost here).  Sources:\n"
    "#  [DDR3]  JEDEC DDR3-1600 timings: tRCD = tCL = 13.75 ns, 4-cycle burst\n"
    "#          of a 64-byte line (5 ns): ~30 ns per line on a row miss\n"
    "#  [LEE09] Lee, Ipek, Mutlu, Burger, \"Architecting phase change memory as a\n"
    "#          scalable DRAM alternative\", ISCA 2009: DRAM array energy of the\n"
    "#          order of 1 pJ/bit per access (their Table; see docs/DEVICES.md)\n"
    "kind = nvm\n"
    "name = dram\n"
    "read_ns = 30                # [DDR3] per 64-byte line\n"
    "write_ns = 30               # [DDR3] per 64-byte line written back\n"
    "read_pj_bit = 1.17          # [LEE09]\n"
    "write_pj_bit = 0.39         # [LEE09]\n"
    "fence_ns = 0                # a fence after flushes to DRAM waits for nothing modeled\n"
    "store_ns_per_line = 0       # stores hit the CPU cache\n";
static const char prof_txt_nvm_pcm[] =
    "# PCM as the cache region.  Sources:\n"
    "#  [BRIEF] ubjfs BRIEF section 5: PCM read ~50 ns, write 100-500 ns,\n"
    "#          2-25 pJ/bit\n"
    "#  [LEE09] Lee, Ipek, Mutlu, Burger, ISCA 2009: PCM array read ~48 ns,\n"
    "#          write ~150 ns; read 2.47 pJ/bit, write 16.82 pJ/bit\n"
    "kind = nvm\n"
    "name = pcm\n"
    "read_ns = 48                # [LEE09] [BRIEF]\n"
    "write_ns = 150              # [LEE09] [BRIEF]\n"
    "read_pj_bit = 2.47          # [LEE09]\n"
    "write_pj_bit = 16.82        # [LEE09]\n"
    "fence_ns = 0                # a fence waits for the flushes, whose cost is charged per line\n"
    "store_ns_per_line = 0       # stores hit the CPU cache\n";
static const char prof_txt_nvm_sttmram[] =
    "# STT-MRAM as the cache region.  Sources:\n"
    "#  [BRIEF] ubjfs BRIEF section 5: STT-MRAM read 10-35 ns, write 10-90 ns,\n"
    "#          0.1-2.5 pJ/bit (survey ranges)\n"
    "kind = nvm\n"
    "name = sttmram\n"
    "read_ns = 20                # [BRIEF] inside 10-35 ns\n"
    "write_ns = 50               # [BRIEF] inside 10-90 ns\n"
    "read_pj_bit = 0.5           # [BRIEF] inside 0.1-2.5 pJ/bit\n"
    "write_pj_bit = 2.5          # [BRIEF] upper end of 0.1-2.5 pJ/bit (writes cost most)\n"
    "fence_ns = 0                # a fence waits for the flushes, whose cost is charged per line\n"
    "store_ns_per_line = 0       # stores hit the CPU cache\n";
static const char prof_txt_ssd_emmc[] =
    "# An eMMC 5.1 device: Samsung 64 GB eMMC 5.1 (2015).  Sources:\n"
    "#  [SEC]  Samsung press release on the first eMMC 5.1 chips (64 GB):\n"
    "#         250 MB/s sequential read, 125 MB/s sequential write, 11,000\n"
    "#         random read and 13,000 random write IOPS\n"
    "#  [BRIEF] ubjfs BRIEF section 5: eMMC 5.1 ~11-13 K random IOPS\n"
    "# No source we have gives eMMC power: the power figures are assumptions.\n"
    "kind = ssd\n"
    "name = emmc\n"
    "read_lat_us = 74.5          # [SEC] 1e6/11000 us - 4096 B / 250 MB/s\n"
    "write_lat_us = 44.1         # [SEC] 1e6/13000 us - 4096 B / 125 MB/s\n"
    "read_mb_s = 250             # [SEC]\n"
    "write_mb_s = 125            # [SEC]\n"
    "channels = 1                # eMMC serves one command at a time without command queueing\n"
    "write_cache = 1             # eMMC 4.5+ volatile cache (CACHE_CTRL), flushed by CMD6 FLUSH_CACHE\n"
    "write_cache_mib = 4         # assumed\n"
    "media_write_mb_s = 125      # [SEC]\n"
    "flush_us = 1000             # assumed\n"
    "read_w = 0.4                # assumed (no source): ~120 mA at 3.3 V\n"
    "write_w = 0.6               # assumed (no source): ~180 mA at 3.3 V\n"
    "idle_w = 0.001              # assumed (no source)\n";
static const char prof_txt_ssd_nvme[] =
    "# An NVMe TLC SSD: Samsung 970 EVO Plus 1 TB.  Sources:\n"
    "#  [970]  Samsung 970 EVO Plus data sheet (1 TB): 3500/3300 MB/s sequential,\n"
    "#         1700 MB/s sequential write after the TurboWrite buffer, 4 KiB QD1\n"
    "#         random 19,000 / 60,000 IOPS, QD32 random read 600,000 IOPS, power\n"
    "#         read 5.5 W, write 6.0 W, idle 30 mW\n"
    "#  [BRIEF] ubjfs BRIEF section 5: NVMe 10-50 us\n"
    "kind = ssd\n"
    "name = nvme\n"
    "read_lat_us = 51.46         # [970] 1e6/19000 us - 4096 B / 3500 MB/s\n"
    "write_lat_us = 15.43        # [970] 1e6/60000 us - 4096 B / 3300 MB/s\n"
    "read_mb_s = 3500            # [970]\n"
    "write_mb_s = 3300           # [970]\n"
    "channels = 32               # [970] QD32 / QD1 random read IOPS = 600000 / 19000, rounded\n"
    "write_cache = 1             # [970] DRAM + TurboWrite buffer\n"
    "write_cache_mib = 256       # assumed: volatile dirty data held before writes slow to media speed\n"
    "media_write_mb_s = 1700     # [970] sequential write after TurboWrite\n"
    "flush_us = 100              # assumed: fixed cost of an NVMe Flush (plus dirty bytes / media rate)\n"
    "read_w = 5.5                # [970]\n"
    "write_w = 6.0               # [970]\n"
    "idle_w = 0.03               # [970]\n";
static const char prof_txt_ssd_sata[] =
    "# A SATA TLC SSD: Samsung 850 EVO 1 TB class.  Sources:\n"
    "#  [850]  Samsung SSD 850 EVO data sheet (1 TB): 540/520 MB/s sequential,\n"
    "#         4 KiB QD1 random 10,000 / 40,000 IOPS, QD32 random read 98,000 IOPS\n"
    "#  [WDB]  WD Blue 3D NAND SATA SSD user manual, 1 TB 2.5\": read 2550 mW,\n"
    "#         write 3750 mW (average maximum operating power)\n"
    "#  [THW]  Tom's Hardware, Samsung 850 Pro review: 0.28 W active idle\n"
    "kind = ssd\n"
    "name = sata\n"
    "read_lat_us = 92.4          # [850] 1e6/10000 us - 4096 B / 540 MB/s (QD1 read minus its transfer)\n"
    "write_lat_us = 17.1         # [850] 1e6/40000 us - 4096 B / 520 MB/s\n"
    "read_mb_s = 540             # [850]\n"
    "write_mb_s = 520            # [850]\n"
    "channels = 10               # [850] QD32 / QD1 random read IOPS = 98000 / 10000\n"
    "write_cache = 1             # [850] DRAM + TurboWrite buffer; writes complete at cache speed\n"
    "write_cache_mib = 512       # assumed: volatile dirty data held before writes slow to media speed\n"
    "media_write_mb_s = 520      # [850] sequential write\n"
    "flush_us = 500              # assumed: fixed cost of a FLUSH CACHE (plus dirty bytes / media rate)\n"
    "read_w = 2.55               # [WDB]\n"
    "write_w = 3.75              # [WDB]\n"
    "idle_w = 0.28               # [THW]\n";

static const struct prof_builtin prof_builtins[] = {
    { "hdd_hp_c2249a", prof_txt_hdd_hp_c2249a },
    { "hdd_modern7200", prof_txt_hdd_modern7200 },
    { "nand_mlc", prof_txt_nand_mlc },
    { "nand_slc", prof_txt_nand_slc },
    { "nvm_dram", prof_txt_nvm_dram },
    { "nvm_pcm", prof_txt_nvm_pcm },
    { "nvm_sttmram", prof_txt_nvm_sttmram },
    { "ssd_emmc", prof_txt_ssd_emmc },
    { "ssd_nvme", prof_txt_ssd_nvme },
    { "ssd_sata", prof_txt_ssd_sata },
};
/* END BUILT-IN PROFILES */

/* prof_builtin_text -- compiled-in text of kind_name, or NULL. */
const char *prof_builtin_text(const char *kind, const char *name)
{
    char full[128];
    if (snprintf(full, sizeof full, "%s_%s", kind, name) >= (int)sizeof full)
        return NULL;
    for (size_t i = 0; i < sizeof prof_builtins / sizeof prof_builtins[0]; i++)
        if (strcmp(prof_builtins[i].name, full) == 0)
            return prof_builtins[i].text;
    return NULL;
}

/* prof_builtin_name -- the i-th built-in "kind_name", NULL past the end. */
const char *prof_builtin_name(size_t i)
{
    if (i >= sizeof prof_builtins / sizeof prof_builtins[0])
        return NULL;
    return prof_builtins[i].name;
}

/* prof_free -- release p and its strings. */
void prof_free(struct prof *p)
{
    if (p == NULL)
        return;
    for (size_t i = 0; i < p->nlines; i++) {
        free(p->lines[i].key);
        free(p->lines[i].value);
    }
    free(p->lines);
    free(p);
}

/* prof_err -- message "<source>:<line>: <key>: <what>"; returns rc. */
int prof_err(int rc, const struct prof *p, const struct prof_line *l,
             const char *what)
{
    if (l == NULL)
        return ubj_set_error(rc, "profile %s: %s", p->source, what);
    if (l->line == 0)
        return ubj_set_error(rc, "profile %s: override %s=%s: %s", p->source,
                             l->key, l->value, what);
    return ubj_set_error(rc, "profile %s:%u: %s: %s", p->source, l->line,
                         l->key, what);
}

/* prof_trim -- strip leading and trailing white space in place. */
static char *prof_trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    size_t n = strlen(s);
    while (n > 0 && isspace((unsigned char)s[n - 1]))
        s[--n] = '\0';
    return s;
}

/* prof_key_ok -- true if k is a non-empty [a-z0-9_] word. */
static bool prof_key_ok(const char *k)
{
    if (*k == '\0')
        return false;
    for (; *k != '\0'; k++)
        if (!(islower((unsigned char)*k) || isdigit((unsigned char)*k) ||
              *k == '_'))
            return false;
    return true;
}

/* prof_add -- append a (key, value, line) to p. */
static int prof_add(struct prof *p, const char *key, const char *value,
                    unsigned line)
{
    struct prof_line *nl = realloc(p->lines, (p->nlines + 1) * sizeof *nl);
    if (nl == NULL)
        return ubj_set_error(-ENOMEM, "profile: out of memory");
    p->lines = nl;
    struct prof_line *l = &p->lines[p->nlines];
    l->key = strdup(key);
    l->value = strdup(value);
    l->line = line;
    if (l->key == NULL || l->value == NULL) {
        free(l->key);
        free(l->value);
        return ubj_set_error(-ENOMEM, "profile: out of memory");
    }
    p->nlines++;
    return 0;
}

/* prof_parse_line -- parse one text line (modified in place) into p. */
static int prof_parse_line(struct prof *p, char *s, unsigned lineno)
{
    char *hash = strchr(s, '#');
    if (hash != NULL)
        *hash = '\0';
    s = prof_trim(s);
    if (*s == '\0')
        return 0;
    char *eq = strchr(s, '=');
    if (eq == NULL)
        return ubj_set_error(-EINVAL, "profile %s:%u: expected \"key = value\"",
                             p->source, lineno);
    *eq = '\0';
    char *key = prof_trim(s), *value = prof_trim(eq + 1);
    if (!prof_key_ok(key) || *value == '\0')
        return ubj_set_error(-EINVAL, "profile %s:%u: bad key or empty value",
                             p->source, lineno);
    return prof_add(p, key, value, lineno);
}

/* prof_parse_text -- parse a whole profile text into p. */
static int prof_parse_text(struct prof *p, const char *text)
{
    char *copy = strdup(text);
    if (copy == NULL)
        return ubj_set_error(-ENOMEM, "profile: out of memory");
    unsigned lineno = 0;
    int rc = 0;
    for (char *s = copy; s != NULL && rc == 0;) {
        char *nl = strchr(s, '\n');
        if (nl != NULL)
            *nl = '\0';
        rc = prof_parse_line(p, s, ++lineno);
        s = nl != NULL ? nl + 1 : NULL;
    }
    free(copy);
    return rc;
}

/* prof_read_file -- the whole file at path as a NUL-terminated string. */
static int prof_read_file(const char *path, char **out)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return ubj_set_error(errno == ENOENT ? -ENOENT : -errno,
                             "profile %s: cannot open it", path);
    char *buf = malloc(PROF_MAX_BYTES + 1);
    if (buf == NULL) {
        fclose(f);
        return ubj_set_error(-ENOMEM, "profile: out of memory");
    }
    size_t n = fread(buf, 1, PROF_MAX_BYTES + 1, f);
    int bad = ferror(f);
    fclose(f);
    if (bad || n > PROF_MAX_BYTES || memchr(buf, '\0', n) != NULL) {
        free(buf);
        return ubj_set_error(-EINVAL, "profile %s: unreadable, binary or "
                             "larger than %u bytes", path, PROF_MAX_BYTES);
    }
    buf[n] = '\0';
    *out = buf;
    return 0;
}

/* prof_is_path -- true if a profile name is a file path. */
static bool prof_is_path(const char *name)
{
    size_t n = strlen(name);
    return strchr(name, '/') != NULL || (n > 4 && strcmp(name + n - 4, ".txt") == 0);
}

/* prof_load_base -- fill p with the lines of profile `name` of `kind`. */
static int prof_load_base(struct prof *p, const char *kind, const char *name)
{
    char path[512];
    char *text = NULL;
    snprintf(p->name, sizeof p->name, "%s", name);
    if (prof_is_path(name)) {
        snprintf(p->source, sizeof p->source, "%s", name);
        int rc = prof_read_file(name, &text);
        if (rc < 0)
            return rc;
    } else {
        const char *dir = getenv("UBJ_PROFILE_DIR");
        if (dir != NULL && *dir != '\0' &&
            snprintf(path, sizeof path, "%s/%s_%s.txt", dir, kind, name) <
                (int)sizeof path && prof_read_file(path, &text) == 0) {
            snprintf(p->source, sizeof p->source, "%s", path);
        } else {
            const char *b = prof_builtin_text(kind, name);
            if (b == NULL)
                return ubj_set_error(-ENOENT, "profile %s:%s: no such profile "
                                     "(built in or in $UBJ_PROFILE_DIR)",
                                     kind, name);
            snprintf(p->source, sizeof p->source, "built-in %s_%s", kind, name);
            text = strdup(b);
            if (text == NULL)
                return ubj_set_error(-ENOMEM, "profile: out of memory");
        }
    }
    int rc = prof_parse_text(p, text);
    free(text);
    return rc;
}

/* prof_load_overrides -- append ",key=value" overrides from `opts`. */
static int prof_load_overrides(struct prof *p, char *opts)
{
    for (char *tok = opts; tok != NULL;) {
        char *comma = strchr(tok, ',');
        if (comma != NULL)
            *comma = '\0';
        char *eq = strchr(tok, '=');
        if (eq == NULL)
            return ubj_set_error(-EINVAL, "profile %s: override \"%s\" is not "
                                 "key=value", p->source, tok);
        *eq = '\0';
        char *key = prof_trim(tok), *value = prof_trim(eq + 1);
        if (!prof_key_ok(key) || *value == '\0')
            return ubj_set_error(-EINVAL, "profile %s: bad override \"%s\"",
                                 p->source, key);
        int rc = prof_add(p, key, value, 0);
        if (rc < 0)
            return rc;
        tok = comma != NULL ? comma + 1 : NULL;
    }
    return 0;
}

/* prof_load -- load "name[,k=v...]" of `kind` (file/built-in + overrides). */
int prof_load(const char *kind, const char *spec, struct prof **out)
{
    *out = NULL;
    if (kind == NULL || spec == NULL || *spec == '\0')
        return ubj_set_error(-EINVAL, "profile: no %s profile named",
                             kind != NULL ? kind : "?");
    char *copy = strdup(spec);
    struct prof *p = calloc(1, sizeof *p);
    if (copy == NULL || p == NULL) {
        free(copy);
        free(p);
        return ubj_set_error(-ENOMEM, "profile: out of memory");
    }
    char *comma = strchr(copy, ',');
    if (comma != NULL)
        *comma = '\0';
    int rc = prof_load_base(p, kind, prof_trim(copy));
    if (rc == 0 && comma != NULL)
        rc = prof_load_overrides(p, comma + 1);
    free(copy);
    if (rc < 0) {
        prof_free(p);
        return rc;
    }
    *out = p;
    return 0;
}

/* prof_parse_bool -- 0/1/yes/no/true/false/on/off. */
static int prof_parse_bool(const char *s, bool *v)
{
    static const char *const yes[] = { "1", "yes", "true", "on" };
    static const char *const no[] = { "0", "no", "false", "off" };
    for (size_t i = 0; i < 4; i++) {
        if (strcmp(s, yes[i]) == 0) {
            *v = true;
            return 0;
        }
        if (strcmp(s, no[i]) == 0) {
            *v = false;
            return 0;
        }
    }
    return -EINVAL;
}

/* prof_parse_value -- parse l->value as key k into params. */
static int prof_parse_value(const struct prof *p, const struct prof_line *l,
                            const struct prof_key *k, void *params)
{
    char *at = (char *)params + k->off;
    if (k->type == PK_BOOL) {
        bool v;
        if (prof_parse_bool(l->value, &v) < 0)
            return prof_err(-EINVAL, p, l, "expected 0 or 1");
        memcpy(at, &v, sizeof v);
        return 0;
    }
    char *end;
    errno = 0;
    double v = strtod(l->value, &end);
    if (errno != 0 || end == l->value || *end != '\0' || !isfinite(v))
        return prof_err(-EINVAL, p, l, "not a number");
    if (v < k->min || v > k->max) {
        char what[96];
        snprintf(what, sizeof what, "out of range [%g, %g]", k->min, k->max);
        return prof_err(-EINVAL, p, l, what);
    }
    if (k->type == PK_U64) {
        if (v != floor(v))
            return prof_err(-EINVAL, p, l, "not an integer");
        uint64_t u = (uint64_t)v;
        memcpy(at, &u, sizeof u);
    } else {
        memcpy(at, &v, sizeof v);
    }
    return 0;
}

/* prof_apply -- parse every line of p into params via keys (and hook). */
int prof_apply(const struct prof *p, const char *kind,
               const struct prof_key *keys, void *params, prof_hook_fn hook)
{
    for (size_t i = 0; i < p->nlines; i++) {
        const struct prof_line *l = &p->lines[i];
        if (strcmp(l->key, "kind") == 0) {
            if (strcmp(l->value, kind) != 0)
                return prof_err(-EINVAL, p, l, "profile is for another kind "
                                "of device");
            continue;
        }
        if (strcmp(l->key, "name") == 0 || strcmp(l->key, "clock") == 0)
            continue;
        const struct prof_key *k = keys;
        while (k->name != NULL && strcmp(k->name, l->key) != 0)
            k++;
        int rc;
        if (k->name != NULL)
            rc = prof_parse_value(p, l, k, params);
        else
            rc = hook != NULL ? hook(params, l, p) : 0;
        if (rc == 0 && k->name == NULL)
            return prof_err(-EINVAL, p, l, "unknown parameter");
        if (rc < 0)
            return rc;
    }
    return 0;
}
