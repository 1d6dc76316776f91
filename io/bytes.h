/*
 * bytes.h — little-endian integers and floats, for the file formats of io/ (checkpoints
 * and safetensors are little-endian whatever the host is).
 */
#ifndef SF_IO_BYTES_H
#define SF_IO_BYTES_H

#include <stddef.h>
#include <stdint.h>

static inline int _sf_host_is_le(void)
{
	const uint16_t one = 1;
	return *(const uint8_t *)&one == 1;
}

/* Byte-swaps n 32-bit words in place on a big-endian host: floats to or from a file. */
static inline void _sf_floats_le(void *buf, size_t n)
{
	if (_sf_host_is_le())
		return;
	uint8_t *p = buf;
	for (size_t i = 0; i < n; i++, p += 4) {
		uint8_t t = p[0];
		p[0] = p[3], p[3] = t;
		t = p[1];
		p[1] = p[2], p[2] = t;
	}
}

static inline void _sf_put_le(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t _sf_get_le(const uint8_t *p, int bytes)
{
	uint64_t v = 0;
	for (int i = 0; i < bytes; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

#endif
