/*
 * checkpoint.h — sharded checkpoints that do not depend on the world size or sharding:
 * the format, and what the checkpoint's files share (io/ only; the API is
 * sf_checkpoint_save/load/latest/lock in shardflow.h). checkpoint_layout.c (vectors,
 * names, structure hash, rank file paths) and checkpoint_lock.c (the directory locks)
 * call none of the others; checkpoint_save.c writes a step, checkpoint_steps.c lists
 * the steps a directory offers, checkpoint_load.c reads one (falling back to older
 * ones) and answers sf_checkpoint_latest, calling checkpoint_steps.c and
 * checkpoint_read.c, which reads a step without a model (for tools/shardflow-ckpt
 * too: docs/checkpoints.md).
 *
 * A checkpoint of N ranks is a directory dir/step-<9 digits>/ holding rank-<5 digits>.bin
 * for r < N and manifest.json. Every unit u has logical vectors of P_u floats (the
 * parameters, then the optimizer's first moment, then AdamW's second moment); rank-r.bin
 * holds slice [r S_u, (r+1) S_u) of each, S_u = ceil(P_u / N), zeros past P_u:
 *
 *   header (24 bytes, little-endian): "SFCKPT1\0", u32 rank, u32 nranks, u32 nunits,
 *                                     u32 vectors per unit
 *   for u in units, for each vector: S_u float32, little-endian
 *
 * The file layout only depends on (P_u, N), which the manifest records, so a loader on M
 * ranks finds any element i of a unit in file i / S_u at i % S_u: that is resharding.
 * A pipeline's checkpoint (SHARDFLOW_PP: the manifest's pp > 1, format version 3) is
 * pp such runs of n = N / pp files: stage s's, files [s n, (s+1) n), hold only its
 * units (the manifest gives each unit's stage), each cut in n slices (S_u =
 * ceil(P_u / n)), and are written by that stage's n ranks; the header's counts stay
 * the whole checkpoint's (file number, N, every unit). Without one, pp = 1: the above.
 * Each loading rank reads only the files holding what it keeps — its own slice of every
 * unit (the whole unit with sharding none) — so a checkpoint loaded on as many ranks as
 * wrote it costs every rank one file. A CRC-32 covers a whole file: a rank reads every
 * file it needs from start to end (in pieces) to verify it, and keeps its slices of it.
 * Rank 0 also checks the size of every file, so a truncated checkpoint is refused even
 * where no rank reads the truncated file.
 *
 * Crash safety is by ordering, and a save never touches a complete step before its
 * replacement is: the step is written into a staging directory dir/step-N.tmp, each
 * file to <name>.tmp, fsync'ed and renamed (and the directory fsync'ed); the manifest
 * (which carries every rank file's size and CRC-32; its own CRC-32 is in
 * manifest.crc32, written just before it) comes only after every rank has renamed its
 * file. Then the switch: an existing step-N is renamed to step-N.old, step-N.tmp to
 * step-N, dir/latest is rewritten, step-N.old removed. A save clears first what would
 * stop it after the switch (a directory where latest goes, whatever step-N.old holds).
 * One rule for a loader given dir: the step an intact latest names; any damage to
 * latest (missing, a directory, empty, garbage, naming a step without manifest, as a
 * kill between these renames leaves it) or to that step falls back to the newest
 * valid complete step (step-N or step-N.tmp holding a manifest), with a warning naming
 * the damage; only no valid step refuses. A step directory without manifest.json is
 * half-written and refused. A step that fails its checks as damaged (SF_ERR_IO:
 * manifest, its counters disagreeing included, rank files) makes the loader try the
 * other complete steps, newest first (each step number once, step-N before
 * step-N.tmp), warning with each fault; SF_ERR_INVALID (another model) stops it.
 *
 * One writer per directory for a model's whole life: rank 0 takes flock(dir/.lock) at
 * the model's first lock, save, load or latest of dir and holds it until the model is
 * destroyed — exclusively for a writer, which records "<pid> <host>" in it, shared for
 * a reader; a second job is refused at once (SF_ERR_BUSY).
 * The manifest's counts (steps, epoch, batch) are range-checked to 0..2^53-1, so no
 * later arithmetic on them overflows; info.step is checked against model_steps where
 * info_steps_per_update says how they relate (io/manifest.c).
 *
 * Every failure of one rank becomes the same status on every rank (_sf_comm_agree), and
 * every check happens before the first byte of the model is touched.
 */
#ifndef SF_IO_CHECKPOINT_H
#define SF_IO_CHECKPOINT_H

#include "io/fileio.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct sf_model;
struct _sf_manifest;

#define CKPT_MAGIC "SFCKPT1" /* and its NUL: 8 bytes */

/* How many vectors per unit this model keeps (always a prefix of param, m, v). */
int _sf_ckpt_nvectors(const struct sf_model *m);
const char *_sf_ckpt_unit_name(const struct sf_model *m, int u);
/* 16 hex digits and a NUL: a hash of what makes two models interchangeable (each
 * node's kind, parameter layout, name, shapes, inputs, unit). legacy: the hash of
 * checkpoints written before 2026-11-28, which took each layer's type name instead of
 * its layout (loading accepts both). */
void _sf_ckpt_structure_hash(const struct sf_model *m, bool legacy, char out[17]);
/* stepdir/rank-<5 digits>.bin, rank r's file. */
int _sf_ckpt_rank_path(char *out, size_t size, const char *stepdir, int r);

/* Rank 0: which step directory `dir` means: dir itself when it holds a manifest, else
 * the complete step an intact dir/latest names, else (latest damaged in any way) the
 * newest complete step directory, with a warning naming the damage; SF_ERR_IO when
 * latest is there but no step is complete; an empty stepdir when dir holds no
 * checkpoint (not an error). stepdir: `size` bytes. */
int _sf_ckpt_resolve(const char *dir, char *stepdir, size_t size);

/* Rank 0: every step directory a load of `dir` may take, in the order it tries them:
 * the one _sf_ckpt_resolve gives, then the other complete steps of dir, newest first
 * (none when dir itself is a step directory). *steps: *n paths, freed with
 * _sf_ckpt_candidates_free; *n = 0 when dir holds no checkpoint. */
int _sf_ckpt_candidates(const char *dir, char ***steps, int *n);
void _sf_ckpt_candidates_free(char **steps, int n);

/* Rank 0: removes dir's complete step directories but the newest `keep` (keep >= 1)
 * and the one dir/latest names, each manifest first (so a prune stopped half-way
 * leaves no step a loader would take half); staged ones (step-N.tmp) are left alone.
 * *removed: how many went. */
int _sf_ckpt_prune(const char *dir, int keep, int *removed);

/* ---- reading without a model (checkpoint_read.c): rank 0's, or a tool's ---- */

/* stepdir's manifest.json (*text: *len bytes and a NUL, to free), checked against
 * manifest.crc32 when there is one (*has_crc; format version 1 has none). */
int _sf_ckpt_read_manifest(const char *stepdir, char **text, size_t *len, bool *has_crc);
/* stepdir's manifest read and parsed without a model (_sf_manifest_parse with no
 * expectations) into *mf, freed with _sf_manifest_free. */
int _sf_ckpt_open(const char *stepdir, struct _sf_manifest *mf);

/* One stretch of a rank file a reader keeps: bytes [off, off + len) go to dst. */
struct _sf_ckpt_extent {
	uint64_t off, len;
	uint8_t *dst;
};
/* Every rank file of stepdir has the size the manifest gives. */
int _sf_ckpt_check_sizes(const char *stepdir, const struct _sf_manifest *mf);
/* Reads rank file w from start to end, checks its size, CRC-32 and header, and copies
 * the extents ex (sorted, disjoint; ex[0] the header's 24 bytes) where they go. */
int _sf_ckpt_read_file(const char *stepdir, const struct _sf_manifest *mf, int w,
                       const struct _sf_ckpt_extent *ex, size_t nex);
/* Every rank file of stepdir as _sf_ckpt_read_file checks it, sizes first; the first
 * bad one is the error (SF_ERR_IO, naming it). */
int _sf_ckpt_verify(const char *stepdir, const struct _sf_manifest *mf);
/* The weights of stepdir (every rank file verified) written to `path` as
 * sf_model_export_safetensors writes them, from the tensors the manifest names
 * (SF_ERR_INVALID for a manifest without them). */
int _sf_ckpt_export(const char *stepdir, const struct _sf_manifest *mf, const char *path);

/* Rank 0, not collective: locks dir for this model (io/checkpoint_lock.c; see
 * sf_checkpoint_lock), or finds it locked already; SF_ERR_BUSY when another job holds
 * it. */
int _sf_ckpt_lock_dir(struct sf_model *m, const char *dir, enum sf_checkpoint_access access);

#endif
