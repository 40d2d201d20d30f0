/*
 * clockshim: an LD_PRELOAD library that shifts a process's wall clock
 * (CLOCK_REALTIME, gettimeofday, time) by an offset and a rate that another
 * process changes at run time through a mapped file. lockcheck's clock
 * fault runs redis-server under it, so that Redis's key expiry (which
 * follows the wall clock) jumps and drifts.
 *
 * It allocates nothing, ever: the constructor only calls getenv, open, mmap
 * and close, and the time functions read the real clock with the
 * clock_gettime system call and the shared page with atomic loads. (That is
 * the trap libfaketime 0.9.10 falls into with Debian's jemalloc-linked
 * redis-server: its start-up allocates inside jemalloc's own bootstrap and
 * deadlocks.)
 *
 * The file (LOCKCHECK_CLOCK_FILE) holds four little-endian int64s:
 *   seq     even when stable; the writer makes it odd while it writes
 *   offset  nanoseconds added to the real time
 *   rate    drift in parts per billion of real time elapsed since base
 *   base    real time (ns since the epoch) the drift counts from
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

struct shared {
	int64_t seq, offset, rate, base;
};

static struct shared *page;

__attribute__((constructor)) static void clockshim_init(void)
{
	const char *path = getenv("LOCKCHECK_CLOCK_FILE");
	if (path == NULL)
		return;
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	void *m = mmap(NULL, sizeof(struct shared), PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m != MAP_FAILED)
		page = m;
}

static int64_t shift(int64_t real)
{
	struct shared *s = page;
	if (s == NULL)
		return real;
	int64_t seq, offset, rate, base;
	for (;;) {
		seq = __atomic_load_n(&s->seq, __ATOMIC_ACQUIRE);
		offset = __atomic_load_n(&s->offset, __ATOMIC_RELAXED);
		rate = __atomic_load_n(&s->rate, __ATOMIC_RELAXED);
		base = __atomic_load_n(&s->base, __ATOMIC_RELAXED);
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if ((seq & 1) == 0 && seq == __atomic_load_n(&s->seq, __ATOMIC_RELAXED))
			break;
	}
	int64_t drift = 0;
	if (rate != 0 && real > base)
		drift = (int64_t)((__int128)(real - base) * rate / 1000000000);
	return real + offset + drift;
}

static int realtime(clockid_t id)
{
	return id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
	int r = (int)syscall(SYS_clock_gettime, id, ts);
	if (r == 0 && realtime(id) && page != NULL) {
		int64_t ns = shift((int64_t)ts->tv_sec * 1000000000 + ts->tv_nsec);
		ts->tv_sec = ns / 1000000000;
		ts->tv_nsec = ns % 1000000000;
	}
	return r;
}

int gettimeofday(struct timeval *restrict tv, void *restrict tz)
{
	(void)tz;
	struct timespec ts;
	int r = clock_gettime(CLOCK_REALTIME, &ts);
	if (r == 0) {
		tv->tv_sec = ts.tv_sec;
		tv->tv_usec = ts.tv_nsec / 1000;
	}
	return r;
}

time_t time(time_t *t)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	if (t != NULL)
		*t = ts.tv_sec;
	return ts.tv_sec;
}
