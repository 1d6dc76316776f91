/*
 * st_header.h — the safetensors header, validated without a model: the part of import
 * that reads untrusted bytes, kept apart so that a fuzz target (fuzz/fuzz_safetensors.c)
 * drives exactly what sf_model_import_safetensors() runs.
 *
 * A safetensors file is: u64 little-endian header length n, n bytes of JSON (an object:
 * tensor name -> {"dtype", "shape", "data_offsets": [begin, end)} relative to the data
 * area, plus an optional "__metadata__" object of strings), then the data area.
 */
#ifndef SF_IO_ST_HEADER_H
#define SF_IO_ST_HEADER_H

#include "common/error.h"

#include <stddef.h>
#include <stdint.h>

#define SF_ST_HEADER_MAX ((uint64_t)100 << 20) /* the reference implementation's limit */

/* A tensor the caller needs: its name, F32, and this shape. */
struct _sf_st_want {
	const char *name;
	int ndim;         /* 1 or 2 */
	int64_t shape[2]; /* shape[1] unused when ndim == 1 */
};

/* A tensor of a file being written: name, F32 of this shape, at element `off` of the
 * data area (count elements: the shape's product). */
struct _sf_st_tensor {
	const char *name;
	int ndim;         /* 1 or 2 */
	int64_t shape[2]; /* shape[1] unused when ndim == 1 */
	size_t off, count;
};

/* The header of a file holding these n tensors (the data area: their elements, in
 * order, without gaps), shardflow's __metadata__ first, padded with spaces to a
 * multiple of 8: *out (*len bytes and a NUL) to free. SF_ERR_INVALID when two tensors
 * share a name. */
int _sf_st_header_build(const struct _sf_st_tensor *t, size_t n, char **out, size_t *len);

/* Writes path atomically (path.tmp, synced, renamed): the header, then the data area
 * `params` of n floats, converted to little-endian in place. */
int _sf_st_write(const char *path, const char *header, size_t hlen, float *params, size_t n);

/* The header length from the first 8 bytes of a file of fsize bytes: an error unless
 * 2 <= n <= SF_ST_HEADER_MAX and the header fits in the file. */
int _sf_st_header_length(const char *path, const uint8_t len8[8], uint64_t fsize, uint64_t *hlen);

/* Validates the hlen bytes of header text of a file whose data area has data_len bytes:
 * a JSON object without duplicate keys; each wanted tensor present, F32, with its
 * shape; every entry well-formed (known dtype, non-negative shape, data_offsets in the
 * data area and as long as the shape says); __metadata__ an object of strings; the
 * tensors together tiling the data area exactly. On success begin[i] is the byte
 * offset of want[i] in the data area (want[i] occupies elements * 4 bytes from there).
 * Errors: SF_ERR_IO naming `path` and what is wrong, SF_ERR_NOMEM. */
int _sf_st_header_check(const char *path, const char *header, size_t hlen, uint64_t data_len,
                        const struct _sf_st_want *want, size_t nwant, uint64_t *begin);

#endif
