# SPDX-License-Identifier: BSD-2-Clause
# test_pin_sweep: the directories of pinned links (src/sources/pin_sweep.c)
# on a plain directory: no bpffs, no root.
rt_test_private(test_pin_sweep sources)
