/* SPDX-License-Identifier: BSD-2-Clause */
/* Spans as a readable table: the default output of `replay` and `spans`. */
#ifndef RT_SPAN_TABLE_H
#define RT_SPAN_TABLE_H

#include <stdio.h>

#include <reqtrace/span.h>

void rt_span_table_header(FILE *f);
void rt_span_table_row(FILE *f, const struct rt_span *s);

#endif /* RT_SPAN_TABLE_H */
