/* zb_hd.h - ZB_HD marks per-element arithmetic shared by the CPU kernels
 * (kernels/NAME.c, C11) and their CUDA twins (kernels/cuda/NAME.cu): under nvcc
 * the functions are __host__ __device__, in C plain static inline. Put in
 * the *_math.h headers only what one element (or one row statistic) needs,
 * so that the CPU unit tests run exactly the arithmetic the GPU runs and
 * the .cu files hold only indexing and launches.
 */
#ifndef ZB_HD_H
#define ZB_HD_H

#ifdef __CUDACC__
#define ZB_HD static inline __host__ __device__
#else
#define ZB_HD static inline
#endif

#endif
