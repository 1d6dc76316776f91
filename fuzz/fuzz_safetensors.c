/*
 * fuzz_safetensors.c — the safetensors header validation of sf_model_import_safetensors
 * (io/st_header.c) on arbitrary files.
 *
 * Input: the bytes of a safetensors file. The "model" wants three F32 tensors,
 * "fc1.weight" [4, 3], "fc1.bias" [4] and "head.weight" [2, 4] (the seeds hold them,
 * fuzz/make_corpus.py). The length prefix is checked against the input's size, the header
 * validated against those tensors and the data area; any result but a crash is fine,
 * and a success must place every wanted tensor inside the data area, where it is read
 * (ASan sees an out-of-range offset).
 */
#include "fuzz/common.h"
#include "io/st_header.h"

static const struct _sf_st_want want[] = {
    {"fc1.weight", 2, {4, 3}},
    {"fc1.bias", 1, {4, 0}},
    {"head.weight", 2, {2, 4}},
};
#define NWANT (sizeof want / sizeof want[0])

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	if (!init) {
		fuzz_quiet();
		init = 1;
	}
	uint8_t len8[8] = {0};
	uint64_t hlen = 0, begin[NWANT];
	memcpy(len8, data, size < 8 ? size : 8);
	if (_sf_st_header_length("fuzz.safetensors", len8, size, &hlen) != SF_OK)
		return 0;
	/* a copy of exactly the header: ASan catches a read past its end */
	char *header = malloc(hlen);
	if (!header)
		return 0;
	memcpy(header, data + 8, hlen);
	uint64_t data_len = size - 8 - hlen;
	if (_sf_st_header_check("fuzz.safetensors", header, hlen, data_len, want, NWANT, begin) ==
	    SF_OK) {
		const uint8_t *area = data + 8 + hlen;
		volatile float acc = 0;
		for (size_t i = 0; i < NWANT; i++) {
			uint64_t n = (uint64_t)want[i].shape[0] *
			             (uint64_t)(want[i].ndim == 2 ? want[i].shape[1] : 1);
			if (begin[i] > data_len || n * 4 > data_len - begin[i])
				abort();
			for (uint64_t k = 0; k < n; k++) {
				float f;
				memcpy(&f, area + begin[i] + 4 * k, 4);
				acc += f;
			}
		}
	}
	free(header);
	return 0;
}
