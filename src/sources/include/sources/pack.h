/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Engine packs (docs/packs.md): declarative files (configs/packs, one .conf each)
 * that say which functions of an engine's library mark which phase (enum
 * rt_pack_role) and which of their arguments the records carry; and the
 * matcher that picks, for one ELF file a traced process maps, the pack whose
 * symbols it carries and the file offsets to put uprobes at. No BPF here:
 * bpf_source.h's rt_bpf_source__attach_packs() attaches what this picks.
 *
 * Pack files are the operator's (or a container's) input: everything is
 * validated, and errors name FILE:LINE.
 */
#ifndef RT_SOURCES_PACK_H
#define RT_SOURCES_PACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define RT_PACKS_MAX 32 /* pack files in a directory */
#define RT_PACK_NAME_LEN 48 /* name, version, engine */
#define RT_PACK_SYM_LEN 128 /* a symbol name or a file glob */
#define RT_PACK_MATCH_MAX 8 /* files=, symbols=, without= entries each */
#define RT_PACK_PROBES_MAX 24 /* probe lines in a pack */
#define RT_PACK_ARGS_MAX 4 /* == the args[] of struct rt_ev_pack_call */
#define RT_PACK_FILE_MAX 65536 /* bytes in a pack file */

enum rt_pack_reader {
	RT_PACK_READER_NONE = 0,
	RT_PACK_READER_LLAMA_BATCH = 1, /* argument 2 is a struct llama_batch by value */
};

/*
 * What an argument or return value is: only its low bits are defined in a
 * register (an int32 in rax/x0 may carry garbage above bit 31, a bool above
 * bit 7), so the probe narrows and sign-extends before recording.
 */
enum rt_pack_type {
	RT_PACK_I32 = 0, /* the default */
	RT_PACK_I64 = 1, /* also pointers and size_t */
	RT_PACK_BOOL = 2, /* recorded as 0 or 1 */
	RT_PACK_VOID = 3, /* returns nothing: retval 0 */
};

struct rt_pack_probe {
	char sym[RT_PACK_SYM_LEN];
	char unless[RT_PACK_SYM_LEN]; /* "": none; else skipped when the file has this symbol */
	uint16_t role; /* enum rt_pack_role */
	uint8_t n_args;
	uint8_t args[RT_PACK_ARGS_MAX]; /* 1-based argument numbers, into PACK_CALL args[] */
	uint8_t arg_type[RT_PACK_ARGS_MAX]; /* enum rt_pack_type */
	uint8_t ret_type; /* enum rt_pack_type */
	uint8_t reader; /* enum rt_pack_reader */
	bool ret; /* a uretprobe too: the return record with the return value */
};

struct rt_pack {
	char name[RT_PACK_NAME_LEN];
	char version[RT_PACK_NAME_LEN];
	char engine[RT_PACK_NAME_LEN]; /* packs of one engine: at most one attaches per file */
	char path[512]; /* the file it came from */
	/* file basename globs (fnmatch): a file so named is the engine's, symbols or not */
	char files[RT_PACK_MATCH_MAX][RT_PACK_SYM_LEN];
	/* all present: the file carries this version of the engine */
	char symbols[RT_PACK_MATCH_MAX][RT_PACK_SYM_LEN];
	/* none present: tells this version from a newer one that also has `symbols` */
	char without[RT_PACK_MATCH_MAX][RT_PACK_SYM_LEN];
	uint32_t n_files, n_symbols, n_without, n_probes;
	struct rt_pack_probe probes[RT_PACK_PROBES_MAX];
};

struct rt_packs {
	uint32_t n;
	struct rt_pack packs[RT_PACKS_MAX]; /* sorted by file name; the index is the wire `pack` */
};

/* enum rt_pack_role by its name in pack files ("decode"), 0 if unknown; and back. */
int rt_pack_role_of(const char *name);
const char *rt_pack_role_name(int role);

/*
 * Parses one pack file's text (`name` is the file name errors cite) into
 * *p. 0, or -EINVAL with "NAME:LINE: what" in err.
 */
int rt_pack_parse(const char *name, const char *text, struct rt_pack *p, char *err, size_t err_len);

/*
 * Loads every *.conf of `dir`, in file-name order, into *out (allocated;
 * free with free()). 0 (an empty directory gives no packs), or -errno with
 * the first bad file's error in err: one bad pack refuses them all, as a
 * bad configuration file does.
 */
int rt_packs_load_dir(const char *dir, struct rt_packs **out, char *err, size_t err_len);

/* ---- matching ------------------------------------------------------------ */

/* One uprobe to attach: a pack probe at a file offset. */
struct rt_pack_site {
	uint64_t offset;
	uint16_t probe; /* index in the pack's probes[] */
};

struct rt_pack_pick {
	int pack; /* index in rt_packs, -1: none attaches */
	int named; /* when pack < 0: a pack whose files= names this file, else -1 */
	bool stripped; /* neither .dynsym nor .symtab has a defined function */
	char missing[RT_PACK_SYM_LEN]; /* named: the first of its symbols= not found */
	uint32_t n_sites;
	struct rt_pack_site sites[RT_PACK_PROBES_MAX];
	uint32_t n_syms; /* function symbols read (.dynsym, then .symtab) */
};

/*
 * Reads the function symbols of the ELF file at `path` (.dynsym, then
 * .symtab: a static link or an executable carries them only there) and
 * picks the pack to attach: among the packs whose symbols= are all present
 * and whose without= are all absent, the one with the most symbols= (the
 * most specific version), the first in file order on a tie. Sites: that
 * pack's probes whose symbol is present (and whose unless= is absent), one
 * per address. When none matches by symbols but one matches by file name,
 * pick->named says which, and why (stripped, or a symbol missing).
 * 0 (pick->pack may be -1), or -errno (not an ELF file: -ENOEXEC).
 */
int rt_pack_match_file(const struct rt_packs *ps, const char *path, struct rt_pack_pick *pick);

/*
 * Calls fn for each distinct file that process `pid` maps executable
 * (/proc/PID/maps: the program and its libraries), by a path through
 * /proc/PID/root so that a container's files resolve. Stops at fn's
 * non-zero value and returns it; else 0, or -errno when maps cannot be read.
 */
int rt_pack_mapped_files(pid_t pid, int (*fn)(const char *path, void *ctx), void *ctx);

/* ---- what `reqtrace status` says (rt_bpf_source__pack_stats) ------------ */

#define RT_PACK_FAILURES_MAX 4 /* kept per pack; later ones overwrite the last */

struct rt_pack_failure {
	char file[256];
	char reason[200];
};

struct rt_pack_stat {
	char name[RT_PACK_NAME_LEN];
	char version[RT_PACK_NAME_LEN];
	uint32_t matched; /* files this pack matched (by symbols, or by name only) */
	uint32_t attached; /* files with at least one of its uprobes */
	uint32_t failed; /* files matched that it could not attach to (or only in part) */
	uint64_t probes; /* uprobes and uretprobes attached */
	uint32_t n_failures;
	struct rt_pack_failure failures[RT_PACK_FAILURES_MAX];
};

struct rt_pack_stats {
	uint32_t n; /* packs loaded */
	uint64_t files_examined; /* distinct mapped files read */
	uint64_t probes;
	uint64_t
		bad_cookie; /* hits whose cookie named no spec (cannot happen unless maps disagree) */
	uint64_t batch_unreadable; /* llama_decode batches the probe could not read */
	struct rt_pack_stat packs[RT_PACKS_MAX];
};

#endif /* RT_SOURCES_PACK_H */
