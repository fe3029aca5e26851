/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Where argument n of a function is at its first instruction, the moment a
 * uprobe fires, for each ABI reqtrace's BPF programs are built for: a
 * register of the probe's struct pt_regs, or an 8-byte stack slot in user
 * memory at the saved stack pointer plus an offset. A register has a field
 * name (RT_<ABI>_ARGn_REG), by which bpf/gpu.bpf.c's arg() reads it, as a
 * CO-RE access like libbpf's PT_REGS_PARM*(), and a byte offset
 * (RT_<ABI>_ARGn_OFF); static asserts in gpu.bpf.c tie the two together in
 * every build of each arch, and tests/unit/test_uprobe_args.c checks the
 * offsets and the stack slots of both ABIs wherever the tests run.
 *
 * Arguments count from 1, as in struct rt_gpu_spec (0 there means "none").
 * Only integer and pointer arguments of at most 8 bytes are described: each
 * takes one register or one 8-byte stack slot in both ABIs, which is all
 * the probed CUDA and NCCL functions pass before the last one we read.
 *
 * No includes: include after <linux/types.h> or vmlinux.h.
 */
#ifndef RT_UPROBE_ARGS_H
#define RT_UPROBE_ARGS_H

/* The most arguments any probed function has (cuLaunchKernel: 11), rounded up. */
#define RT_ABI_ARG_MAX 12

/*
 * x86-64 System V: rdi, rsi, rdx, rcx, r8, r9, then the stack. At the first
 * instruction `call` has pushed the return address, so the 7th argument is
 * at [rsp + 8]. Offsets are those of the x86-64 struct pt_regs (the uapi
 * one in <asm/ptrace.h> has the same layout with r-prefixed names).
 */
#define RT_X86_64_REG_ARGS 6
#define RT_X86_64_ARG1_REG di
#define RT_X86_64_ARG1_OFF 112 /* di */
#define RT_X86_64_ARG2_REG si
#define RT_X86_64_ARG2_OFF 104 /* si */
#define RT_X86_64_ARG3_REG dx
#define RT_X86_64_ARG3_OFF 96 /* dx */
#define RT_X86_64_ARG4_REG cx
#define RT_X86_64_ARG4_OFF 88 /* cx */
#define RT_X86_64_ARG5_REG r8
#define RT_X86_64_ARG5_OFF 72 /* r8 */
#define RT_X86_64_ARG6_REG r9
#define RT_X86_64_ARG6_OFF 64 /* r9 */
#define RT_X86_64_SP_REG sp
#define RT_X86_64_SP_OFF 152 /* sp */
#define RT_X86_64_STACK_SKIP 8 /* the return address */
/* argument n > RT_X86_64_REG_ARGS: [sp + 8 + 8 * (n - 7)] */
#define RT_X86_64_STACK_OFF(n) (RT_X86_64_STACK_SKIP + 8 * ((n)-1 - RT_X86_64_REG_ARGS))

/*
 * AAPCS64 (arm64 Linux): x0-x7, then the stack in 8-byte slots. `bl` keeps
 * the return address in x30, not on the stack, so the 9th argument is at
 * [sp]. Offsets are those of struct user_pt_regs { regs[31], sp, pc, pstate },
 * which begins the arm64 struct pt_regs.
 */
#define RT_AAPCS64_REG_ARGS 8
#define RT_AAPCS64_ARG1_REG regs[0]
#define RT_AAPCS64_ARG1_OFF 0 /* regs[0] */
#define RT_AAPCS64_ARG2_REG regs[1]
#define RT_AAPCS64_ARG2_OFF 8
#define RT_AAPCS64_ARG3_REG regs[2]
#define RT_AAPCS64_ARG3_OFF 16
#define RT_AAPCS64_ARG4_REG regs[3]
#define RT_AAPCS64_ARG4_OFF 24
#define RT_AAPCS64_ARG5_REG regs[4]
#define RT_AAPCS64_ARG5_OFF 32
#define RT_AAPCS64_ARG6_REG regs[5]
#define RT_AAPCS64_ARG6_OFF 40
#define RT_AAPCS64_ARG7_REG regs[6]
#define RT_AAPCS64_ARG7_OFF 48
#define RT_AAPCS64_ARG8_REG regs[7]
#define RT_AAPCS64_ARG8_OFF 56 /* regs[7] */
#define RT_AAPCS64_SP_REG sp
#define RT_AAPCS64_SP_OFF 248 /* sp */
#define RT_AAPCS64_STACK_SKIP 0
/* argument n > RT_AAPCS64_REG_ARGS: [sp + 8 * (n - 9)] */
#define RT_AAPCS64_STACK_OFF(n) (RT_AAPCS64_STACK_SKIP + 8 * ((n)-1 - RT_AAPCS64_REG_ARGS))

enum rt_abi {
	RT_ABI_X86_64 = 1,
	RT_ABI_AAPCS64 = 2,
};

/* Where one argument is. */
struct rt_abi_arg {
	__u32 in_reg; /* 1: a register at pt_regs + off; 0: user memory at sp + off */
	__u32 off;
};

/* pt_regs offset of x86-64 register argument n (1 .. 6) */
static inline __u32 rt_x86_64_reg_off(__u32 n)
{
	switch (n) {
	case 1:
		return RT_X86_64_ARG1_OFF;
	case 2:
		return RT_X86_64_ARG2_OFF;
	case 3:
		return RT_X86_64_ARG3_OFF;
	case 4:
		return RT_X86_64_ARG4_OFF;
	case 5:
		return RT_X86_64_ARG5_OFF;
	default:
		return RT_X86_64_ARG6_OFF;
	}
}

/*
 * Argument n (1 .. RT_ABI_ARG_MAX) under `abi`: fills *loc and returns 0, or
 * returns -1 for an unknown ABI or an n out of range. The table in one
 * function, for the tests and for user space; bpf/gpu.bpf.c uses the macros
 * above directly, because the verifier accepts only constant offsets into
 * the context, so each register is loaded by its own RT_<ABI>_ARGn_OFF.
 */
static inline int rt_abi_arg_loc(enum rt_abi abi, __u32 n, struct rt_abi_arg *loc)
{
	if (n < 1 || n > RT_ABI_ARG_MAX)
		return -1;
	switch (abi) {
	case RT_ABI_X86_64:
		loc->in_reg = n <= RT_X86_64_REG_ARGS;
		loc->off = loc->in_reg ? rt_x86_64_reg_off(n) : RT_X86_64_STACK_OFF(n);
		return 0;
	case RT_ABI_AAPCS64:
		loc->in_reg = n <= RT_AAPCS64_REG_ARGS;
		/* x(n-1) is regs[n - 1] */
		loc->off =
			loc->in_reg ? RT_AAPCS64_ARG1_OFF + 8 * (n - 1) : RT_AAPCS64_STACK_OFF(n);
		return 0;
	default:
		return -1;
	}
}

/*
 * A structure larger than 16 bytes passed by value as argument n, every
 * argument before it an integer or pointer (llama_decode's llama_batch:
 * n = 2). x86-64 SysV gives it class MEMORY: it is copied onto the stack,
 * takes no register, and is the first stack argument, at [sp + 8] when
 * nothing else went on the stack. AAPCS64 copies it to caller memory and
 * passes that copy's address in the register of argument n. Fills *loc:
 * in_reg 0: the structure itself is at sp + off; in_reg 1: the register at
 * pt_regs + off holds its address. -1 for an unknown ABI or an n that is
 * not a register argument.
 */
static inline int rt_abi_big_arg_loc(enum rt_abi abi, __u32 n, struct rt_abi_arg *loc)
{
	switch (abi) {
	case RT_ABI_X86_64:
		if (n < 1 || n > RT_X86_64_REG_ARGS)
			return -1;
		loc->in_reg = 0;
		loc->off = RT_X86_64_STACK_SKIP;
		return 0;
	case RT_ABI_AAPCS64:
		if (n < 1 || n > RT_AAPCS64_REG_ARGS)
			return -1;
		loc->in_reg = 1;
		loc->off = RT_AAPCS64_ARG1_OFF + 8 * (n - 1);
		return 0;
	default:
		return -1;
	}
}

#endif /* RT_UPROBE_ARGS_H */
