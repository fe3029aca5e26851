// SPDX-License-Identifier: BSD-2-Clause
/*
 * Can the daemon find our uprobe attach points? They are local symbols
 * (.symtab): a library stripped of them would be probed on its API symbols
 * instead (bpf_attach.c), and a call that also went into a ring would then
 * reach the daemon twice. So before taking a ring the library looks for
 * rt_mark_probe_begin in its own file's symbol table. Read-only, bounds-
 * checked, once per process.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mlib.h"

#define PROBE_SYM "rt_mark_probe_begin"

static int in_file(__u64 off, __u64 len, __u64 size)
{
	return off <= size && len <= size - off;
}

static int symtab_has(const __u8 *p, __u64 size)
{
	const Elf64_Ehdr *eh = (const void *)p;
	const Elf64_Shdr *sh, *st, *str;
	const Elf64_Sym *sym;
	__u64 i, j, n;

	if (size < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(*sh) ||
	    !in_file(eh->e_shoff, (__u64)eh->e_shnum * sizeof(*sh), size))
		return 0;
	sh = (const void *)(p + eh->e_shoff);
	for (i = 0; i < eh->e_shnum; i++) {
		st = &sh[i];
		if (st->sh_type != SHT_SYMTAB || st->sh_link >= eh->e_shnum ||
		    !in_file(st->sh_offset, st->sh_size, size))
			continue;
		str = &sh[st->sh_link];
		if (!in_file(str->sh_offset, str->sh_size, size))
			continue;
		sym = (const void *)(p + st->sh_offset);
		n = st->sh_size / sizeof(*sym);
		for (j = 0; j < n; j++) {
			if (ELF64_ST_TYPE(sym[j].st_info) != STT_FUNC ||
			    sym[j].st_name + sizeof(PROBE_SYM) > str->sh_size)
				continue;
			if (!memcmp(p + str->sh_offset + sym[j].st_name, PROBE_SYM,
				    sizeof(PROBE_SYM)))
				return 1;
		}
	}
	return 0;
}

int rt_mark_probes_findable(void)
{
	Dl_info info;
	struct stat sb;
	void *p;
	int fd, found = 0;

	if (!dladdr((void *)rt_mark_begin, &info) || !info.dli_fname)
		return 0;
	fd = open(info.dli_fname, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	if (fstat(fd, &sb) == 0 && sb.st_size > 0) {
		p = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (p != MAP_FAILED) {
			found = symtab_has(p, (__u64)sb.st_size);
			munmap(p, (size_t)sb.st_size);
		}
	}
	close(fd);
	return found;
}
