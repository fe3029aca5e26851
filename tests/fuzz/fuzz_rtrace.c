/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Fuzz target for the .rtrace reader. Each input is read twice, from memory
 * and streamed from a memfd through the smallest read buffer, and the two
 * must agree; what the reader hands out must pass validation again, and an
 * error must name an offset inside the input.
 *
 * Built two ways (tests/fuzz/fuzz.cmake): with -fsanitize=fuzzer as
 * fuzz_rtrace, and with RT_FUZZ_REPLAY as fuzz_rtrace_replay, a main() that
 * runs every file of the corpus directories given on the command line (a
 * unit test, so the corpus runs in every build). In the corpus, files named
 * ok-* must read cleanly and bad-* must fail.
 */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "common/event_check.h"
#include "sources/rtrace_read.h"

struct outcome {
	int ret;
	__u64 records;
	__u64 offset;
	__u64 sum;
	char msg[192];
};

static void check(int cond, const char *what)
{
	if (!cond) {
		fprintf(stderr, "fuzz_rtrace: invariant broken: %s\n", what);
		abort();
	}
}

static void drain(struct rt_trace_reader *r, size_t size, struct outcome *o)
{
	const struct rt_event_hdr *ev;
	const unsigned char *p;

	memset(o, 0, sizeof(*o));
	while ((o->ret = rt_trace_reader__next(r, &ev)) == 1) {
		check((uintptr_t)ev % RT_EVENT_ALIGN == 0, "record aligned");
		check(rt_event_check(ev, ev->size, NULL) == 0, "returned record valid");
		/* touch the last byte the reader vouches for: ASan sees overreads */
		p = (const void *)ev;
		o->sum = o->sum * 31 + p[ev->size - 1] + ev->ts_ns;
	}
	o->records = rt_trace_reader__records(r);
	o->offset = rt_trace_reader__offset(r);
	snprintf(o->msg, sizeof(o->msg), "%s", rt_trace_reader__error(r));
	check(o->ret <= 0, "next() returns 1, 0 or -errno");
	if (o->ret < 0) {
		check(!strncmp(o->msg, "offset ", 7), "message starts with the offset");
		check(o->offset <= size, "offset within the input");
		check(rt_trace_reader__next(r, &ev) == o->ret && !ev, "errors are sticky");
	} else {
		check(o->msg[0] == '\0', "no message without an error");
		check(o->offset == size, "a clean end consumed everything");
	}
}

static int memfd = -1;

static int read_input(const uint8_t *data, size_t size)
{
	struct rt_trace_reader_opts ro = { .buf_size = 2 * RT_EVENT_MAX };
	struct outcome a, b;
	struct rt_trace_reader *r;

	r = rt_trace_reader__open_mem(data, size);
	check(r != NULL, "open_mem");
	drain(r, size, &a);
	rt_trace_reader__free(r);

	if (memfd < 0)
		memfd = memfd_create("fuzz_rtrace", MFD_CLOEXEC);
	check(memfd >= 0, "memfd");
	check(ftruncate(memfd, 0) == 0 && pwrite(memfd, data, size, 0) == (ssize_t)size &&
		      lseek(memfd, 0, SEEK_SET) == 0,
	      "memfd write");
	r = rt_trace_reader__fd_open(memfd, &ro);
	check(r != NULL, "fd_open");
	drain(r, size, &b);
	rt_trace_reader__free(r);

	check(a.ret == b.ret && a.records == b.records && a.offset == b.offset && a.sum == b.sum &&
		      !strcmp(a.msg, b.msg),
	      "memory and stream readers agree");
	return a.ret;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	read_input(data, size);
	return 0;
}

#ifdef RT_FUZZ_REPLAY
static int replay_file(const char *dir, const char *name)
{
	char path[4096];
	uint8_t *buf = NULL;
	long size;
	FILE *f;
	int ret;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "rb");
	if (!f || fseek(f, 0, SEEK_END) || (size = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "%s: cannot read\n", path);
		if (f)
			fclose(f);
		return -1;
	}
	/* an exact-size copy, so that ASan catches a read past the end */
	buf = malloc(size ? size : 1);
	if (!buf || fread(buf, 1, size, f) != (size_t)size) {
		fprintf(stderr, "%s: cannot read\n", path);
		fclose(f);
		free(buf);
		return -1;
	}
	fclose(f);
	ret = read_input(buf, size);
	free(buf);
	if (!strncmp(name, "ok-", 3) && ret != 0) {
		fprintf(stderr, "%s: expected a clean read, got %d\n", path, ret);
		return -1;
	}
	if (!strncmp(name, "bad-", 4) && ret >= 0) {
		fprintf(stderr, "%s: expected an error\n", path);
		return -1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int i, files = 0, failed = 0;
	struct dirent *de;
	DIR *d;

	for (i = 1; i < argc; i++) {
		d = opendir(argv[i]);
		if (!d) {
			fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
			return 1;
		}
		while ((de = readdir(d))) {
			if (de->d_name[0] == '.')
				continue;
			files++;
			if (replay_file(argv[i], de->d_name))
				failed++;
		}
		closedir(d);
	}
	printf("fuzz_rtrace_replay: %d inputs, %d failed\n", files, failed);
	/* an empty or missing corpus must not pass as a green test */
	return files == 0 || failed ? 1 : 0;
}
#endif
