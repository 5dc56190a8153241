/* cost/calibrate_regions.h - what one OpenMP parallel region costs on this
 * machine, measured the way zbrun's CPU backend runs its regions (the
 * calibration's omp_region_s, cost/calibrate.h).
 */
#ifndef ZB_CALIBRATE_REGIONS_H
#define ZB_CALIBRATE_REGIONS_H

#include "common/zb_error.h"

/* Median cost of one OpenMP parallel region on `threads` threads (> 1)
 * beyond its share of the work, from reps rounds,
 * in seconds into *out; threads < 2: 0. */
zb_status zb_calib_omp_region_s(int threads, int reps, double *out,
                                zb_err *err);

/* zbrun's OpenMP wait policy (passive unless OMP_WAIT_POLICY is set):
 * libgomp reads it only when loaded, so this sets it and re-executes the
 * program with argv (the whole command line); returns only when nothing
 * was to be done or the re-execution failed. */
void zb_calib_openmp_as_zbrun(char **argv);

#endif
