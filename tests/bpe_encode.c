/*
 * bpe_encode.c — sf_vocab_encode on a whole file, for tests/bpe.sh: writes the ids of
 * TEXT (GPT-2's BPE from the decode table VOCAB) as little-endian uint16 to OUT, the
 * id section of the llm.c shard tools/gpt2-tokens.cjs writes, so the two compare with
 * cmp. No MPI, no StarPU: the encoder is data/'s alone.
 *
 *   tests/bpe_encode VOCAB TEXT OUT
 */
#include "shardflow.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	if (argc != 4) {
		fprintf(stderr, "usage: bpe_encode VOCAB TEXT OUT\n");
		return 2;
	}
	struct sf_vocab v;
	int status = 1;
	char *text = NULL;
	int32_t *ids = NULL;
	FILE *f = NULL;
	if (sf_vocab_load(argv[1], &v) < 0)
		return 1;
	if (!(f = fopen(argv[2], "rb")) || fseek(f, 0, SEEK_END) || ftell(f) < 0)
		goto done;
	long n = ftell(f);
	rewind(f);
	text = malloc((size_t)n + 1);
	ids = malloc(((size_t)n + 1) * sizeof *ids);
	if (!text || !ids || fread(text, 1, (size_t)n, f) != (size_t)n)
		goto done;
	fclose(f);
	f = NULL;
	int64_t count = 0;
	if (sf_vocab_encode(&v, text, (size_t)n, ids, n + 1, &count) < 0 || count > n + 1)
		goto done;
	if (!(f = fopen(argv[3], "wb")))
		goto done;
	for (int64_t i = 0; i < count; i++) {
		uint8_t le[2] = {(uint8_t)(ids[i] & 0xff), (uint8_t)(ids[i] >> 8)};
		if (fwrite(le, 1, 2, f) != 2)
			goto done;
	}
	status = fclose(f) ? 1 : 0;
	f = NULL;
	fprintf(stderr, "bpe_encode: %ld bytes -> %lld ids\n", n, (long long)count);
done:
	if (status)
		fprintf(stderr, "bpe_encode: failed on %s\n", argv[2]);
	if (f)
		fclose(f);
	free(text);
	free(ids);
	sf_vocab_free(&v);
	return status;
}
