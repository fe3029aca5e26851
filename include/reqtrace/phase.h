/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/*
 * Request phases, shared by the wire format (event.h, compiled for BPF too),
 * the marker API (marker.h) and the span record. No includes on purpose:
 * this header must compile under `clang -target bpf` and in any C program.
 *
 * The numbering is ABI: marker events carry it and recordings store it.
 * Append only.
 */
#ifndef REQTRACE_PHASE_H
#define REQTRACE_PHASE_H

enum rt_phase {
	RT_PHASE_RECEIVE = 0,
	RT_PHASE_QUEUE = 1,
	RT_PHASE_TOKENIZE = 2,
	RT_PHASE_PREFILL = 3,
	RT_PHASE_PRE_FIRST_TOKEN = 4,
	RT_PHASE_DECODE = 5,
	RT_PHASE_COMM_WAIT = 6,
	RT_PHASE_POSTPROCESS = 7,
	RT_PHASE_OTHER = 8,
	/*
	 * The request's bytes waited in the kernel (accept queue, receive
	 * buffer) before the server's first read. Seen by probes only: a marker
	 * cannot name it (the server has not read the request yet), and the
	 * correlator refuses marker records that do.
	 */
	RT_PHASE_BACKLOG = 9,
	RT_PHASE__COUNT = 10,
};

#endif /* REQTRACE_PHASE_H */
