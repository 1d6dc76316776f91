/* clock.h — time differences, for the comm path's accounting and its waiting loop. */
#ifndef SF_COMMON_CLOCK_H
#define SF_COMMON_CLOCK_H

#include <time.h>

/* Nanoseconds from a to b. */
static inline long _sf_ns_between(const struct timespec *a, const struct timespec *b)
{
	return (long)(b->tv_sec - a->tv_sec) * 1000000000L + (b->tv_nsec - a->tv_nsec);
}

#endif
