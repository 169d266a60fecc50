/* SPDX-License-Identifier: Apache-2.0 */
/*
 * clock.h - time sources. Decisions (segment core) take "now" as a value so
 * tests and the simulator control time; only the I/O shells read clocks.
 */
#ifndef ESC_CLOCK_H
#define ESC_CLOCK_H

#include <stdint.h>

/* Wall clock, unix milliseconds (hold expiry is wall time: it is stored). */
int64_t esc_wall_ms(void);
/* Monotonic clock, microseconds (latencies, deadlines). */
int64_t esc_mono_us(void);

#endif
