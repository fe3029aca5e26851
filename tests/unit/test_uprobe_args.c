// SPDX-License-Identifier: BSD-2-Clause
/*
 * The uprobe argument table (include/reqtrace/uprobe_args.h) for each ABI,
 * wherever the tests run: bpf/gpu.bpf.c reads every CUDA and NCCL argument
 * through it, and no arm64 machine runs the BPF programs here, so this is
 * where a wrong arm64 slot would show.
 *
 *   - x86-64 System V: rdi, rsi, rdx, rcx, r8, r9, then [sp + 8 + 8 * (n - 7)];
 *   - AAPCS64: x0-x7, then [sp + 8 * (n - 9)];
 *   - the register offsets are those of the host's own pt_regs when the
 *     host has that ABI (<asm/ptrace.h>);
 *   - real functions: cuLaunchKernel's stream (its 9th argument) is on the
 *     stack in both ABIs, ncclAllReduce's (its 7th) on the stack for
 *     x86-64 and in x6 for arm64; every argument the probe table names has
 *     a place in both.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <linux/types.h>
#include <asm/ptrace.h>

#include <reqtrace/uprobe_args.h>
#include "probes/gpu_probes.h"

static struct rt_abi_arg loc(enum rt_abi abi, __u32 n)
{
	struct rt_abi_arg l = { 0 };

	assert_int_equal(rt_abi_arg_loc(abi, n, &l), 0);
	return l;
}

static void expect_reg(enum rt_abi abi, __u32 n, __u32 off)
{
	struct rt_abi_arg l = loc(abi, n);

	assert_int_equal(l.in_reg, 1);
	assert_int_equal(l.off, off);
}

static void expect_stack(enum rt_abi abi, __u32 n, __u32 off)
{
	struct rt_abi_arg l = loc(abi, n);

	assert_int_equal(l.in_reg, 0);
	assert_int_equal(l.off, off);
}

static void test_x86_64(void **state)
{
	(void)state;
	/* struct pt_regs: r15 r14 r13 r12 bp bx r11 r10 r9 r8 ax cx dx si di orig_ax ip cs flags sp */
	expect_reg(RT_ABI_X86_64, 1, 14 * 8); /* di */
	expect_reg(RT_ABI_X86_64, 2, 13 * 8); /* si */
	expect_reg(RT_ABI_X86_64, 3, 12 * 8); /* dx */
	expect_reg(RT_ABI_X86_64, 4, 11 * 8); /* cx */
	expect_reg(RT_ABI_X86_64, 5, 9 * 8); /* r8 */
	expect_reg(RT_ABI_X86_64, 6, 8 * 8); /* r9 */
	assert_int_equal(RT_X86_64_SP_OFF, 19 * 8);
	/* [sp] is the return address */
	for (__u32 n = 7; n <= RT_ABI_ARG_MAX; n++)
		expect_stack(RT_ABI_X86_64, n, 8 + 8 * (n - 7));
#ifdef __x86_64__
	/* the host's own (uapi) layout, whose names carry an r */
	assert_int_equal(RT_X86_64_ARG1_OFF, offsetof(struct pt_regs, rdi));
	assert_int_equal(RT_X86_64_ARG2_OFF, offsetof(struct pt_regs, rsi));
	assert_int_equal(RT_X86_64_ARG3_OFF, offsetof(struct pt_regs, rdx));
	assert_int_equal(RT_X86_64_ARG4_OFF, offsetof(struct pt_regs, rcx));
	assert_int_equal(RT_X86_64_ARG5_OFF, offsetof(struct pt_regs, r8));
	assert_int_equal(RT_X86_64_ARG6_OFF, offsetof(struct pt_regs, r9));
	assert_int_equal(RT_X86_64_SP_OFF, offsetof(struct pt_regs, rsp));
#endif
}

static void test_aapcs64(void **state)
{
	(void)state;
	/* struct user_pt_regs: regs[31], sp, pc, pstate */
	for (__u32 n = 1; n <= 8; n++)
		expect_reg(RT_ABI_AAPCS64, n, 8 * (n - 1));
	assert_int_equal(RT_AAPCS64_ARG8_OFF, 56);
	assert_int_equal(RT_AAPCS64_SP_OFF, 31 * 8);
	/* the return address is in x30: the 9th argument is at [sp] */
	for (__u32 n = 9; n <= RT_ABI_ARG_MAX; n++)
		expect_stack(RT_ABI_AAPCS64, n, 8 * (n - 9));
#ifdef __aarch64__
	assert_int_equal(RT_AAPCS64_ARG1_OFF, offsetof(struct user_pt_regs, regs[0]));
	assert_int_equal(RT_AAPCS64_ARG8_OFF, offsetof(struct user_pt_regs, regs[7]));
	assert_int_equal(RT_AAPCS64_SP_OFF, offsetof(struct user_pt_regs, sp));
#endif
}

static void test_out_of_range(void **state)
{
	struct rt_abi_arg l;

	(void)state;
	assert_int_equal(rt_abi_arg_loc(RT_ABI_X86_64, 0, &l), -1);
	assert_int_equal(rt_abi_arg_loc(RT_ABI_X86_64, RT_ABI_ARG_MAX + 1, &l), -1);
	assert_int_equal(rt_abi_arg_loc(RT_ABI_AAPCS64, 0, &l), -1);
	assert_int_equal(rt_abi_arg_loc(RT_ABI_AAPCS64, RT_ABI_ARG_MAX + 1, &l), -1);
	assert_int_equal(rt_abi_arg_loc((enum rt_abi)0, 1, &l), -1);
}

static const struct rt_gpu_probe *probe(const char *name)
{
	int api = rt_gpu_probe_find(name);

	assert_true(api >= 0);
	return rt_gpu_probe_get((uint32_t)api);
}

/*
 * cuda.h: cuLaunchKernel(f, gridDimX, gridDimY, gridDimZ, blockDimX,
 * blockDimY, blockDimZ, sharedMemBytes, hStream, kernelParams, extra):
 * hStream is the 9th of 11 (index 8 counting from 0).
 */
static void test_cu_launch_kernel(void **state)
{
	const struct rt_gpu_probe *p = probe("cuLaunchKernel");

	(void)state;
	assert_int_equal(p->stream_how, RT_GPU_STREAM_ARG);
	assert_int_equal(p->stream_arg, 9);
	/* x86-64: bz at [sp+8], sharedMemBytes at [sp+16], hStream at [sp+24] */
	expect_stack(RT_ABI_X86_64, p->stream_arg, 24);
	/* arm64: f..sharedMemBytes fill x0-x7, hStream is the first stack slot */
	expect_stack(RT_ABI_AAPCS64, p->stream_arg, 0);
	/* and the last argument, extra, still has a place */
	expect_stack(RT_ABI_X86_64, 11, 40);
	expect_stack(RT_ABI_AAPCS64, 11, 16);
}

/* ncclAllReduce(sendbuff, recvbuff, count, datatype, op, comm, stream): the ABIs disagree */
static void test_nccl_all_reduce(void **state)
{
	const struct rt_gpu_probe *p = probe("ncclAllReduce");

	(void)state;
	assert_int_equal(p->stream_arg, 7);
	assert_int_equal(p->comm_arg, 6);
	expect_stack(RT_ABI_X86_64, p->stream_arg, 8);
	expect_reg(RT_ABI_AAPCS64, p->stream_arg, 48); /* x6 */
	expect_reg(RT_ABI_X86_64, p->comm_arg, RT_X86_64_ARG6_OFF); /* r9 */
	expect_reg(RT_ABI_AAPCS64, p->comm_arg, 40); /* x5 */
}

/* Every argument the probe table names is one the BPF side can read, in both ABIs. */
static void test_table_args_have_a_place(void **state)
{
	struct rt_abi_arg l;

	(void)state;
	for (uint32_t i = 0; i < rt_gpu_n_probes; i++) {
		const struct rt_gpu_probe *p = &rt_gpu_probes[i];
		const uint8_t args[] = { p->stream_arg, p->bytes_arg, p->bytes_arg2, p->count_arg,
					 p->dtype_arg,	p->comm_arg,  p->peer_arg };

		for (size_t k = 0; k < sizeof(args); k++) {
			if (!args[k])
				continue;
			if (rt_abi_arg_loc(RT_ABI_X86_64, args[k], &l) ||
			    rt_abi_arg_loc(RT_ABI_AAPCS64, args[k], &l))
				fail_msg("%s: argument %u has no place (RT_ABI_ARG_MAX %d)",
					 p->name, args[k], RT_ABI_ARG_MAX);
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_x86_64),
		cmocka_unit_test(test_aapcs64),
		cmocka_unit_test(test_out_of_range),
		cmocka_unit_test(test_cu_launch_kernel),
		cmocka_unit_test(test_nccl_all_reduce),
		cmocka_unit_test(test_table_args_have_a_place),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
