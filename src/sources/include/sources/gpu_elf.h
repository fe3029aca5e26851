/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The exported functions of a shared library, read from its .dynsym with
 * libelf: what a uprobe needs (the file offset of each function) and what
 * tells aliases apart (their address). Used by the GPU uprobe loader and by
 * the tests that compare the probe table with the CUDA toolkit's exports.
 * The file is untrusted (it may come from a container): sizes and offsets
 * are checked, and at most RT_ELF_SYMS_MAX symbols are read.
 */
#ifndef RT_SOURCES_GPU_ELF_H
#define RT_SOURCES_GPU_ELF_H

#include <stdbool.h>
#include <stdint.h>

#define RT_ELF_SYMS_MAX (1u << 20)

struct rt_elf_sym {
	const char *name; /* valid during the callback only */
	uint64_t addr; /* st_value: the virtual address aliases share */
	uint64_t offset; /* file offset of the code (what a uprobe is attached at); 0 if unmapped */
	bool weak; /* STB_WEAK (nm's W), else STB_GLOBAL (T) */
	bool symtab; /* from .symtab (rt_elf_funcs), else .dynsym */
};

/* Return non-zero to stop the walk (that value is returned). */
typedef int (*rt_elf_sym_fn)(const struct rt_elf_sym *sym, void *ctx);

/*
 * Calls fn for every defined, exported function symbol (STT_FUNC or
 * STT_GNU_IFUNC, global or weak, default or protected visibility) in the
 * .dynsym of the ELF file at path, in table order. Returns 0, fn's non-zero
 * value, -ENOENT (no file), -ENOEXEC (not a 64-bit ELF with a .dynsym),
 * -E2BIG (more than RT_ELF_SYMS_MAX symbols) or another -errno.
 */
int rt_elf_dynsyms(const char *path, rt_elf_sym_fn fn, void *ctx);

#define RT_ELF_DYNSYM 1u
#define RT_ELF_SYMTAB 2u

/*
 * Like rt_elf_dynsyms() over the tables `tables` names, .dynsym first, then
 * .symtab (where a static link or an executable keeps its functions; a
 * name in both is reported twice, sym->symtab telling which). A missing
 * table is skipped; -ENODATA when the file has none of them (a stripped
 * static program), -ENOEXEC when it is not a 64-bit ELF file.
 */
int rt_elf_funcs(const char *path, unsigned tables, rt_elf_sym_fn fn, void *ctx);

#endif /* RT_SOURCES_GPU_ELF_H */
