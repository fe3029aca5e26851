// SPDX-License-Identifier: BSD-2-Clause
#include "sources/gpu_elf.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <string.h>
#include <unistd.h>

#define PHDRS_MAX 256

struct seg {
	uint64_t vaddr, offset, filesz;
};

/* A uprobe takes a file offset: find the executable segment that maps addr. */
static uint64_t file_offset(const struct seg *segs, size_t n, uint64_t addr)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (addr >= segs[i].vaddr && addr - segs[i].vaddr < segs[i].filesz)
			return addr - segs[i].vaddr + segs[i].offset;
	return 0;
}

static int load_segments(Elf *e, struct seg *segs, size_t *n)
{
	size_t i, count;
	GElf_Phdr ph;

	if (elf_getphdrnum(e, &count))
		return -ENOEXEC;
	*n = 0;
	for (i = 0; i < count && *n < PHDRS_MAX; i++) {
		if (!gelf_getphdr(e, (int)i, &ph))
			return -ENOEXEC;
		if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X))
			continue;
		segs[*n].vaddr = ph.p_vaddr;
		segs[*n].offset = ph.p_offset;
		segs[*n].filesz = ph.p_filesz;
		(*n)++;
	}
	return 0;
}

static Elf_Scn *find_table(Elf *e, GElf_Shdr *sh, Elf64_Word type)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(e, scn)) != NULL) {
		if (!gelf_getshdr(scn, sh))
			return NULL;
		if (sh->sh_type == type)
			return scn;
	}
	return NULL;
}

/* One symbol table: -ENOENT when the file has none. */
static int walk_table(Elf *e, const struct seg *segs, size_t n_segs, Elf64_Word table,
		      rt_elf_sym_fn fn, void *ctx)
{
	size_t i, count;
	Elf_Data *data;
	GElf_Shdr sh;
	Elf_Scn *scn;
	int err;

	scn = find_table(e, &sh, table);
	if (!scn)
		return -ENOENT;
	if (!sh.sh_entsize)
		return -ENOEXEC;
	data = elf_getdata(scn, NULL);
	if (!data)
		return -ENOEXEC;
	count = data->d_size / sh.sh_entsize;
	if (count > RT_ELF_SYMS_MAX)
		return -E2BIG;
	for (i = 1; i < count; i++) {
		struct rt_elf_sym s;
		GElf_Sym sym;
		int type, bind, vis;

		if (!gelf_getsym(data, (int)i, &sym))
			return -ENOEXEC;
		type = GELF_ST_TYPE(sym.st_info);
		bind = GELF_ST_BIND(sym.st_info);
		vis = GELF_ST_VISIBILITY(sym.st_other);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF ||
		    (bind != STB_GLOBAL && bind != STB_WEAK) ||
		    (vis != STV_DEFAULT && vis != STV_PROTECTED))
			continue;
		/* elf_strptr checks the offset against the string table's size */
		s.name = elf_strptr(e, sh.sh_link, sym.st_name);
		if (!s.name || !s.name[0])
			continue;
		s.addr = sym.st_value;
		s.offset = file_offset(segs, n_segs, sym.st_value);
		s.weak = bind == STB_WEAK;
		s.symtab = table == SHT_SYMTAB;
		err = fn(&s, ctx);
		if (err)
			return err;
	}
	return 0;
}

static int walk(Elf *e, unsigned tables, rt_elf_sym_fn fn, void *ctx)
{
	struct seg segs[PHDRS_MAX];
	size_t n_segs;
	int err, found = 0;

	if (elf_kind(e) != ELF_K_ELF || gelf_getclass(e) != ELFCLASS64)
		return -ENOEXEC;
	err = load_segments(e, segs, &n_segs);
	if (err)
		return err;
	if (tables & RT_ELF_DYNSYM) {
		err = walk_table(e, segs, n_segs, SHT_DYNSYM, fn, ctx);
		if (err && err != -ENOENT)
			return err;
		found += !err;
	}
	if (tables & RT_ELF_SYMTAB) {
		err = walk_table(e, segs, n_segs, SHT_SYMTAB, fn, ctx);
		if (err && err != -ENOENT)
			return err;
		found += !err;
	}
	return found ? 0 : -ENODATA;
}

static int read_syms(const char *path, unsigned tables, rt_elf_sym_fn fn, void *ctx)
{
	Elf *e;
	int fd, err;

	if (!path || !fn)
		return -EINVAL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e) {
		close(fd);
		return -ENOEXEC;
	}
	err = walk(e, tables, fn, ctx);
	elf_end(e);
	close(fd);
	return err;
}

int rt_elf_dynsyms(const char *path, rt_elf_sym_fn fn, void *ctx)
{
	int err = read_syms(path, RT_ELF_DYNSYM, fn, ctx);

	/* the GPU loader needs .dynsym: a file without it is no library of its kind */
	return err == -ENODATA ? -ENOEXEC : err;
}

int rt_elf_funcs(const char *path, unsigned tables, rt_elf_sym_fn fn, void *ctx)
{
	if (!tables || (tables & ~(RT_ELF_DYNSYM | RT_ELF_SYMTAB)))
		return -EINVAL;
	return read_syms(path, tables, fn, ctx);
}
