// SPDX-License-Identifier: BSD-2-Clause
#include "markers.h"

/* Set once by main before any thread starts; read-only afterwards. */
bool tb_markers_on;
