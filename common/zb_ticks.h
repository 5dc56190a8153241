/* zb_ticks.h - round tick values for the pictures' axes (zbrun's timeline,
 * zbreport's comparison): 0, step, 2 step, ... with step 1, 2 or 5 x 10^k,
 * so that labels read 0, 20, 40 ms rather than 16.454 ms. */
#ifndef ZB_TICKS_H
#define ZB_TICKS_H

#include <stddef.h>

/* The smallest round step whose count n of intervals covering [0, vmax]
 * is at most max_n (max_n >= 1); the axis then ends at n * step >= vmax.
 * vmax <= 0 (or not finite) gives step 1, n 1. */
double zb_tick_step(double vmax, int max_n, int *n);

/* v as text with as many decimals as step needs ("0", "2.5", "0.02"). */
void zb_tick_label(double v, double step, char *buf, size_t cap);

#endif
